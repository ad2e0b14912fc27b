"""grant: set up the reader, operator and engine roles of a PostgreSQL Engine DB, or print the SQL that would.

The roles' contents are etlcraft.engine.grants' plan. Running it takes the migration lock (so it never interleaves
with a migrate re-creating the functions), creates the roles that are missing, makes each hold exactly its plan,
records the role prefix in ENG_SETTINGS (so migrate applies the grants again to what it re-creates) and the request
in AUD_ACTIONS, all in one transaction. Printing reads the catalog only.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from etlcraft.core.actor import current_actor
from etlcraft.core.errors import EngineDbError, UsageError
from etlcraft.engine import grants
from etlcraft.engine.actions import record_action
from etlcraft.engine.db import EngineDB
from etlcraft.engine.render import MIGRATE_LOCK_KEY
from etlcraft.engine.settings import ROLE_PREFIX, write_setting


@dataclass(frozen=True)
class GrantReport:
    roles: grants.Roles
    created: tuple[str, ...]  # roles that did not exist (created, or to be created by the printed SQL)
    views: tuple[str, ...]  # the AUD_V_* views the reader selects
    operator_functions: tuple[str, ...]  # what the operator executes (signatures)
    statements: tuple[str, ...]  # the SQL run, or to run, in order
    executed: bool


def grant_roles(db: EngineDB, *, prefix: str | None = None, execute: bool = True) -> GrantReport:
    """Create and grant the roles (execute), or only say how (not execute)."""
    if not db.is_postgres:
        raise UsageError("etl-craft grant sets up PostgreSQL roles; a SQLite Engine DB has none (it is one file: "
                         "its file permissions decide who can read and write it, see etl-craft doctor)")
    roles = grants.Roles(grants.checked_prefix(prefix or db.schema))
    with db.write() if execute else db.read() as conn:
        if execute:
            db.without_statement_timeout(conn)  # it waits for migrate's lock as long as a migrate runs
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATE_LOCK_KEY})
        missing = [r for r in roles.all() if r not in grants.existing_roles(conn, roles)]
        plan = grants.plan(db, conn, roles)  # first: it names what a database that is not migrated lacks
        if execute:
            _check_can_grant(db, conn, missing)
        sql = grants.statements(plan, create=missing,
                                member_already=not missing and grants.is_member(conn, roles.operator, roles.reader))
        if execute:
            for statement in sql:
                conn.exec_driver_sql(statement)
            sql.append(write_setting(db, conn, ROLE_PREFIX, roles.prefix))
            record_action(db, conn, "grant", {"prefix": roles.prefix})
        else:
            sql.append(_setting_sql(db, roles.prefix))
    operator = tuple(p.target for p in plan.of(roles.operator) if p.kind == "function")
    return GrantReport(roles, tuple(missing), plan.views, operator, tuple(sql), execute)


def script(report: GrantReport) -> str:
    """The statements as one psql script, in one transaction under the migration lock, as `grant` runs them."""
    lines = ["BEGIN;", f"SELECT pg_advisory_xact_lock({MIGRATE_LOCK_KEY});  -- etl-craft migrate's lock"]
    lines += [f"{statement};" for statement in report.statements]
    lines.append("COMMIT;")
    return "\n".join(lines)


def _setting_sql(db: EngineDB, prefix: str) -> str:
    """The ROLE_PREFIX setting as the printed script writes it: ENG_SETTINGS takes a write marked with an actor."""
    actor = current_actor().name.replace("'", "''")
    return (f"SELECT set_config('etl_craft.actor', '{actor}', true);\n"
            f"INSERT INTO {db.qualify('ENG_SETTINGS')} (SETTING, VALUE, SET_AT) VALUES ('{ROLE_PREFIX}', '{prefix}',"
            " now()) ON CONFLICT (SETTING) DO UPDATE SET VALUE = excluded.VALUE, SET_AT = excluded.SET_AT,"
            " SET_BY = excluded.SET_BY, SET_BY_KIND = excluded.SET_BY_KIND")


def _check_can_grant(db: EngineDB, conn: sa.Connection, missing: list[str]) -> None:
    """The login owns the schema (only an owner grants on its objects) and can create the missing roles."""
    me, owner, superuser, createrole = conn.execute(sa.text(
        "SELECT current_user, pg_get_userbyid(n.nspowner), r.rolsuper, r.rolcreaterole FROM pg_namespace n"
        " JOIN pg_roles r ON r.rolname = current_user WHERE n.nspname = :schema"), {"schema": db.schema}).one()
    if me != owner and not superuser:
        raise EngineDbError(f"{me} cannot grant on schema {db.schema}: its owner {owner} can; run etl-craft grant "
                            f"as {owner} (the login that runs etl-craft migrate), or give the output of "
                            "etl-craft grant --print to a superuser")
    if missing and not (superuser or createrole):
        raise EngineDbError(f"{me} cannot create the roles {', '.join(missing)} (it has no CREATEROLE); ask a "
                            f"superuser to run: {'; '.join(f'CREATE ROLE {r} NOLOGIN' for r in missing)}; then run "
                            "etl-craft grant again")
