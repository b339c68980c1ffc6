# Two entry points for a fresh machine (see README):
#   make report  - set up the simulator (no GPU, no torch) and regenerate the report
#   make test    - set up everything the tests need (torch CPU wheel + triton for the kernel
#                  tests under TRITON_INTERPRET=1) and run them
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: report test lint clean

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
	$(PY) -m pytest

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) reports/out results
