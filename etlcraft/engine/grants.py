"""The roles of a PostgreSQL Engine DB: what a BI tool, a DBA and etl-craft's own processes may do, and nothing more.

Every function of the write API runs as its owner (SECURITY DEFINER, sql/functions/_functions.sql.j2), so a role
needs EXECUTE on a function, never a write grant on a table. Three group roles, named `<prefix>_reader`,
`<prefix>_operator` and `<prefix>_engine` (the prefix is the schema unless `etl-craft grant --prefix` says otherwise):

- reader: USAGE on the schema, SELECT on every AUD_V_* view found when the grants are applied, and EXECUTE on the
  functions those views call (and the helpers those call, CALLS); no base table.
- operator: the reader's grants (it is a member of the reader), EXECUTE on the operator functions (mark, cancel,
  pause, resume, reopen), on the read functions, and on the functions a DBA calls to run a pipeline by hand
  (docs/guides/sql-api.md), and SELECT on the metadata that names what those functions take (CFG_PROJECTS,
  CFG_PIPELINES, CFG_TASKS).
- engine: EXECUTE on every function and SELECT on every table and view: what the CLI, `etl-craft run` and workers
  need. Migrating and granting stay with the schema's owner.

No role is granted INSERT, UPDATE, DELETE or TRUNCATE on anything, and PUBLIC executes no function of the schema.
The grants are applied from nothing each time (what each role holds is exactly the plan), by `etl-craft grant`, and
by `etl-craft migrate` after it re-creates functions (a re-created function has lost its grants) when the roles
exist.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa

from etlcraft.core.errors import UsageError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import function_specs
from etlcraft.engine.settings import ROLE_PREFIX, read_setting

KINDS = ("reader", "operator", "engine")
#: What an operator changes: mark_run, mark_task_run, cancel_run, cancel_attempt, pause_pipeline, resume_pipeline,
#: pause_project, resume_project, reopen_run (the CLI's mark, cancel, pause, resume and reopen).
OPERATOR_FUNCTIONS = ("mark_run", "mark_task_run", "cancel_run", "cancel_attempt", "pause_pipeline",
                      "resume_pipeline", "pause_project", "resume_project", "reopen_run")
#: The calls of the run by hand in docs/guides/sql-api.md (its reads, ready_tasks, are read functions).
HAND_RUN_FUNCTIONS = ("create_run", "admit_run", "start_run", "queue_attempt", "claim_attempt", "start_attempt",
                      "finish_attempt", "finalize_run")
#: The metadata an operator reads to find the ids those functions take (the guide finds its pipeline this way).
OPERATOR_TABLES = ("cfg_projects", "cfg_pipelines", "cfg_tasks")
#: Helpers a function calls that the catalog does not record (SQL function bodies have no dependencies): whoever may
#: run the caller must be able to run them, since PostgreSQL checks EXECUTE on each function of a query when the
#: query starts, whether or not it is reached (clock_now() is inlined into its callers with its _pinned_now()).
CALLS = {"clock_now": ("_pinned_now",)}
_NAME_MAX = 63 - len("_operator")


@dataclass(frozen=True)
class Roles:
    prefix: str

    @property
    def reader(self) -> str:
        return f"{self.prefix}_reader"

    @property
    def operator(self) -> str:
        return f"{self.prefix}_operator"

    @property
    def engine(self) -> str:
        return f"{self.prefix}_engine"

    def all(self) -> tuple[str, str, str]:
        return (self.reader, self.operator, self.engine)


@dataclass(frozen=True)
class Privilege:
    """One grant: `grantee` may `privilege` (SELECT, EXECUTE, USAGE or MEMBER) the object `target` (a qualified
    table, view or function signature, the schema, or a role)."""

    grantee: str
    privilege: str
    target: str
    kind: str  # table, view, function, schema, role


@dataclass(frozen=True)
class GrantPlan:
    schema: str
    roles: Roles
    views: tuple[str, ...]  # the AUD_V_* views, qualified
    privileges: frozenset[Privilege]

    def of(self, role: str) -> list[Privilege]:
        return sorted((p for p in self.privileges if p.grantee == role), key=lambda p: (p.kind, p.target))


def checked_prefix(prefix: str) -> str:
    if not prefix or len(prefix) > _NAME_MAX or not prefix.replace("_", "a").isalnum() or not prefix.islower() \
            or prefix[0].isdigit() or not prefix.isascii():
        raise UsageError(f"the role prefix {prefix!r} is not a plain lower-case name of at most {_NAME_MAX} "
                         "characters (letters, digits and _): the roles are <prefix>_reader, <prefix>_operator and "
                         "<prefix>_engine")
    return prefix


def recorded_roles(db: EngineDB, conn: sa.Connection) -> Roles:
    """The roles `etl-craft grant` set up for this Engine DB (ENG_SETTINGS ROLE_PREFIX), else the default ones."""
    return Roles(read_setting(db, conn, ROLE_PREFIX) or db.schema)


def existing_roles(conn: sa.Connection, roles: Roles) -> list[str]:
    found = conn.execute(sa.text("SELECT rolname FROM pg_roles WHERE rolname = ANY(:names)"),
                         {"names": list(roles.all())}).scalars().all()
    return [r for r in roles.all() if r in found]


#: Functions by name: the write API has one function per name (sql/functions/_functions.sql.j2 drops any other), so
#: `schema.name` names one function in GRANT and REVOKE.
_FUNCTIONS = sa.text(
    "SELECT p.proname, quote_ident(:schema) || '.' || quote_ident(p.proname) FROM pg_proc p"
    " WHERE p.pronamespace = CAST(:schema AS regnamespace) ORDER BY 1")
_RELATIONS = sa.text(
    "SELECT c.relname, quote_ident(:schema) || '.' || quote_ident(c.relname), c.relkind FROM pg_class c"
    " WHERE c.relnamespace = CAST(:schema AS regnamespace) AND c.relkind IN ('r', 'p', 'v', 'm') ORDER BY 1")
#: The functions the AUD_V_* views call (through their rewrite rules), which their readers must be able to execute.
_VIEW_FUNCTIONS = sa.text(
    """
    SELECT DISTINCT p.proname
      FROM pg_class v
      JOIN pg_rewrite w ON w.ev_class = v.oid
      JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid AND d.refclassid = 'pg_proc'::regclass
      JOIN pg_proc p ON p.oid = d.refobjid
     WHERE v.relnamespace = CAST(:schema AS regnamespace) AND v.relkind IN ('v', 'm') AND v.relname LIKE 'aud\\_v\\_%'
       AND p.pronamespace = CAST(:schema AS regnamespace)
     ORDER BY 1
    """
)


def plan(db: EngineDB, conn: sa.Connection, roles: Roles) -> GrantPlan:
    """What each role holds, read against the live catalog: the schema's functions, tables and AUD_V_* views."""
    schema = db.schema
    functions = {name: qualified for name, qualified in conn.execute(_FUNCTIONS, {"schema": schema})}
    relations = [(name, qualified, kind) for name, qualified, kind in conn.execute(_RELATIONS, {"schema": schema})]
    views = tuple(qualified for name, qualified, kind in relations if kind in ("v", "m") and name.startswith("aud_v_"))
    called = conn.execute(_VIEW_FUNCTIONS, {"schema": schema}).scalars().all()
    view_functions = sorted({functions[n] for f in called for n in (f, *CALLS.get(f, ())) if n in functions})
    read_functions = [n for n, spec in function_specs(db.dialect).items() if spec.readonly]
    missing = [n for n in (*OPERATOR_FUNCTIONS, *HAND_RUN_FUNCTIONS, *read_functions) if n not in functions]
    if missing:
        raise UsageError(f"the Engine DB at {db.display_url} lacks the functions {', '.join(missing)}; "
                         "run etl-craft migrate first")
    schema_usage = [Privilege(r, "USAGE", schema, "schema") for r in roles.all()]
    reader = [Privilege(roles.reader, "SELECT", v, "view") for v in views]
    reader += [Privilege(roles.reader, "EXECUTE", f, "function") for f in view_functions]
    operator = [Privilege(roles.operator, "MEMBER", roles.reader, "role")]
    operator += [Privilege(roles.operator, "EXECUTE", functions[n], "function")
                 for n in (*OPERATOR_FUNCTIONS, *read_functions, *HAND_RUN_FUNCTIONS)]
    operator += [Privilege(roles.operator, "SELECT", q, "table") for n, q, _ in relations if n in OPERATOR_TABLES]
    engine = [Privilege(roles.engine, "EXECUTE", f, "function") for f in functions.values()]
    engine += [Privilege(roles.engine, "SELECT", qualified, "view" if kind in ("v", "m") else "table")
               for _, qualified, kind in relations]
    return GrantPlan(schema, roles, views, frozenset([*schema_usage, *reader, *operator, *engine]))


