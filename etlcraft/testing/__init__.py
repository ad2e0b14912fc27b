"""etl-craft test: hermetic tests of a pipeline's tasks over JSONL fixtures (docs/guides/testing-pipelines.md).

No network, no other program, no secret and none of the project's databases (a large suite is spread over copies
of this very process, forked once it is set up: workers.py): the project's metadata migrations are
applied to an in-memory SQLite Engine DB, each task's SELECT runs in an in-memory DuckDB over the fixtures, and its
action is applied by the SQL handler's own code (etlcraft.handlers.sql). Every file is read confined to the project
root (files.py), the manifest is checked against manifest.schema.json (manifest.py), the steps run in runner.py
and the report (report.py) never holds row values, SQL, environment values or absolute paths.
"""
