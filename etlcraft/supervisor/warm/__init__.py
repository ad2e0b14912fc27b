"""What a task process needs before it starts, done once in the process its fork server is forked from, so that no
task process does it again: the imports and the per-process caches of an attempt.

etlcraft.supervisor.forkserver calls warm() in `etl-craft run` itself before forking the fork server from it; when
it has to start the standard fork server instead (a fresh interpreter), that server preloads
`etlcraft.supervisor.warm.sqlite` or `etlcraft.supervisor.warm.postgresql`, which call it. Without it every task
process renders the write-API templates again (half a second to a second each) and imports its handler.
"""

from __future__ import annotations

import importlib
import os

from etlcraft.core.process import process_start
from etlcraft.engine.functions import function_specs
from etlcraft.engine.queries import named_queries

#: What every task process imports, whatever its handler: the SQL handler (sqlglot, the warehouse code) is the
#: heaviest; the configuration loader reads craft-connector.yml in each attempt.
MODULES = ("etlcraft.config.loader", "etlcraft.handlers.python_script", "etlcraft.handlers.sql")
DRIVERS = {
    "postgresql": ("psycopg", "sqlalchemy.dialects.postgresql.psycopg"),
    "sqlite": ("sqlite3", "sqlalchemy.dialects.sqlite.pysqlite"),
}


def warm(dialect: str) -> None:
    """Import the handlers and the dialect's driver, and fill the caches a task process reads: the write-API
    functions of `dialect`, the named queries, the boot id it records on its attempt."""
    for name in (*MODULES, *DRIVERS[dialect]):
        importlib.import_module(name)
    function_specs(dialect)
    named_queries()
    process_start(os.getpid())
