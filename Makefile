# Two entry points, each doing all the set-up on a fresh machine:
#   make demo   the main job: an lm_eval judge evaluation on the embedded default
#   make test   the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo demo-core test install bench bench-capture bench-scale reproduce lint dist

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# CPU torch first: `pip install torch==2.13.0` takes the machine's local CPU
# wheel; letting a dependency pull `torch` would download the CUDA build.
$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[torch,test,lm-eval]"
	touch $@

install: $(VENV)/.installed

# lm-eval's normal results plus judgecp's metrics, offline on CPU; the judge's
# logprobs are a synthetic recording replayed by judgecp-replay (docs/lm_eval.md).
demo: install
	$(BIN)/lm_eval --model judgecp-replay --tasks judgecp_demo --output_path out/demo --log_samples

# The core alone: conformal intervals and diagnostics on the embedded synthetic judge.
demo-core: install
	$(BIN)/judgecp evaluate --example --json example-report.json

test: install
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/judgecp bench protocol
	$(BIN)/judgecp bench scope

bench-scale: install
	$(BIN)/judgecp bench scale

# judgecp is not on the package index: `make dist` builds the wheel users install
# (`pip install "$(ls dist/judgecp-*.whl)[lm-eval]"`); tests/lm_eval/test_install.py installs one.
dist: install
	$(BIN)/pip wheel -q --no-deps --no-build-isolation -w dist .

bench-capture: install
	OMP_NUM_THREADS=1 $(BIN)/judgecp bench capture

reproduce: install
	$(BIN)/python scripts/reproduce_paper.py --write

# mypy cannot follow the package-dir mapping: it checks a judgecp -> plugin link.
lint: install
	$(BIN)/pip install -q -e ".[dev]"
	$(BIN)/ruff check plugin adapters tests scripts
	mkdir -p build/typecheck && ln -sfn ../../plugin build/typecheck/judgecp
	cd build/typecheck && $(abspath $(BIN))/mypy -p judgecp
