# etl-craft developer targets. `make help` lists them.
#
# Every target runs in the project's own virtual environment, .venv, made from the system's python3 on first use
# (a system Python that refuses global installs, PEP 668, is fine): etl-craft is installed into it editable, with its
# test tools, and .venv/bin comes first on PATH, so python3, etl-craft, ruff and mypy are the environment's.
SYSTEM_PYTHON ?= python3
VENV ?= .venv
PYTHON := $(abspath $(VENV))/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(VIRTUAL_ENV)/bin:$(PATH)
# Process tests mostly wait on child processes, so one worker more than this machine's 2 cores keeps both busy.
PYTEST_WORKERS ?= 3
STAMP := .make/venv.stamp

.PHONY: help install venv pgtap demo test test-sql test-py test-airflow soak lint verify snapshot bench enums docs

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

install: venv pgtap ## Make .venv with etl-craft (editable) and its test tools, and install pgTAP and pg_prove

venv: $(STAMP) ## Make .venv from the system python3 and install etl-craft (editable) with its test tools into it

$(STAMP): pyproject.toml scripts/install-system-deps.sh
	SYSTEM_PYTHON=$(SYSTEM_PYTHON) scripts/install-system-deps.sh venv
	@[ -x $(PYTHON) ] || { echo "$(SYSTEM_PYTHON) -m venv $(VENV)"; $(SYSTEM_PYTHON) -m venv $(VENV); }
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[test,server]'
	@mkdir -p .make && touch $@

pgtap: ## Install pgTAP for the running PostgreSQL server, and pg_prove, when they are missing
	scripts/install-system-deps.sh pgtap

demo: venv ## A throwaway project on the embedded default (SQLite Engine DB, DuckDB warehouse)
	PYTHON=$(PYTHON) scripts/demo.sh

test: test-sql test-py ## Everything CI runs: the pgTAP suites, then pytest

test-sql: venv pgtap ## pgTAP suites (tests/sql) with pg_prove against a fresh PostgreSQL database
	$(PYTHON) tests/sql/run_pgtap.py

test-py: venv ## pytest (tests/py) on SQLite and PostgreSQL, in 3 worker processes (PYTEST_WORKERS)
	@# Byte-compile first: the tests start etl-craft processes by the thousand, and where PYTHONDONTWRITEBYTECODE
	@# is set each of them would otherwise compile every module it imports from source.
	$(PYTHON) -m compileall -q etlcraft tests > /dev/null
	$(PYTHON) -m pytest -q -p no:cacheprovider -p no:benchmark -n $(PYTEST_WORKERS) --dist worksteal --durations=15

# Apache Airflow 3 in a virtual environment of its own (its dependencies are not etl-craft's), with etl-craft and
# the DAG factory of integrations/airflow installed into it; made once, then again when either pyproject.toml changes.
AIRFLOW_VENV := .make/airflow-venv
AIRFLOW_STAMP := .make/airflow.stamp

$(AIRFLOW_STAMP): pyproject.toml integrations/airflow/pyproject.toml
	@[ -x $(AIRFLOW_VENV)/bin/python ] || { echo "$(SYSTEM_PYTHON) -m venv $(AIRFLOW_VENV)"; \
	  $(SYSTEM_PYTHON) -m venv $(AIRFLOW_VENV); }
	$(AIRFLOW_VENV)/bin/python -m pip install --quiet --disable-pip-version-check 'apache-airflow>=3,<4' \
	  -e . -e './integrations/airflow[test]'
	@mkdir -p .make && touch $@

test-airflow: $(AIRFLOW_STAMP) ## The Airflow contract tests: DAGs from generate-yml equal etl-craft's graph; airflow dags test
	VIRTUAL_ENV=$(abspath $(AIRFLOW_VENV)) PATH=$(abspath $(AIRFLOW_VENV))/bin:$$PATH \
	  $(AIRFLOW_VENV)/bin/python -m pytest -q -p no:cacheprovider integrations/airflow/tests

soak: venv ## The repeated scenarios: the server chaos test and the pool contract tests 20 times, the API fuzzing with 300 examples per operation
	ETL_CRAFT_SOAK_ITERATIONS=$${ETL_CRAFT_SOAK_ITERATIONS:-20} ETL_CRAFT_FUZZ_EXAMPLES=$${ETL_CRAFT_FUZZ_EXAMPLES:-300} \
	  $(PYTHON) -m pytest -q -p no:cacheprovider -p no:benchmark -n $(PYTEST_WORKERS) \
	  tests/py/process/test_server_chaos.py tests/py/process/test_pool_contract.py tests/py/api/test_api_fuzz.py

lint: venv ## ruff and mypy
	$(PYTHON) -m ruff check etlcraft tests scripts bench integrations
	$(PYTHON) -m mypy

verify: venv ## Fail when the rendered SQL differs from the checked-in snapshot (sql/rendered/)
	$(PYTHON) -m pytest -q -p no:cacheprovider tests/py/migration/test_rendered_snapshot.py

snapshot: venv ## Re-render sql/rendered/ after a deliberate change to the SQL templates
	ETL_CRAFT_UPDATE_SNAPSHOT=1 $(PYTHON) -m pytest -q -p no:cacheprovider tests/py/migration/test_rendered_snapshot.py

bench: venv ## Run every benchmark in bench/ and print its figures (installs wrk, the HTTP load generator, if missing)
	scripts/install-system-deps.sh bench
	@set -e; found=0; for script in bench/*.py; do [ -e "$$script" ] || continue; found=1; \
	  echo "== $$script"; $(PYTHON) "$$script"; done; \
	  [ $$found = 1 ] || echo "bench/ has no benchmarks yet"

enums: venv ## Regenerate etlcraft/core/enums.py from sql/state_machine.yaml
	$(PYTHON) scripts/gen_enums.py

docs: enums ## Regenerate the enums module and the reference pages that come from the code (docs/reference)
	$(PYTHON) scripts/gen_reference_docs.py
