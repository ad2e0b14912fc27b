"""doctor: is the Engine DB reachable, at the right schema version, and written by etl-craft alone?

On PostgreSQL it also reads the privileges: no login but etl-craft's may write its tables (grants), PUBLIC may not
execute its functions, which run as their owner (execute), and the roles of `etl-craft grant` hold what it gives
them, while any other grant on the schema is listed with what it lets its holder do (roles)."""

from __future__ import annotations

import os
import smtplib
import ssl
import stat
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from etlcraft.alerts.email import failure_text, probe
from etlcraft.config.loader import ProjectConfig
from etlcraft.core.errors import EtlCraftError
from etlcraft.engine import grants
from etlcraft.engine.catalog import owned_tables, table_exists
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import function_specs
from etlcraft.engine.migrations import ENGINE, engine_migrations, repeatable_objects

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str
    remedy: str | None = None


@dataclass
class DoctorReport:
    checks: list[Check] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return all(c.status != FAIL for c in self.checks)


def doctor(db: EngineDB, sqlite_path: Path | None = None, config: ProjectConfig | None = None,
           worker: bool = False) -> DoctorReport:
    """The Engine DB's checks (with its connection budget on PostgreSQL), then (with the project's `config`) the
    Email section's; with `worker`, the imports of the ingestion scripts this interpreter cannot find."""
    from etlcraft.services.doctor_cluster import DEFAULT_POOL, budget_check, worker_imports_check  # uses Check

    report = _engine_doctor(db, sqlite_path)
    if db.is_postgres and report.healthy:
        report.checks.append(budget_check(db, config.orchestration.db_pool_size if config else DEFAULT_POOL))
    if config is not None:
        report.checks.extend(email_checks(config))
    if worker:
        report.checks.append(worker_imports_check(db, config))
    return report


def _engine_doctor(db: EngineDB, sqlite_path: Path | None) -> DoctorReport:
    report = DoctorReport()
    if sqlite_path is not None and not sqlite_path.exists():
        report.checks.append(Check("connection", FAIL, f"the Engine DB file {sqlite_path} does not exist yet",
                                   "run etl-craft init-db"))
        return report
    try:
        with db.read() as conn:
            report.checks.append(Check("connection", OK, f"connected to {db.display_url} ({_server(db, conn)})"))
            report.checks.extend(_schema_checks(db, conn))
            if db.is_postgres:
                report.checks.append(_grant_check(db, conn))
                report.checks.extend(_privilege_checks(db, conn))
    except EtlCraftError as exc:
        report.checks.append(Check("connection", FAIL, str(exc), "check Engine in craft-connector.yml"))
    if sqlite_path is not None:
        report.checks.append(_file_mode_check(sqlite_path))
    return report


def _server(db: EngineDB, conn: sa.Connection) -> str:
    if db.is_postgres:
        return "PostgreSQL " + str(conn.execute(sa.text("SHOW server_version")).scalar())
    return "SQLite " + str(conn.execute(sa.text("SELECT sqlite_version()")).scalar())


def _schema_checks(db: EngineDB, conn: sa.Connection) -> list[Check]:
    if not table_exists(db, conn, "SCHEMA_MIGRATIONS"):
        return [Check("schema", FAIL, "the Engine DB has no etl-craft schema yet", "run etl-craft init-db")]
    rows = conn.execute(
        sa.text(f"SELECT VERSION, CHECKSUM FROM {db.qualify('SCHEMA_MIGRATIONS')} WHERE STREAM = :s"), {"s": ENGINE}
    ).all()
    applied = {version: checksum for version, checksum in rows}
    packaged = engine_migrations(db.dialect, db.schema)
    known = {m.version for m in packaged}
    newer = sorted(v for v in applied if not v.startswith("R:") and v not in known)
    if newer:
        return [Check("schema", FAIL, f"the Engine DB has migrations {', '.join(newer)}, newer than this etl-craft",
                      "upgrade etl-craft to the version that applied them")]
    pending = [m.version for m in packaged if m.version not in applied]
    if pending:
        return [Check("schema", FAIL, f"migrations {', '.join(pending)} are not applied", "run etl-craft migrate")]
    version = max(known)
    stale = [
        obj.name for obj in repeatable_objects(db.dialect, db.schema, owned_tables(db, conn))
        if applied.get(obj.version) != obj.checksum
    ]
    if stale:
        return [Check("schema", FAIL, f"schema version {version}; functions and triggers out of date: "
                      f"{', '.join(stale)}", "run etl-craft migrate")]
    return [Check("schema", OK, f"schema version {version}, functions and triggers current")]


