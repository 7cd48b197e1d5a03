# Two entry points, each doing all the set-up on a fresh machine:
#   make demo   the main job: an lm_eval judge evaluation on the embedded default
#   make test   the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# lmms-eval is installed without its requirements (docs/lmms_eval.md): the version judgecp was tested with.
LMMS_EVAL_VERSION := 0.7.3

.PHONY: demo demo-core test test-full install bench bench-capture bench-scale reproduce lint dist report mutate

# Each step says what it does before pip's quiet minutes (-q: pip's own output is hundreds of lines).
$(BIN)/python:
	@echo "judgecp install 1/4: a virtual environment in $(VENV) ($(PYTHON) -m venv)"
	$(PYTHON) -m venv $(VENV)

# CPU torch first: `pip install torch==2.13.0` takes the machine's local CPU
# wheel; letting a dependency pull `torch` would download the CUDA build.
$(VENV)/.installed: $(BIN)/python pyproject.toml
	@echo "judgecp install 2/4: CPU torch 2.13.0, for R2CCP and the tiny test models (the largest download: a minute or more)"
	$(BIN)/pip install -q torch==2.13.0
	@echo "judgecp install 3/4: judgecp (editable) with lm-eval, transformers, datasets and pytest (a few minutes)"
	$(BIN)/pip install -q -e ".[torch,test,lm-eval,lmms-eval]"
	@echo "judgecp install 4/4: lmms-eval 0.7.3 without its requirements (docs/lmms_eval.md, Install)"
	$(BIN)/pip install -q --no-deps "lmms-eval==$(LMMS_EVAL_VERSION)"
	touch $@
	@echo "judgecp install: done; $(BIN)/judgecp --help, make demo, make test"

install: $(VENV)/.installed

# lm-eval's normal results plus judgecp's metrics, offline on CPU; the judge's
# logprobs are a synthetic recording replayed by judgecp-replay (docs/lm_eval.md).
demo: install
	$(BIN)/lm_eval --model judgecp-replay --tasks judgecp_demo --output_path out/demo --log_samples

# The core alone: conformal intervals and diagnostics on the embedded synthetic judge.
demo-core: install
	$(BIN)/judgecp evaluate --example --json example-report.json

# Figures, Markdown and HTML from the embedded synthetic examples of every kind (docs/reports.md):
# out/report/report.html (every kind) and out/report-mondrian/ (pooled against Mondrian calibration).
REPORT_METHODS := naive,lvd,ordinal_aps,lac,aps,ordinal_set
report: install
	@echo "judgecp report: installing matplotlib (extra report)"
	$(BIN)/pip install -q -e ".[report]"
	mkdir -p out/report out/report-mondrian
	$(BIN)/judgecp evaluate --example --methods $(REPORT_METHODS) --alphas 0.05,0.1,0.2 --json out/report/likert.json --quiet
	$(BIN)/judgecp evaluate --example --kind pairwise --json out/report/pairwise.json --quiet
	$(BIN)/judgecp evaluate --example --kind mcq --alphas 0.05,0.1,0.2,0.3 --json out/report/mcq.json --quiet
	$(BIN)/judgecp evaluate --example --kind parc --json out/report/parc.json --quiet
	$(BIN)/judgecp report out/report/likert.json out/report/pairwise.json out/report/mcq.json out/report/parc.json -o out/report
	$(BIN)/judgecp evaluate --example --methods naive,lac --mondrian group --alphas 0.05,0.2 --json out/report-mondrian/mondrian.json --quiet
	$(BIN)/judgecp report out/report/likert.json out/report-mondrian/mondrian.json --names pooled,Mondrian -o out/report-mondrian

# Two workers, a test file's tests on one worker (its tiny models and lm_eval runs are built once);
# hypothesis derandomized (tests/conftest.py: the same examples on every run of a commit).
test: install
	OMP_NUM_THREADS=1 JUDGECP_HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest -q -n 2 --dist loadfile

# The suite plus the documentation's full-size benchmark blocks (`doc-test: skip (bench)`: minutes each);
# docs/benchmarks.md has the last run's date and times.
test-full: install
	OMP_NUM_THREADS=1 JUDGECP_HYPOTHESIS_PROFILE=ci JUDGECP_DOC_BENCH=1 $(BIN)/python -m pytest -q -n 2 --dist loadfile

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

# Mutation testing of the numbers (docs/testing.md): mutmut over the conformal quantiles and scores, PPI++,
# the selective-risk bounds and the sequential tests, with each module's fast tests; 17 to 30 minutes on a
# 2-core machine. MODULES=conformal,ppi runs a part; the report is build/mutate/report.md.
# No MODULES: every module of scripts/mutate.py's SCOPE (a list here had lost ppi_design).
MODULES ?=
mutate: install
	@echo "judgecp mutate: installing mutmut (extra dev)"
	$(BIN)/pip install -q -e ".[dev]"
	OMP_NUM_THREADS=1 nice -n 10 $(BIN)/python scripts/mutate.py $(if $(MODULES),--modules $(MODULES))

# mypy and import-linter cannot follow the package-dir mapping: they read judgecp through links.
lint: install
	@echo "judgecp lint: installing ruff and mypy (extra dev)"
	$(BIN)/pip install -q -e ".[dev]"
	$(BIN)/ruff check plugin adapters tests scripts
	mkdir -p build/typecheck && ln -sfn ../../plugin build/typecheck/judgecp
	cd build/typecheck && $(abspath $(BIN))/mypy -p judgecp
	@echo "judgecp lint: the layers (import-linter, on build/layers: plugin/ with the adapters inside, as installed)"
	rm -rf build/layers && mkdir -p build/layers/judgecp
	for entry in plugin/*; do ln -s ../../../$$entry build/layers/judgecp/; done
	ln -s ../../../adapters build/layers/judgecp/adapters
	PYTHONPATH=build/layers $(BIN)/lint-imports --no-cache
