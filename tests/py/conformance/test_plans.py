"""The plans of the statements every chain link runs (claim, readiness, finish), on a freshly created Engine DB that
nobody analyzed by hand and whose server runs no autovacuum in time (issue 27): the metadata comes in through a
project migration (which etl-craft migrate analyzes), a run's history through the write API, and then each
statement must find its rows through the index meant for it, never by reading every attempt, edge or task run.

PostgreSQL: the plans of the statements inside each function, as auto_explain reports them (log_nested_statements,
log_analyze, sent to the client as LOG messages), in a transaction rolled back after. SQLite: EXPLAIN QUERY PLAN
of each rendered statement of the function, on the Engine DB's own connection."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa

from etlcraft.core.actor import acting_as
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call, function_specs
from etlcraft.engine.migrations import migrate
from etlcraft.engine.queries import statement
from tests.py.conftest import TEST_ACTOR, PgServer

CHAIN, DONE = 600, 400
OWNER = "host:1:planner"
#: The tables a chain link reads by key: a full read of any of them grows with the run or the pipeline.
KEYED = ("AUD_TASK_ATTEMPTS", "AUD_TASK_RUN_LOG", "CFG_TASK_DEPENDENCY", "CFG_TASKS")


def _metadata(folder: Path) -> None:
    """A CHAIN-task chain as a project migration, the way a team's metadata reaches the Engine DB."""
    values = ",\n".join(f"((SELECT PIPELINE_ID FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'chain'), 'c{n:05d}',"
                        " 'SQL', 'APPEND_TABLE', 'c.sql')" for n in range(CHAIN))
    (folder / "migrations").mkdir(parents=True)
    (folder / "migrations" / "0001_chain.sql").write_text(
        "INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('plans');\n"
        "INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, 'chain' FROM CFG_PROJECTS;\n"
        f"INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE) VALUES\n{values};\n"
        "INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID) SELECT d.TASK_ID, u.TASK_ID"
        " FROM CFG_TASKS d JOIN CFG_TASKS u ON u.TASK_ID = d.TASK_ID - 1 AND u.PIPELINE_ID = d.PIPELINE_ID;\n")


class Chain:
    """A new Engine DB (init-db, then the chain's project migration) with one run of the chain whose first DONE
    links ended through the write API, and the next link's attempt queued."""

    def __init__(self, db: EngineDB, project: Path) -> None:
        self.db = db
        migrate(db, command="init-db")
        _metadata(project)
        migrate(db, project_dir=project)
        pipeline = self.rows("SELECT PIPELINE_ID FROM {s}CFG_PIPELINES WHERE PIPELINE_CODE = 'chain'")[0][0]
        self.tasks = [int(r[0]) for r in self.rows(
            "SELECT TASK_ID FROM {s}CFG_TASKS WHERE PIPELINE_ID = :p ORDER BY TASK_CODE", p=pipeline)]
        self.run = int(call(db, "create_run", pipeline_id=pipeline, run_key="manual:plans",
                            run_date=date(2026, 1, 1), bypass_reason="plan test")[0].pipeline_run_id)
        for task in self.tasks[:DONE]:
            call(db, "queue_attempt", run_id=self.run, task_id=task)
            attempt = self.claim_and_start()
            call(db, "finish_attempt", attempt_id=attempt, owner_id=OWNER, status="SUCCESS", rows_written=1)
            call(db, "ready_successors", run_id=self.run, task_id=task)
        call(db, "queue_attempt", run_id=self.run, task_id=self.tasks[DONE])

    def claim_and_start(self) -> int:
        [claimed] = call(self.db, "claim_attempt", pool="default", slot_kinds="ingestion,warehouse", owner_id=OWNER,
                         run_id=self.run)
        call(self.db, "start_attempt", attempt_id=claimed.attempt_id, owner_id=OWNER, host="h", pid=1,
             process_start="0")
        return int(claimed.attempt_id)

    def rows(self, sql: str, **params: Any) -> list[Any]:
        with self.db.read() as conn:
            prefix = f"{self.db.schema}." if self.db.is_postgres else ""
            return list(conn.execute(sa.text(sql.format(s=prefix)), params))

    def plans(self, name: str, **arguments: Any) -> list[str]:
        """The plan of each statement function `name` runs (PostgreSQL) or would run (SQLite) with `arguments`."""
        return _pg_plans(self.db, name, arguments) if self.db.is_postgres else _sqlite_plans(self.db, name)


