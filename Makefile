# Two entry points, each doing all the set-up on a fresh machine:
#   make demo   the main job on the embedded example
#   make test   the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test install bench reproduce lint

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# CPU torch first: `pip install torch==2.13.0` takes the machine's local CPU
# wheel; letting a dependency pull `torch` would download the CUDA build.
$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[torch,test]"
	touch $@

install: $(VENV)/.installed

demo: install
	$(BIN)/judgecp evaluate --example --json example-report.json

test: install
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/judgecp bench protocol

reproduce: install
	$(BIN)/python scripts/reproduce_paper.py --write

# mypy cannot follow the package-dir mapping: it checks a judgecp -> plugin link.
lint: install
	$(BIN)/pip install -q -e ".[dev]"
	$(BIN)/ruff check plugin adapters tests scripts
	mkdir -p build/typecheck && ln -sfn ../../plugin build/typecheck/judgecp
	cd build/typecheck && $(abspath $(BIN))/mypy -p judgecp