def statements(grant_plan: GrantPlan, *, create: Iterable[str] = (), member_already: bool = False) -> list[str]:
    """The SQL that makes each role hold exactly its plan: create the roles named in `create`, take everything
    away, then grant. PUBLIC loses EXECUTE on every function of the schema."""
    schema, roles = grant_plan.schema, grant_plan.roles
    everyone = ", ".join(roles.all())
    sql = [f"CREATE ROLE {role} NOLOGIN" for role in create]
    sql += [
        f"REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA {schema} FROM PUBLIC",
        f"REVOKE ALL ON ALL TABLES IN SCHEMA {schema} FROM {everyone}",
        f"REVOKE ALL ON ALL FUNCTIONS IN SCHEMA {schema} FROM {everyone}",
        f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA {schema} FROM {everyone}",
        f"GRANT USAGE ON SCHEMA {schema} TO {everyone}",
    ]
    for role in (roles.reader, roles.operator):
        by_kind: dict[tuple[str, str], list[str]] = {}
        for p in grant_plan.of(role):
            if p.kind == "role":
                if not member_already:
                    sql.append(f"GRANT {p.target} TO {role}")
            elif p.kind != "schema":
                on = "FUNCTION " if p.kind == "function" else ""
                by_kind.setdefault((p.privilege, on), []).append(p.target)
        for (privilege, on), targets in sorted(by_kind.items()):
            sql.append(f"GRANT {privilege} ON {on}".rstrip() + f"\n  {', '.join(targets)}\n  TO {role}")
    sql += [f"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {schema} TO {roles.engine}",
            f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {roles.engine}"]
    return sql


def is_member(conn: sa.Connection, member: str, group: str) -> bool:
    return bool(conn.execute(sa.text(
        "SELECT EXISTS (SELECT 1 FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid"
        " JOIN pg_roles r ON r.oid = m.member WHERE g.rolname = :group AND r.rolname = :member)"),
        {"group": group, "member": member}).scalar())


def reapply(db: EngineDB, conn: sa.Connection) -> list[str]:
    """After migrate re-created functions and views: PUBLIC executes none of them, and the roles `etl-craft grant`
    set up (when all three exist) hold their plan again. Returns the roles granted."""
    conn.exec_driver_sql(f"REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA {db.schema} FROM PUBLIC")
    roles = recorded_roles(db, conn)
    if len(existing_roles(conn, roles)) < len(KINDS):
        return []
    for statement in statements(plan(db, conn, roles), member_already=is_member(conn, roles.operator, roles.reader)):
        conn.exec_driver_sql(statement)
    return list(roles.all())


#: Every privilege held on the schema, its functions, tables and views by a role other than the object's owner (PUBLIC
#: included), as the catalog's access lists say; a NULL list is the default one (PUBLIC executes a function).
_GRANTED = sa.text(
    """
    SELECT COALESCE(g.rolname, 'PUBLIC'), a.privilege_type, quote_ident(:schema) || '.' || quote_ident(p.proname),
           'function'
      FROM pg_proc p CROSS JOIN LATERAL aclexplode(COALESCE(p.proacl, acldefault('f', p.proowner))) a
      LEFT JOIN pg_roles g ON g.oid = a.grantee
     WHERE p.pronamespace = CAST(:schema AS regnamespace) AND a.grantee <> p.proowner
    UNION ALL
    SELECT COALESCE(g.rolname, 'PUBLIC'), a.privilege_type, quote_ident(:schema) || '.' || quote_ident(c.relname),
           CASE WHEN c.relkind IN ('v', 'm') THEN 'view' ELSE 'table' END
      FROM pg_class c CROSS JOIN LATERAL aclexplode(COALESCE(c.relacl, acldefault('r', c.relowner))) a
      LEFT JOIN pg_roles g ON g.oid = a.grantee
     WHERE c.relnamespace = CAST(:schema AS regnamespace) AND c.relkind IN ('r', 'p', 'v', 'm')
       AND a.grantee <> c.relowner
    UNION ALL
    SELECT COALESCE(g.rolname, 'PUBLIC'), a.privilege_type, quote_ident(n.nspname), 'schema'
      FROM pg_namespace n CROSS JOIN LATERAL aclexplode(COALESCE(n.nspacl, acldefault('n', n.nspowner))) a
      LEFT JOIN pg_roles g ON g.oid = a.grantee
     WHERE n.nspname = :schema AND a.grantee <> n.nspowner
    """
)


def granted(db: EngineDB, conn: sa.Connection, roles: Roles) -> set[Privilege]:
    """What the catalog grants on the schema's objects to anyone but their owners, with the etl-craft roles'
    memberships (MEMBER of a role)."""
    found = {Privilege(*row) for row in conn.execute(_GRANTED, {"schema": db.schema})}
    members = conn.execute(sa.text(
        "SELECT r.rolname, g.rolname FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid"
        " JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = ANY(:names) AND g.rolname = ANY(:names)"),
        {"names": list(roles.all())})
    return found | {Privilege(member, "MEMBER", group, "role") for member, group in members}