def _pg_plans(db: EngineDB, name: str, arguments: dict[str, Any]) -> list[str]:
    dsn = db.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    plans: list[str] = []
    with psycopg.connect(dsn) as conn:
        conn.add_notice_handler(lambda notice: plans.append(notice.message_primary or ""))
        for setting in ("LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
                        "SET auto_explain.log_nested_statements = on", "SET auto_explain.log_analyze = on",
                        "SET client_min_messages = log"):
            conn.execute(setting)
        named = ", ".join(f"p_{k} => %({k})s" for k in arguments)
        conn.execute(f"SELECT * FROM {db.schema}.{name}({named}, p_actor => 'planner@pytest',"
                     " p_actor_kind => 'WORKER')", arguments).fetchall()
        conn.rollback()
    return [p for p in plans if "Query Text" in p and f"{name}(" not in p.split("Query Text:", 1)[1][:200]]


def _sqlite_plans(db: EngineDB, name: str) -> list[str]:
    plans = []
    with db.read() as conn:
        dbapi = conn.connection.driver_connection
        assert dbapi is not None
        for statement in function_specs("sqlite")[name].statements:
            params = {n: None for n in re.findall(r"(?<!:):([a-z_]\w*)", statement)}
            found = dbapi.execute(f"EXPLAIN QUERY PLAN {statement}", params).fetchall()
            plans.append(statement + "\n" + "\n".join(str(row[3]) for row in found))
    return plans


def full_reads(plans: list[str], repeated_only: bool = False) -> list[str]:
    """The scans that read a KEYED table whole: PostgreSQL's Seq Scans and index scans without an Index Cond (with
    repeated_only, only those repeated in a loop), SQLite's SCANs."""
    found = []
    tables = "|".join(KEYED)
    for plan in plans:
        if "Query Text:" not in plan:  # SQLite
            found += [line for line in plan.splitlines() if re.match(rf"SCAN ({tables})\b", line.strip())]
            continue
        nodes = re.split(r"\n\s*->\s*", plan.split("\n", 2)[-1])
        for node in nodes:
            head = node.split("\n", 1)[0]
            match = re.match(rf"(Seq Scan|Index Scan|Index Only Scan)( using \w+)? on ({tables.lower()})\b", head)
            if not match or (match.group(1) != "Seq Scan" and "Index Cond" in node):
                continue
            loops = re.search(r"loops=(\d+)", head)
            if not repeated_only or (loops and int(loops.group(1)) > 1):
                found.append(head)
    return found


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def chain(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chain]:
    folder = tmp_path_factory.mktemp("plans")
    if request.param == "sqlite":
        url = f"sqlite:///{folder / 'engine.db'}"
    else:
        server: PgServer = request.getfixturevalue("pg_server")
        url = server.url_for(server.create())  # created empty: never analyzed by hand, never vacuumed
    db = EngineDB(url)
    with acting_as(TEST_ACTOR):
        yield Chain(db, folder / "project")
    db.dispose()


def test_claim__fresh_engine_db__walks_the_queue_index(chain: Chain) -> None:
    """Failed on PostgreSQL while claim_attempt's compare-and-set named the status 'QUEUED' literally and probed its
    ids without enable_seqscan off: the generic plan read the partial queue index whole for the UPDATE and every
    attempt for the closing SELECT."""
    plans = chain.plans("claim_attempt", pool="default", slot_kinds="ingestion,warehouse", owner_id=OWNER,
                        run_id=chain.run)
    text = "\n".join(plans)
    assert re.search(r"ix_attempts_(run_)?queue", text), text
    assert full_reads(plans) == [], text


