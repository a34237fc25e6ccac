# delayq: the two commands are `make run` (demo on embedded SQLite) and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: run test unit install bench bench-quick chaos clean

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed

run: install            ## a short demo on the embedded SQLite default: no server needed
	$(PY) scripts/demo.py

test: install           ## every test, on real SQLite, MariaDB and Redis (started if stopped)
	scripts/ensure_services.sh
	$(PY) -m pytest -q $(PYTEST_ARGS) tests

unit: install           ## the unit layer only: no server
	$(PY) -m pytest -q tests/unit

bench: install          ## delayq against RQ, Huey, Dramatiq, Celery, ARQ: table + benchmarks/results/latest.json
	scripts/ensure_services.sh
	$(PY) benchmarks/bench.py

bench-quick: install    ## N=2000, one run, Huey and Dramatiq only: under a minute
	scripts/ensure_services.sh
	BENCH_QUICK=1 $(PY) benchmarks/bench.py

chaos: install          ## faults injected into real processes and servers; prints the figures (CHAOS_SCALE=short for CI's size)
	scripts/ensure_services.sh
	$(PY) tests/chaos/chaos.py

clean:
	rm -rf $(VENV) .pytest_cache demo.db
