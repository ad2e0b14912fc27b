"""etl-craft grant, and what doctor and migrate do with its roles, through the real command line on PostgreSQL.

Roles are cluster-wide: each test names them with a prefix of its own (--prefix) and drops them at its end.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.core.errors import RefusedByPolicyError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.engine.render import MIGRATE_LOCK_KEY
from etlcraft.engine.settings import set_test_mode
from etlcraft.handlers.sql.versions import record_version, recorded_version
from tests.py.support.cli import etl_craft
from tests.py.support.project import Task, write_project

pytestmark = [pytest.mark.process, pytest.mark.postgres]


@dataclass(frozen=True)
class Roles:
    url: str  # the Engine DB, as its owner
    prefix: str
    cwd: Path

    @property
    def plain(self) -> str:
        return make_url(self.url).set(drivername="postgresql").render_as_string(hide_password=False)

    def sql(self, statement: str) -> list[tuple[object, ...]]:
        with psycopg.connect(self.plain, autocommit=True) as conn:
            cursor = conn.execute(statement)
            return cursor.fetchall() if cursor.description else []

    def cli(self, *args: str, url: str | None = None) -> tuple[int, str, str]:
        done = etl_craft("--engine-url", url or self.url, *args, cwd=self.cwd)
        return done.code, done.out, done.err


@pytest.fixture
def roles(empty_pg_url: str, tmp_path: Path) -> Iterator[Roles]:
    """A migrated Engine DB and a role prefix of this test's own; every role named with it is dropped at the end."""
    found = Roles(empty_pg_url, f"etlcraft_g{uuid.uuid4().hex[:8]}", tmp_path)
    code, _, err = found.cli("init-db")
    assert code == 0, err
    try:
        yield found
    finally:
        names = [r for (r,) in found.sql(f"SELECT rolname FROM pg_roles WHERE rolname LIKE '{found.prefix}%'")]
        if names:
            found.sql(f"DROP OWNED BY {', '.join(names)}")
            for name in names:
                found.sql(f"DROP ROLE {name}")


def test_grant_print__shows_the_sql_and_changes_nothing(roles: Roles) -> None:
    code, out, err = roles.cli("grant", "--print", "--prefix", roles.prefix)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "BEGIN;" and lines[-1] == "COMMIT;"
    assert f"CREATE ROLE {roles.prefix}_reader NOLOGIN;" in lines
    assert "REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA etl_craft FROM PUBLIC;" in lines
    assert f"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA etl_craft TO {roles.prefix}_engine;" in lines
    assert not any(word in out for word in ("GRANT INSERT", "GRANT UPDATE", "GRANT DELETE", "GRANT ALL"))
    assert roles.sql(f"SELECT rolname FROM pg_roles WHERE rolname LIKE '{roles.prefix}%'") == []