_GRANTS = sa.text(
    """
    SELECT r.rolname AS login, upper(c.relname) AS table_name, a.privilege_type,
           COALESCE(g.rolname, 'PUBLIC') AS source
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      CROSS JOIN LATERAL aclexplode(c.relacl) a
      LEFT JOIN pg_roles g ON g.oid = a.grantee
      JOIN pg_roles r ON r.rolcanlogin AND NOT r.rolsuper AND r.rolname <> current_user AND r.oid <> c.relowner
     WHERE n.nspname = :schema
       AND c.relkind IN ('r', 'p')
       AND c.relname ~ '^(aud_|cfg_|eng_)|^schema_migrations$'
       AND a.privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
       AND a.grantee <> c.relowner
       AND (a.grantee = 0 OR a.grantee = r.oid OR pg_has_role(r.oid, a.grantee, 'USAGE'))
     ORDER BY 1, 2, 3
    """
)


def _grant_check(db: EngineDB, conn: sa.Connection) -> Check:
    """Logins other than etl-craft's (and other than owners and superusers) that could write its tables."""
    found: dict[tuple[str, str], list[str]] = {}
    logins: dict[tuple[str, str], set[str]] = {}
    for login, table, privilege, source in conn.execute(_GRANTS, {"schema": db.schema}):
        found.setdefault((source, table), [])
        if privilege not in found[(source, table)]:
            found[(source, table)].append(privilege)
        logins.setdefault((source, table), set()).add(login)
    if not found:
        return Check("grants", OK, f"no other login can write the AUD_, CFG_ or ENG_ tables of {db.schema}")
    lines = []
    remedies = []
    for (source, table), privileges in sorted(found.items()):
        who = ", ".join(sorted(logins[(source, table)]))
        via = "" if source in logins[(source, table)] else f" through {source}"
        lines.append(f"{who} can {', '.join(privileges)} {db.schema}.{table}{via}")
        remedies.append(f"REVOKE {', '.join(privileges)} ON {db.schema}.{table.lower()} FROM {source};")
    return Check("grants", FAIL, "; ".join(lines), " ".join(remedies))


def _privilege_checks(db: EngineDB, conn: sa.Connection) -> list[Check]:
    """execute: PUBLIC runs no function of the schema. roles: the etl-craft roles hold exactly their plan, and every
    other grant on the schema is explained."""
    roles = grants.recorded_roles(db, conn)
    existing = grants.existing_roles(conn, roles)
    found = grants.granted(db, conn, roles)
    public = sorted(p.target.split(".", 1)[1] for p in found if p.grantee == "PUBLIC" and p.kind == "function")
    if public:
        functions = f"{len(public)} function{'s' * (len(public) > 1)} of {db.schema}"
        shown = ", ".join(public[:5]) + (", ..." if len(public) > 5 else "")
        execute = Check("execute", FAIL, f"PUBLIC can EXECUTE {functions} ({shown}), which run as their owner: any "
                        "login that can connect can write the Engine DB through them",
                        "run etl-craft migrate, or: "
                        f"REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA {db.schema} FROM PUBLIC;")
    else:
        execute = Check("execute", OK,
                        f"PUBLIC executes no function of {db.schema}; the functions run as their owner")
    found = {p for p in found if not (p.grantee == "PUBLIC" and p.kind == "function")}
    try:
        plan = grants.plan(db, conn, roles) if len(existing) == len(roles.all()) else None
    except EtlCraftError as exc:  # functions missing: the schema check says why
        return [execute, Check("roles", WARN, f"the roles cannot be checked: {exc}", "run etl-craft migrate")]
    return [execute, _roles_check(db, roles, existing, found, plan)]


def _roles_check(db: EngineDB, roles: grants.Roles, existing: list[str], found: set[grants.Privilege],
                 plan: grants.GrantPlan | None) -> Check:
    ours = set(roles.all())
    expected = plan.privileges if plan is not None else frozenset()
    extra = sorted((p for p in found - expected), key=lambda p: (p.grantee, p.kind, p.target))
    missing = sorted(expected - found, key=lambda p: (p.grantee, p.kind, p.target))
    problems = [_explain(db, p) for p in extra]
    problems += [f"{p.grantee} lacks {p.privilege} on {p.target}" for p in missing]
    if existing and len(existing) < len(ours):
        problems.insert(0, f"only {', '.join(existing)} of the roles {', '.join(roles.all())} exist")
    if not problems:
        if plan is None:
            return Check("roles", OK, f"no other role holds a grant on {db.schema}; etl-craft grant creates "
                         f"{', '.join(roles.all())}")
        return Check("roles", OK, f"{roles.reader}, {roles.operator} and {roles.engine} hold what etl-craft grant "
                     f"gives them ({len(plan.views)} AUD_V_ views for {roles.reader}), and no other role holds a "
                     f"grant on {db.schema}")
    others = sorted({p.grantee for p in extra if p.grantee not in ours})
    remedy = [f"run etl-craft grant{'' if roles.prefix == db.schema else ' --prefix ' + roles.prefix}: it gives "
              f"{', '.join(roles.all())} exactly their grants"] if ours & {p.grantee for p in extra + missing} or \
        len(existing) not in (0, len(ours)) else []
    if others:
        remedy.append(f"give {', '.join(others)} one of the etl-craft roles instead (GRANT {roles.operator} TO "
                      f"{others[0]}), then REVOKE ALL ON ALL TABLES IN SCHEMA {db.schema} FROM {', '.join(others)}; "
                      f"REVOKE ALL ON ALL FUNCTIONS IN SCHEMA {db.schema} FROM {', '.join(others)}; "
                      f"REVOKE ALL ON SCHEMA {db.schema} FROM {', '.join(others)}")
    return Check("roles", WARN, "; ".join(problems), "; ".join(remedy) or None)