def test_readiness__fresh_engine_db__reads_the_successors_edges_by_index(chain: Chain) -> None:
    """Fails on PostgreSQL without the ANALYZE etl-craft migrate runs after the project migration: the planner then
    reads the whole partial index of active edges to find one task's successors instead of
    ix_task_dependency_upstream."""
    plans = chain.plans("ready_successors", run_id=chain.run, task_id=chain.tasks[DONE - 1])
    text = "\n".join(plans)
    assert "ix_task_dependency_upstream" in text, text
    # A task run by its run and task, or by its task (the runs of one task): a probe either way.
    assert re.search(r"ux_task_run_per_run|ix_task_runs_task", text), text
    assert full_reads(plans) == [], text


def test_ready_tasks__fresh_engine_db__reads_each_edge_once(chain: Chain) -> None:
    """ready_tasks judges every edge of the pipeline: reading them all once is its job, reading them again for
    each task (a loop over a scan) is the quadratic plan of a never-analyzed database. A guard: right today with
    or without statistics (its edges are judged once, MATERIALIZED)."""
    plans = chain.plans("ready_tasks", run_id=chain.run)
    assert full_reads(plans, repeated_only=True) == [], "\n".join(plans)


def test_finish__fresh_engine_db__finds_the_attempt_and_its_task_run_by_key(chain: Chain) -> None:
    """A guard: finish_attempt's plans are right with or without statistics (every row by its key)."""
    attempt = chain.claim_and_start()
    plans = chain.plans("finish_attempt", attempt_id=attempt, owner_id=OWNER, status="SUCCESS", rows_written=1)
    text = "\n".join(plans)
    assert re.search(r"aud_task_attempts_pkey|AUD_TASK_ATTEMPTS USING INTEGER PRIMARY KEY", text), text
    assert full_reads(plans) == [], text


def test_run_states__fresh_engine_db__finds_the_next_due_attempt_by_index(chain: Chain) -> None:
    """Failed before migration 0024: every turn of an overseer read each QUEUED attempt of its run to find the
    earliest due (an aggregate over ix_attempts_run_queue), and each live attempt of every run to tell whether one
    is on a QUEUE pool (ux_attempt_live), so a fan-out that queued thousands of tasks at once read them all per turn.
    Now each is the first entry of an index range (ix_attempts_run_due, and the QUEUE pools' own ranges of
    ix_attempts_run_queue)."""
    text = _query_plan(chain.db, "run_states", owner_id=OWNER, run_id=chain.run)
    assert "ix_attempts_run_due" in text, text
    assert "ux_attempt_live" not in text, text
    if chain.db.is_postgres:
        assert not re.search(r"Aggregate.*\n\s*->\s*Index (Only )?Scan using ix_attempts_run_queue", text), text
    else:
        assert not re.search(r"ix_attempts_run_(queue|due) \(PIPELINE_RUN_ID=\?\)$", text, re.MULTILINE), text
    assert full_reads([text]) == [], text


def _query_plan(db: EngineDB, name: str, **params: Any) -> str:
    """The plan of the named query `name` for one run (its :run_ids list read as the one :run_id); PostgreSQL's
    EXPLAIN ANALYZE, SQLite's EXPLAIN QUERY PLAN."""
    query = statement(db, name).text.replace(":run_ids", "(:run_id)")
    with db.read() as conn:
        if db.is_postgres:
            rows = conn.execute(sa.text(f"EXPLAIN ANALYZE {query}"), params)
            return "Query Text:\n" + "\n".join(str(r[0]) for r in rows)
        rows = conn.execute(sa.text(f"EXPLAIN QUERY PLAN {query}"), params)
        return "\n".join(str(r[3]) for r in rows)


def test_queue_attempts__fresh_engine_db__reads_each_listed_task_by_key(chain: Chain) -> None:
    """The tasks of the list, their task runs and their edges to other pipelines are each found by key: queuing a
    link of a long chain (or a fan-out's branches) reads nothing else of the run or the pipeline."""
    plans = chain.plans("queue_attempts", run_id=chain.run, task_ids=f"{chain.tasks[DONE + 1]},{chain.tasks[DONE + 2]}")
    text = "\n".join(plans)
    # Each listed task's task run by its run and task, or by its task (the runs of one task): a probe either way.
    assert re.search(r"ux_task_run_per_run|ix_task_runs_task", text), text
    assert full_reads(plans) == [], text
