# Two entry points for a fresh machine (see README):
#   make report  - set up the simulator (no GPU, no torch) and regenerate the report
#   make test    - set up everything the tests need (torch CPU wheel + triton for the kernel
#                  tests under TRITON_INTERPRET=1) and run them: every test not marked slow,
#                  or, when CI is set (CI=true, as .ci/run does), the whole suite
#   make test-all  - the whole suite wherever it runs
#   make test-fast - neither slow nor kernel tests (the inner loop)
# Markers (pyproject.toml): slow = over ~5 s (wheel builds, whole-model kernel runs, the
# off-by-default kernel options); kernels = every test in tests/kernels.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CI ?=
NOT_SLOW := $(if $(filter true 1 yes,$(CI)),,-m "not slow")

.PHONY: report test test-all test-fast lint clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.core: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.dev: pyproject.toml | $(PY)
	$(PY) -m pip install -q torch==2.13.0 triton==3.6.0
	$(PY) -m pip install -q -e '.[dev,gpu,ray]'
	touch $@ $(VENV)/.core

report: $(VENV)/.core
	$(VENV)/bin/parrotsim report --out reports/out

test: $(VENV)/.dev
	$(PY) -m pytest $(NOT_SLOW)

test-all: $(VENV)/.dev
	$(PY) -m pytest

test-fast: $(VENV)/.dev
	$(PY) -m pytest -m "not slow and not kernels"

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) reports/out results