def _explain(db: EngineDB, p: grants.Privilege) -> str:
    """What one grant beyond etl-craft's roles lets its holder do, in a sentence."""
    name = p.target.split(".", 1)[-1]
    shown = f"{db.schema}.{name.upper()}"
    if p.kind == "function":
        spec = function_specs(db.dialect).get(name)
        what = ("a write-API function that runs as its owner: it can change what the function changes"
                if spec is not None and not spec.readonly else "reads only" if spec is not None
                else "a helper of the functions and triggers")
        return f"{p.grantee} can EXECUTE {p.target} ({what})"
    if p.kind == "table" and p.privilege == "SELECT":
        return f"{p.grantee} can SELECT {shown}, a base table (BI tools read the AUD_V_ views)"
    if p.kind == "view" and p.privilege == "SELECT":
        return f"{p.grantee} can SELECT the view {shown}"
    if p.kind == "schema":
        return f"{p.grantee} has {p.privilege} on schema {p.target}" + (
            " (it can create objects among etl-craft's)" if p.privilege == "CREATE" else "")
    if p.kind == "role":
        return f"{p.grantee} is a member of {p.target}"
    return f"{p.grantee} holds {p.privilege} on {shown}"


def _file_mode_check(path: Path) -> Check:
    """The database file, its WAL and shared-memory files and its folder: none writable by group or others."""
    candidates = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"), path.parent]
    modes = [(p, p.stat().st_mode) for p in candidates if p.exists()]
    loose = [(p, mode) for p, mode in modes if mode & (stat.S_IWGRP | stat.S_IWOTH)]
    if loose:
        found = ", ".join(f"{p} (mode {stat.filemode(mode)})" for p, mode in loose)
        return Check("file", WARN, f"writable by group or others: {found}",
                     "chmod go-w " + " ".join(str(p) for p, _ in loose))
    return Check("file", OK, f"{path} and its folder are writable by their owner only")


def email_checks(config: ProjectConfig) -> list[Check]:
    """The Email section: the TLS mode and what it verifies (none with a login is refused), the CA file, the
    password's variable, and whether the relay answers (a relay that cannot be reached is a warning: alerts are
    retried, and data tasks never wait for the relay)."""
    email = config.email
    if email is None:
        return []
    relay = f"{email.host}:{email.port}"
    login = f"login as {email.username} (password in the variable {email.secret})" if email.username else "no login"
    detail = f"relay {relay}, tls_mode {email.tls_mode}, {login}, from {email.from_address} to {', '.join(email.to)}"
    if email.tls_mode == "none":
        if email.username is not None:
            return [Check("email", FAIL, f"{detail}: the password would cross the network unencrypted",
                          "set Email.tls_mode to starttls or ssl, or remove Email.username and Email.secret")]
        mode = Check("email", WARN, f"{detail}: messages cross the network unencrypted",
                     "set Email.tls_mode to starttls or ssl if the relay offers TLS")
    else:
        authorities = f"the authorities in {email.ca_file}" if email.ca_file else "the system's authorities"
        mode = Check("email", OK, f"{detail}; the relay's certificate is verified against {authorities} and the "
                     f"name {email.host}")
    checks = [mode]
    if email.ca_file is not None and not (email.ca_file.is_file() and os.access(email.ca_file, os.R_OK)):
        checks.append(Check("email ca_file", FAIL, f"Email.ca_file {email.ca_file} does not exist or cannot be read",
                            "point Email.ca_file at the PEM file of the relay's certificate authority (relative "
                            "paths start at the project directory)"))
        return checks
    if email.secret is not None:
        try:
            config.secret_value(email)
        except EtlCraftError as exc:
            checks.append(Check("email secret", FAIL, str(exc), f"set the variable {email.secret}"))
    checks.append(_relay_check(config, relay))
    return checks


def _relay_check(config: ProjectConfig, relay: str) -> Check:
    email = config.email
    assert email is not None
    try:
        answer = probe(email)
    except ssl.SSLCertVerificationError as exc:
        return Check("email relay", FAIL, failure_text(exc, email), "see the message")
    except (OSError, smtplib.SMTPException) as exc:
        return Check("email relay", WARN, failure_text(exc, email),
                     "alerts wait in the Engine DB and are sent once the relay answers")
    return Check("email relay", OK, f"the relay {relay} {answer} (nothing was sent)")
