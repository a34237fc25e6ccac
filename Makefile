# delayq: the two commands are `make run` (demo on embedded SQLite) and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: run test unit install wheel bench bench-quick bench-scale chaos clean

$(VENV)/.installed: pyproject.toml
	scripts/ensure_build_deps.sh
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

install: $(VENV)/.installed   ## the development venv: delayq installed editable, with the test tools

run: install            ## a short demo on the embedded SQLite default: no server needed
	$(PY) scripts/demo.py

wheel: install          ## build the wheel (and sdist) into dist/, to install into an application's venv
	$(PY) -m build --outdir dist .

test: install           ## every test, on real SQLite, MariaDB and Redis (started if stopped), the installed wheel included
	scripts/ensure_services.sh
	@py=$$(scripts/wheel_env.sh) || exit 1; status=0; \
	DELAYQ_TEST_PYTHON=$$py $(PY) -m pytest -q $(PYTEST_ARGS) tests || status=$$?; \
	rm -rf "$$(dirname "$$(dirname "$$py")")"; exit $$status

unit: install           ## the unit layer only: no server
	$(PY) -m pytest -q tests/unit

bench: install          ## delayq against RQ, Huey, Dramatiq, Celery, ARQ: table + benchmarks/results/latest.json (about 60 min; BENCH_LONG=1: 7 more)
	scripts/ensure_services.sh
	$(PY) benchmarks/bench.py

bench-quick: install    ## N=2000, one run, Huey and Dramatiq only, cron timing in 15-second minutes: about 3 minutes
	scripts/ensure_services.sh
	BENCH_QUICK=1 $(PY) benchmarks/bench.py

bench-scale: install    ## issue 26 alone: BENCH_SCALE pending jobs (default 200,000) and as many finished, on a private mariadbd and redis-server: table + benchmarks/results/scale.json
	$(PY) benchmarks/scale.py

chaos: install          ## faults injected into real processes and servers, then the 30-minute fault check of at least 500 faults, schedules under three runners (5 min), limits (rate 60 s, 2,000 keyed jobs) and the store on three Galera nodes (3,000 jobs, one node killed); prints the figures (CHAOS_SCALE=short for CI's size)
	scripts/ensure_services.sh
	@status=0; $(PY) tests/chaos/chaos.py || status=$$?; \
	if [ "$$CHAOS_SCALE" = short ]; then form=--short; else form="--minutes 30 --min-faults 500"; fi; \
	$(PY) tests/chaos/faultcheck.py $$form || status=$$?; \
	if [ "$$CHAOS_SCALE" = short ]; then $(PY) -m tests.chaos.schedules_check --seconds 30 --step 5 || status=$$?; \
	$(PY) -m tests.chaos.limits_check --short || status=$$?; \
	$(PY) -m tests.chaos.galera_check --jobs 600 --span 20 || status=$$?; \
	else $(PY) -m tests.chaos.schedules_check --seconds 300 || status=$$?; $(PY) -m tests.chaos.limits_check || status=$$?; \
	$(PY) -m tests.chaos.galera_check || status=$$?; fi; \
	exit $$status

clean:
	rm -rf $(VENV) .pytest_cache demo.db build dist lib/*.egg-info