def test_grant__creates_the_roles__doctor_is_green__a_second_grant_changes_nothing(roles: Roles) -> None:
    code, out, err = roles.cli("grant", "--prefix", roles.prefix)
    assert code == 0, err
    assert [line.split()[-1] for line in out.splitlines() if line.startswith("  created")] == [
        f"{roles.prefix}_reader", f"{roles.prefix}_operator", f"{roles.prefix}_engine"]
    code, out, err = roles.cli("doctor")
    assert code == 0, out + err
    assert "ok    execute: PUBLIC executes no function of etl_craft" in out
    assert (f"ok    roles: {roles.prefix}_reader, {roles.prefix}_operator and {roles.prefix}_engine hold what "
            "etl-craft grant gives them") in out
    code, out, _ = roles.cli("grant", "--prefix", roles.prefix, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["created"] == [] and doc["executed"] is True
    assert roles.sql("SELECT value FROM etl_craft.eng_settings WHERE setting = 'ROLE_PREFIX'") == [(roles.prefix,)]
    assert roles.sql("SELECT count(*) FROM etl_craft.aud_actions WHERE command = 'grant'") == [(2,)]


def test_migrate__gives_recreated_functions_and_new_views_their_grants_again(roles: Roles) -> None:
    assert roles.cli("grant", "--prefix", roles.prefix)[0] == 0
    reader, operator = f"{roles.prefix}_reader", f"{roles.prefix}_operator"
    # A view of the AUD_V_ kind appears after the grant (as a later migration would add one), and the run
    # functions are re-created (as when their template changes): both have lost the roles' grants.
    roles.sql("CREATE VIEW etl_craft.aud_v_grant_test AS"
              " SELECT pipeline_run_id, status, etl_craft.clock_now() AS read_at FROM etl_craft.aud_pipelines_run_log")
    roles.sql(f"BEGIN; SELECT pg_advisory_xact_lock({MIGRATE_LOCK_KEY});"
              " SELECT set_config('etl_craft.actor', 't', true);"
              " DELETE FROM etl_craft.schema_migrations WHERE version = 'R:010_runs'; COMMIT;")
    roles.sql("DROP FUNCTION etl_craft.mark_run;"
              " CREATE FUNCTION etl_craft.mark_run() RETURNS int LANGUAGE sql AS 'SELECT 1'")
    assert roles.sql(f"SELECT has_table_privilege('{reader}', 'etl_craft.aud_v_grant_test', 'SELECT'),"
                     " has_function_privilege('public', 'etl_craft.mark_run()', 'EXECUTE')") == [(False, True)]
    code, out, err = roles.cli("migrate")
    assert code == 0 and "refreshed  functions and triggers: 010_runs" in out, out + err
    mark_run = ("(SELECT p.oid FROM pg_proc p"
                " WHERE p.proname = 'mark_run' AND p.pronamespace = 'etl_craft'::regnamespace)")
    assert roles.sql(f"SELECT has_table_privilege('{reader}', 'etl_craft.aud_v_grant_test', 'SELECT'),"
                     f" has_function_privilege('{operator}', {mark_run}, 'EXECUTE'),"
                     f" has_function_privilege('public', {mark_run}, 'EXECUTE'),"
                     f" has_table_privilege('{reader}', 'etl_craft.aud_pipelines_run_log', 'SELECT')") == [
        (True, True, False, False)]
    # The reader reads the view for real: clock_now() is inlined with the helper it calls, which it may run too.
    assert roles.sql(f"BEGIN; SET LOCAL ROLE {reader}; SELECT count(*) FROM etl_craft.aud_v_grant_test; COMMIT") == []
    assert roles.cli("doctor")[0] == 0


def test_doctor__explains_each_grant_beyond_the_roles__grant_and_migrate_take_them_back(roles: Roles) -> None:
    assert roles.cli("grant", "--prefix", roles.prefix)[0] == 0
    reader, other = f"{roles.prefix}_reader", f"{roles.prefix}_bi"
    roles.sql(f"CREATE ROLE {other} NOLOGIN")
    roles.sql(f"GRANT SELECT ON etl_craft.aud_task_attempts TO {reader}, {other};"
              f" GRANT EXECUTE ON FUNCTION etl_craft.claim_attempt TO {other};"
              " GRANT EXECUTE ON FUNCTION etl_craft.ready_tasks TO PUBLIC")
    code, out, _ = roles.cli("doctor")
    assert code == 6
    assert ("fail  execute: PUBLIC can EXECUTE 1 function of etl_craft (ready_tasks), which run as their owner"
            in out)
    roles_line = next(line for line in out.splitlines() if line.startswith("warn  roles: "))
    assert (f"{other} can EXECUTE etl_craft.claim_attempt (a write-API function that runs as its owner: it can "
            "change what the function changes)") in roles_line
    assert (f"{other} can SELECT etl_craft.AUD_TASK_ATTEMPTS, a base table (BI tools read the AUD_V_ views)"
            in roles_line)
    assert f"{reader} can SELECT etl_craft.AUD_TASK_ATTEMPTS, a base table" in roles_line
    assert f"remedy: run etl-craft grant --prefix {roles.prefix}: it gives" in out
    assert f"GRANT {roles.prefix}_operator TO {other}" in out
    assert roles.cli("grant", "--prefix", roles.prefix)[0] == 0  # the reader's extra grant and PUBLIC's go
    roles.sql(f"REVOKE ALL ON ALL TABLES IN SCHEMA etl_craft FROM {other};"
              f" REVOKE ALL ON ALL FUNCTIONS IN SCHEMA etl_craft FROM {other}")
    code, out, _ = roles.cli("doctor")
    assert code == 0 and "ok    roles:" in out, out


def test_a_login_with_the_engine_role_runs_and_controls_a_pipeline(roles: Roles) -> None:
    """What the CLI and a worker need is in the engine role: a run, its reads, a hash version and the operator
    commands, all as a login that holds no table grant."""
    assert roles.cli("grant", "--prefix", roles.prefix)[0] == 0
    project = write_project(roles.cwd / "p", roles.url, {"flow": [Task("load"), Task("report")]},
                            [("report", "load", "SUCCESS")])
    assert etl_craft("migrate", cwd=project).code == 0
    login = f"{roles.prefix}_worker"
    roles.sql(f"CREATE ROLE {login} LOGIN; GRANT {roles.prefix}_engine TO {login}")
    as_login = make_url(roles.url).set(username=login).render_as_string(hide_password=False)
    flow = ("--pipeline-code", "flow")
    runs = [("run", *flow, "--run-key", "k1"), ("status", *flow, "--run-id", "1"), ("history", *flow),
            ("reopen", *flow, "--run-key", "k1", "--reason", "again"),
            ("mark", *flow, "--run-key", "k1", "--status", "SUCCESS", "--reason", "checked"),
            ("pause", *flow, "--reason", "upgrade"), ("resume", *flow, "--reason", "done"),
            ("reconcile",), ("audit",), ("doctor",)]
    for args in runs:
        done = etl_craft("--project", str(project), "--engine-url", as_login, *args, cwd=project)
        assert done.code == 0, (args, done.out, done.err)
    db = EngineDB(as_login)
    try:
        with acting_as(Actor("worker@host", ActorKind.WORKER)):
            record_version(db, "main.target", 2, command="rehash", arguments={"target": "main.target"})
        assert recorded_version(db, "main.target") == 2
    finally:
        db.dispose()
    assert roles.sql("SELECT recomputed_by, recomputed_by_kind FROM etl_craft.aud_target_hash_version") == [
        ("worker@host", "WORKER")]
    assert roles.sql(f"SELECT count(*) FROM pg_class c WHERE c.relnamespace = 'etl_craft'::regnamespace"
                     f" AND has_table_privilege('{login}', c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')") == [(0,)]


def test_a_pinned_clock_is_refused_outside_test_mode_and_honoured_in_it(roles: Roles) -> None:
    """etl-craft's own pinned clock (tests pin it) goes through the same check as a session's."""
    db = EngineDB(roles.url)
    try:
        db.clock.pin(datetime(2030, 1, 1, tzinfo=UTC))
        with acting_as(Actor("tester@pytest", ActorKind.HUMAN)):
            with pytest.raises(RefusedByPolicyError) as refused:
                call(db, "reconcile_expired")
            assert str(refused.value).startswith("this session pins the clock (etl_craft.now = '2030-01-01")
            assert "is not in test mode" in str(refused.value) and not str(refused.value).startswith("EC023")
            set_test_mode(db)
            assert call(db, "reconcile_expired") == []
    finally:
        db.dispose()
