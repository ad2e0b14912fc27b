# etl-craft developer targets. `make help` lists them.
PYTHON ?= python3
# Process tests mostly wait on child processes, so one worker more than this machine's 2 cores keeps both busy.
PYTEST_WORKERS ?= 3
STAMP := .make/install.stamp

.PHONY: help install demo test test-sql test-py lint verify snapshot bench enums docs

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

install: $(STAMP) ## Install etl-craft (editable), its test tools, pgTAP and pg_prove

$(STAMP): pyproject.toml scripts/install-system-deps.sh
	scripts/install-system-deps.sh
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@mkdir -p .make && touch $@

demo: install ## A throwaway project on the embedded default (SQLite Engine DB, DuckDB warehouse)
	scripts/demo.sh

test: install test-sql test-py ## Everything CI runs: the pgTAP suites, then pytest

test-sql: install ## pgTAP suites (tests/sql) with pg_prove against a fresh PostgreSQL database
	$(PYTHON) tests/sql/run_pgtap.py

test-py: install ## pytest (tests/py) on SQLite and PostgreSQL, in 3 worker processes (PYTEST_WORKERS)
	@# Byte-compile first: the tests start etl-craft processes by the thousand, and where PYTHONDONTWRITEBYTECODE
	@# is set each of them would otherwise compile every module it imports from source.
	$(PYTHON) -m compileall -q etlcraft tests > /dev/null
	$(PYTHON) -m pytest -q -p no:cacheprovider -p no:benchmark -n $(PYTEST_WORKERS) --dist worksteal --durations=15

lint: install ## ruff and mypy
	ruff check etlcraft tests scripts bench
	mypy

verify: install ## Fail when the rendered SQL differs from the checked-in snapshot (sql/rendered/)
	$(PYTHON) -m pytest -q -p no:cacheprovider tests/py/migration/test_rendered_snapshot.py

snapshot: install ## Re-render sql/rendered/ after a deliberate change to the SQL templates
	ETL_CRAFT_UPDATE_SNAPSHOT=1 $(PYTHON) -m pytest -q -p no:cacheprovider tests/py/migration/test_rendered_snapshot.py

bench: install ## Run every benchmark in bench/ and print its figures
	@set -e; found=0; for script in bench/*.py; do [ -e "$$script" ] || continue; found=1; \
	  echo "== $$script"; $(PYTHON) "$$script"; done; \
	  [ $$found = 1 ] || echo "bench/ has no benchmarks yet"

enums: install ## Regenerate etlcraft/core/enums.py from sql/state_machine.yaml
	$(PYTHON) scripts/gen_enums.py

docs: enums ## Regenerate the enums module and the reference pages that come from the code (docs/reference)
	$(PYTHON) scripts/gen_reference_docs.py
