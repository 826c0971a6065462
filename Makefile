# make demo: install into .venv and run the valuation-signal job on Spark local mode
# make test: install into .venv and run the test suite
# make bench: also install the comparison systems (.[bench]) and run every benchmark (bench/README.md)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

.PHONY: demo test bench
demo: $(STAMP)
	$(PY) examples/valuation_signals.py

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) -m pip install -q -e ".[bench]"
	$(PY) bench/run.py
