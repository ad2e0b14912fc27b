"""Run the pgTAP suites: a fresh database migrated by etl-craft in test mode (sessions may pin the clock), with the
reader, operator and engine roles of `etl-craft grant` under a prefix of its own (roles are cluster-wide: the
tests/sql/roles suites find them through ENG_SETTINGS), pgtap and tests/sql/helpers*.sql loaded (in name order) with
the views' spec (sql/views.yaml) in their tables, then pg_prove over tests/sql/**/*.test.sql. The database and its
roles are dropped afterwards, pass or fail."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent.parent))

from etlcraft.core.actor import Actor, acting_as  # noqa: E402
from etlcraft.core.enums import ActorKind  # noqa: E402
from etlcraft.engine.db import EngineDB  # noqa: E402
from etlcraft.engine.grants import Roles  # noqa: E402
from etlcraft.engine.migrations import migrate  # noqa: E402
from etlcraft.engine.settings import set_test_mode  # noqa: E402
from etlcraft.engine.views import views_spec  # noqa: E402
from etlcraft.services.grants import grant_roles  # noqa: E402


def load_view_spec(conn: psycopg.Connection) -> None:
    """sql/views.yaml into etl_test.spec_views and etl_test.spec_view_columns (helpers_views.sql), for
    tests/sql/schema/views.test.sql."""
    for view in views_spec().views:
        conn.execute("INSERT INTO etl_test.spec_views VALUES (%s, %s)", (view.name.lower(), view.description))
        for number, column in enumerate(view.columns, start=1):
            conn.execute("INSERT INTO etl_test.spec_view_columns VALUES (%s, %s, %s, %s, %s)",
                         (view.name.lower(), number, column.name.lower(), column.pg_type, column.description))


def main() -> int:
    admin = os.environ.get("ETL_CRAFT_TEST_PG_URL", "postgresql://root@127.0.0.1:5432/test")
    name = f"etlcraft_pgtap_{uuid.uuid4().hex[:8]}"
    url = make_url(admin).set(database=name)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        db = EngineDB(url.render_as_string(hide_password=False))
        with acting_as(Actor("pgtap@setup", ActorKind.HUMAN)):
            migrate(db)
            set_test_mode(db)
            grant_roles(db, prefix=name)
        db.dispose()
        dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pgtap")
            for helpers in sorted(HERE.glob("helpers*.sql")):  # helpers.sql, then one file per function area
                conn.execute(helpers.read_text(encoding="utf-8"))
            load_view_spec(conn)
        # Suites named on the command line (relative to tests/sql), else all of them.
        files = sys.argv[1:] or sorted(str(p.relative_to(HERE)) for p in HERE.rglob("*.test.sql"))
        if not files:
            print("tests/sql has no *.test.sql files", file=sys.stderr)
            return 1
        env = {**os.environ, "PGHOST": url.host or "127.0.0.1", "PGPORT": str(url.port or 5432),
               "PGUSER": url.username or "root", "PGDATABASE": name}
        if url.password:
            env["PGPASSWORD"] = url.password
        return subprocess.call(["pg_prove", "--jobs", "2", "--failures", *files], cwd=HERE, env=env)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            for role in Roles(name).all():  # granted nothing outside the database just dropped
                conn.execute(f'DROP ROLE IF EXISTS "{role}"')


if __name__ == "__main__":
    sys.exit(main())
