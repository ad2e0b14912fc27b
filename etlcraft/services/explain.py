"""Why a task of a run is in its state, and what would make it run: `explain(snapshot) -> Explanation`.

The snapshot is read in one read transaction (`read_snapshot`): the task's dependencies with their upstream task
runs, its run condition, the run and its pipeline's pause, the task run and its attempts, the gate decisions that
concern it, the gate wait that concerns it (its task gate's, else the run's pipeline gate's) and its retry
parameters. `explain` is a pure function of it, so every state has a golden test built
from a hand-made snapshot. The dependency rules are ready_tasks' (docs/reference/sql-functions.md): an edge is
settled when its upstream task run is SUCCESS, FAILED, SKIPPED or CANCELLED, and met by its type.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from etlcraft.core.enums import RUN_TERMINAL, AttemptStatus
from etlcraft.core.errors import NotFoundError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.engine.queries import fetch_all, fetch_one
from etlcraft.services.control import RunRef, resolve_run
from etlcraft.services.runs import find_pipeline
from etlcraft.services.values import as_date, as_time, document, required_time

SCHEMA = "etl-craft/explanation/1"
LIVE = (AttemptStatus.QUEUED, AttemptStatus.CLAIMED, AttemptStatus.RUNNING)
_WANTS = {"SUCCESS": "succeeds", "FAILURE": "fails", "HAS_DATA": "succeeds writing rows", "ALWAYS": "ends"}


@dataclass(frozen=True)
class Pause:
    paused_at: datetime
    paused_by: str
    reason: str | None


@dataclass(frozen=True)
class Attempt:
    id: int  # the attempt id that status and `etl-craft logs --attempt-id` use
    number: int  # its place among its task run's attempts (1 = the first try)
    status: str
    queued_at: datetime | None
    not_before: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    error: str | None
    retryable: str | None = None
    retry_number: int = 0  # which retry of its task run the attempt is (a stop's requeue keeps the count)


@dataclass(frozen=True)
class Edge:
    """A dependency of the task: its upstream's task run in this run (same pipeline), or None when it has none or
    the upstream is of another pipeline (judged by the task gate)."""

    upstream: str
    dependency_type: str
    same_pipeline: bool
    upstream_status: str | None
    upstream_rows_written: int | None = None
    state: str | None = None  # task_dependencies' judgement of an in-pipeline edge: OPEN, MET or UNMET


@dataclass(frozen=True)
class Decision:
    scope: str  # "pipeline" (the run's gate) or "task" (the task's cross-pipeline gate)
    upstream: str
    dependency_type: str
    result: str
    reason: str
    decided_at: datetime


@dataclass(frozen=True)
class GateWait:
    """A gate that waits for its upstream without holding a slot (AUD_GATE_WAITS): the task's own cross-pipeline
    gate, or the run's pipeline gate."""

    scope: str  # "pipeline" or "task"
    waiting_for: str
    first_check_at: datetime
    last_check_at: datetime
    next_check_at: datetime | None  # None once ended
    wait_until: datetime
    looks: int
    outcome: str | None  # None while it waits; SATISFIED, UNSATISFIED or ABANDONED
    ended_at: datetime | None


@dataclass(frozen=True)
class Snapshot:
    pipeline_code: str
    task_code: str
    run_id: int
    run_key: str
    run_date: date
    run_status: str
    cancel_requested: bool
    pause: Pause | None
    run_condition: str
    task_status: str | None  # None: no task run in this run
    task_message: str | None
    attempts: tuple[Attempt, ...]
    edges: tuple[Edge, ...]
    decisions: tuple[Decision, ...]
    retries: int
    retry_delay: float
    retry_backoff: float
    now: datetime
    gate_wait: GateWait | None = None


@dataclass(frozen=True)
class Dependency:
    upstream: str
    dependency_type: str
    upstream_status: str
    met: bool
    settled: bool


@dataclass(frozen=True)
class Retry:
    retries: int
    delay_seconds: float
    backoff: float
    attempts_used: int
    scheduled_attempt: int | None  # its try number in the task run
    scheduled_at: datetime | None
    scheduled_attempt_id: int | None  # its attempt id (etl-craft logs --attempt-id)


@dataclass(frozen=True)
class Explanation:
    pipeline_code: str
    task_code: str
    run_id: int
    run_key: str
    run_date: date
    run_status: str
    pause: Pause | None
    task_status: str
    task_message: str | None
    attempts: tuple[Attempt, ...]
    run_condition: str
    dependencies: tuple[Dependency, ...]
    decisions: tuple[Decision, ...]
    retry: Retry
    verdict: str
    gate_wait: GateWait | None = None


# --- the pure part ----------------------------------------------------------------------------------------------

def judge(edge: Edge) -> Dependency:
    """One edge as the Engine DB judged it (task_dependencies, ready_tasks' own rule): an in-pipeline edge is
    settled unless OPEN, and met when MET; another pipeline's upstream is settled by the task gate, not here."""
    settled = edge.same_pipeline and edge.state in ("MET", "UNMET")
    met = settled and edge.state == "MET"
    shown = edge.upstream_status or ("NOT RUN" if edge.same_pipeline else "judged by the task gate")
    return Dependency(edge.upstream, edge.dependency_type, shown, bool(met), bool(settled))


def _gated(dep: Dependency, decisions: tuple[Decision, ...]) -> Dependency:
    """Another pipeline's upstream: met when the task gate's latest decision on it was SATISFIED or BYPASSED."""
    latest = [d for d in decisions if d.scope == "task" and d.upstream == dep.upstream]
    if not latest:
        return dep
    result = latest[-1].result
    return dataclasses.replace(dep, upstream_status=f"gate {result}", met=result in ("SATISFIED", "BYPASSED"))


def explain(snap: Snapshot) -> Explanation:
    """The explanation of one task's state in one run, ending with the one sentence that says what would make it
    run, or that it already ran, or that nothing will."""
    deps = tuple(_gated(judge(e), snap.decisions) if not e.same_pipeline else judge(e) for e in snap.edges)
    scheduled = next((a for a in snap.attempts if a.status == "QUEUED" and a.not_before and a.not_before > snap.now),
                     None)
    retry = Retry(snap.retries, snap.retry_delay, snap.retry_backoff, len(snap.attempts),
                  scheduled.number if scheduled else None, scheduled.not_before if scheduled else None,
                  scheduled.id if scheduled else None)
    return Explanation(snap.pipeline_code, snap.task_code, snap.run_id, snap.run_key, snap.run_date, snap.run_status,
                       snap.pause, snap.task_status or "NOT RUN", snap.task_message, snap.attempts, snap.run_condition,
                       deps, snap.decisions, retry, _verdict(snap, deps), snap.gate_wait)


def _verdict(snap: Snapshot, deps: tuple[Dependency, ...]) -> str:
    task, run = snap.task_code, f"run {snap.run_id}"
    last = snap.attempts[-1] if snap.attempts else None
    if snap.task_status == "SUCCESS":
        how = f"in attempt {last.id}" if last and last.status == "SUCCESS" else "(recorded by hand)"
        return (f"{task} already ran: it succeeded {how}, and nothing runs it again in {run} unless asked to "
                f"(etl-craft run --pipeline-code {snap.pipeline_code} --run-id {snap.run_id} --task-code {task} "
                "--force).")
    if snap.run_status in RUN_TERMINAL:
        return _ended_run_verdict(snap, deps)
    if last is not None and last.status in LIVE:
        return _live_verdict(snap, last)
    if snap.cancel_requested:
        return f"Nothing will run {task}: {run} is being cancelled."
    if snap.run_status == "QUEUED":
        return _gate_verdict(snap)
    if snap.pause is not None:
        return (f"Nothing starts {task} while pipeline {snap.pipeline_code} is paused (since "
                f"{_at(snap.pause.paused_at)} by {snap.pause.paused_by}); etl-craft resume --pipeline-code "
                f"{snap.pipeline_code} would let it run.")
    if snap.task_status in ("FAILED", "CANCELLED"):
        return _ended_verdict(snap, last)
    if snap.task_status is None and _waiting(snap, "task"):
        return _wait_verdict(snap, "its task gate")
    if snap.task_status == "SKIPPED":
        why = f" ({snap.task_message})" if snap.task_message else ""
        return (f"{task} was skipped{why}; it runs only if its upstream is rerun and then meets its dependencies, "
                f"or when asked: etl-craft run --pipeline-code {snap.pipeline_code} --run-id {snap.run_id} "
                f"--task-code {task} --ignore-dependencies.")
    return _dependency_verdict(snap, deps)


def _ended_run_verdict(snap: Snapshot, deps: tuple[Dependency, ...]) -> str:
    task, command = snap.task_code, f"etl-craft run --pipeline-code {snap.pipeline_code} --run-id {snap.run_id}"
    ended = f"Nothing will run {task}: run {snap.run_id} ended {snap.run_status}"
    if snap.task_status in ("FAILED", "CANCELLED"):
        return f"{ended}; {command} --rerun {task} would reopen the run and run {task} again."
    failed = [d for d in deps if d.settled and not d.met and d.upstream_status in ("FAILED", "CANCELLED")]
    if failed:
        upstream = failed[0].upstream
        return (f"{ended} and {upstream} {failed[0].upstream_status}; {command} --rerun {upstream} "
                f"--with-downstream would run {upstream} again and then {task} once its dependencies are met.")
    return f"{ended}; {command} --task-code {task} --ignore-dependencies --force would run {task} by hand."


def _live_verdict(snap: Snapshot, last: Attempt) -> str:
    task = snap.task_code
    if last.status != "QUEUED":
        return f"{task} is running now (attempt {last.id}, {last.status}); it ends by itself."
    if last.not_before is not None and last.not_before > snap.now:
        retry = last.retry_number
        return (f"{task} runs again when attempt {last.id} (retry {retry} of {snap.retries}) falls due at "
                f"{_at(last.not_before)} and an overseer of run {snap.run_id} claims it.")
    return f"{task} runs as soon as an overseer of run {snap.run_id} claims its queued attempt {last.id}."


def _waiting(snap: Snapshot, scope: str) -> bool:
    return snap.gate_wait is not None and snap.gate_wait.scope == scope and snap.gate_wait.outcome is None


def _wait_verdict(snap: Snapshot, gate: str) -> str:
    wait = snap.gate_wait
    assert wait is not None
    return (f"{snap.task_code} runs once {gate} is met: it waits, holding no slot, because {wait.waiting_for}; "
            f"look {wait.looks} was at {_at(wait.last_check_at)}, the next is at {_at(wait.next_check_at)}, and it "
            f"gives up at {_at(wait.wait_until)} (Gate_wait_minutes after its first look).")


def _gate_verdict(snap: Snapshot) -> str:
    if _waiting(snap, "pipeline"):
        return _wait_verdict(snap, f"run {snap.run_id}'s pipeline gate")
    unmet = [d for d in snap.decisions if d.scope == "pipeline" and d.result == "UNSATISFIED"]
    if not unmet:
        return (f"{snap.task_code} can run once run {snap.run_id} is admitted through its pipeline gate "
                "(it is QUEUED and has not been judged yet).")
    names = ", ".join(f"{d.upstream} ({d.dependency_type})" for d in unmet)
    return (f"{snap.task_code} can run once run {snap.run_id} passes its pipeline gate, which waits on {names}; "
            "the gate is judged again at the next look.")


def _ended_verdict(snap: Snapshot, last: Attempt | None) -> str:
    task, rerun = snap.task_code, (f"etl-craft run --pipeline-code {snap.pipeline_code} --run-id {snap.run_id} "
                                   f"--rerun {snap.task_code}")
    if snap.task_status == "CANCELLED":
        return f"Nothing will run {task}: it was cancelled; {rerun} would run it again."
    if last is None:
        return f"Nothing will run {task} again by itself: it was marked FAILED by hand; {rerun} would run it."
    if last.status == "LOST":
        return (f"{task} runs again when an overseer takes over run {snap.run_id} (etl-craft run --pipeline-code "
                f"{snap.pipeline_code} --run-id {snap.run_id}): its attempt {last.id} was LOST, so whether it "
                "finished is unknown, and it is queued again.")
    if last.retryable == "N":
        return (f"Nothing will run {task} again by itself: attempt {last.id} failed with an error that cannot "
                f"succeed on a retry; fix the cause, then {rerun}.")
    if last.retry_number >= snap.retries:
        return (f"Nothing will run {task} again by itself: attempt {last.id} {last.status} and its "
                f"{snap.retries} retr{'y' if snap.retries == 1 else 'ies'} are used up; {rerun} would run it again.")
    return (f"Nothing will run {task} again by itself: attempt {last.id} {last.status} while run {snap.run_id} "
            f"was being cancelled or had ended, so the Engine DB queued no retry; {rerun} would run it again.")


def _dependency_verdict(snap: Snapshot, deps: tuple[Dependency, ...]) -> str:
    task, local = snap.task_code, [d for d, e in zip(deps, snap.edges, strict=True) if e.same_pipeline]
    if not local:
        return f"{task} runs as soon as an overseer of run {snap.run_id} has a free slot (nothing holds it back)."
    met, open_ = [d for d in local if d.met], [d for d in local if not d.settled]
    failed = [d for d in local if d.settled and not d.met]
    every = snap.run_condition == "ALL"
    if (every and failed) or (not every and not met and not open_):
        culprit = failed[0]
        blocked = culprit.upstream_status == "FAILED" and culprit.dependency_type != "FAILURE"
        cause = (f"{culprit.upstream} FAILED" if blocked
                 else f"its {culprit.dependency_type} dependency on {culprit.upstream} can never be met "
                      f"({culprit.upstream} ended {culprit.upstream_status})")
        hope = f"; {task} runs only if {culprit.upstream} is rerun and succeeds" if blocked else ""
        return f"Nothing will run {task}: {cause}, so the overseer skips it{hope}."
    if (every and not open_) or (not every and met):
        return f"{task} is ready: an overseer of run {snap.run_id} queues it at its next look."
    waits = " and ".join(f"{d.upstream} {_WANTS.get(d.dependency_type, 'ends')}" for d in open_)
    if not every:
        waits = " or ".join(f"{d.upstream} {_WANTS.get(d.dependency_type, 'ends')}" for d in open_)
    return f"{task} runs once {waits}."


# --- text and JSON -------------------------------------------------------------------------------------------------

def _at(value: datetime | str | None) -> str:
    """A time as text for people; given a datetime, or the ISO text a document carries."""
    moment = as_time(value)
    return "-" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0][:200] if (text or "").strip() else ""


def render(doc: dict[str, Any]) -> str:
    """etl-craft/explanation/1 as text for people, one fact per line, the verdict last."""
    pause, message = doc["pause"], _first_line(doc["task_message"])
    lines = [f"task {doc['task_code']} of pipeline {doc['pipeline_code']} in run {doc['run_id']} (key "
             f"{doc['run_key']}, run date {doc['run_date']})",
             f"run: {doc['run_status']}",
             "pause: none" if pause is None else
             f"pause: paused since {_at(pause['paused_at'])} by {pause['paused_by']}"
             + (f": {pause['reason']}" if pause["reason"] else ""),
             f"task: {doc['task_status']}, {len(doc['attempts'])} attempt(s)" + (f": {message}" if message else "")]
    for a in doc["attempts"]:
        error = _first_line(a["error"])
        lines.append(f"  attempt {a['id']} (try {a['number']}): {a['status']}, queued {_at(a['queued_at'])}, "
                     f"started {_at(a['started_at'])}, ended {_at(a['ended_at'])}"
                     + (f", not before {_at(a['not_before'])}" if a["not_before"] else "")
                     + (f"; error: {error}" if error else ""))
    need = "every dependency must be met" if doc["run_condition"] == "ALL" else "one met dependency is enough"
    lines.append(f"run condition: {doc['run_condition']} ({need})")
    lines.append("dependencies:" + ("" if doc["dependencies"] else " none"))
    for d in doc["dependencies"]:
        state = "met" if d["met"] else ("never met" if d["settled"] else "not met yet")
        lines.append(f"  {d['upstream']} ({d['dependency_type']}): upstream {d['upstream_status']}, {state}")
    lines.append("cross-pipeline decisions:" + ("" if doc["decisions"] else " none"))
    for g in doc["decisions"]:
        lines.append(f"  {g['scope']} gate, {g['upstream']} ({g['dependency_type']}): {g['result']} at "
                     f"{_at(g['decided_at'])}: {g['reason']}")
    lines += _wait_and_retry_lines(doc)
    lines.append(f"=> {doc['verdict']}")
    return "\n".join(lines)


def _wait_and_retry_lines(doc: dict[str, Any]) -> list[str]:
    lines, w, r = [], doc["gate_wait"], doc["retry"]
    if w is not None:
        lines.append(f"gate wait ({w['scope']} gate): "
                     + (f"waiting, look {w['looks']}, next at {_at(w['next_check_at'])}" if w["outcome"] is None
                        else f"{w['outcome']} at {_at(w['ended_at'])} after {w['looks']} look(s)")
                     + f", since {_at(w['first_check_at'])}, at most until {_at(w['wait_until'])}: "
                       f"{w['waiting_for']}")
    scheduled = (f"attempt {r['scheduled_attempt_id']} is due at {_at(r['scheduled_at'])}"
                 if r["scheduled_attempt"] else "none scheduled")
    lines.append(f"retries: {r['retries']} (delay {r['delay_seconds']:g} s, backoff {r['backoff']:g}); {scheduled}")
    return lines


def to_json(ex: Explanation) -> dict[str, Any]:
    """The explanation's JSON document: {"schema": "etl-craft/explanation/1", ...}; times ISO 8601 in UTC."""
    return document(SCHEMA, ex)


# --- reading the snapshot ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ExplainRequest:
    pipeline_code: str
    task_code: str
    run: RunRef = dataclasses.field(default_factory=RunRef)


def read_snapshot(db: EngineDB, request: ExplainRequest) -> Snapshot:
    """Everything explain needs about the task in the run, read in one read transaction (the run is named as the
    operator controls name it: by id, by key, or the pipeline's single run that has not ended)."""
    pipeline = find_pipeline(db, request.pipeline_code)
    run_id = resolve_run(db, pipeline, request.run, "explain")
    with db.read() as conn:
        db.read_snapshot(conn)  # one snapshot for every read below, not one per statement
        task = fetch_one(db, conn, "explain_task", pipeline_id=pipeline.pipeline_id, task_code=request.task_code)
        if task is None:
            rows = fetch_all(db, conn, "control_task_codes", pipeline_id=pipeline.pipeline_id)
            codes = [r["task_code"] for r in rows]
            raise NotFoundError(f"task {request.task_code} is not an active task of pipeline {pipeline.code}; its "
                                f"tasks are {', '.join(codes) or 'none'}")
        task_id = int(task["task_id"])
        run = fetch_one(db, conn, "run_header", run_id=run_id)
        assert run is not None, "resolve_run returns a run of the pipeline"
        pause = fetch_one(db, conn, "run_pipeline_pause", run_id=run_id)
        task_run = fetch_one(db, conn, "explain_task_run", run_id=run_id, task_id=task_id)
        attempts = fetch_all(db, conn, "explain_attempts", run_id=run_id, task_id=task_id)
        edges = fetch_all(db, conn, "explain_dependencies", run_id=run_id, task_id=task_id)
        decisions = fetch_all(db, conn, "explain_decisions", run_id=run_id, task_id=task_id)
        wait = fetch_one(db, conn, "explain_gate_wait", run_id=run_id, task_id=task_id)
    # The policy the Engine DB's retry rule applies (retry_policy), not a reading of the parameters of its own.
    policy = next(p for p in call(db, "retry_policy", run_id=run_id) if p.task_id == task_id)
    # Whether each in-pipeline edge is met is ready_tasks' rule, as task_dependencies applies it.
    states = {d.upstream_task_code: d.state for d in call(db, "task_dependencies", run_id=run_id, task_id=task_id)}
    return Snapshot(
        pipeline.code, request.task_code, run_id, run["run_key"], as_date(run["run_date"]), run["status"],
        run["cancel_requested_at"] is not None,
        None if pause is None else Pause(required_time(pause["paused_at"]), pause["paused_by"], pause["pause_reason"]),
        task["run_condition"], None if task_run is None else task_run["status"],
        None if task_run is None else (task_run["error_message"] or task_run["message"]),
        tuple(Attempt(int(a["attempt_id"]), int(a["attempt_number"]), a["status"], as_time(a["queued_at"]),
                      as_time(a["not_before"]), as_time(a["started_at"]), as_time(a["ended_at"]), a["error_message"],
                      a["retryable"], int(a["retry_number"] or 0))
              for a in attempts),
        tuple(Edge(_edge_name(e), e["dependency_type"], e["same_pipeline"] == "Y", e["upstream_status"],
                   None if e["upstream_rows_written"] is None else int(e["upstream_rows_written"]),
                   states.get(str(e["upstream_task_code"])) if e["same_pipeline"] == "Y" else None)
              for e in edges),
        tuple(_decision(g) for g in decisions),
        policy.retries, float(policy.retry_delay_seconds), float(policy.retry_backoff), db.clock.now(),
        None if wait is None else _gate_wait(wait))


def explain_task(db: EngineDB, request: ExplainRequest) -> Explanation:
    return explain(read_snapshot(db, request))


def _edge_name(row: dict[str, Any]) -> str:
    code = row["upstream_task_code"]
    return code if row["same_pipeline"] == "Y" else f"{row['upstream_pipeline_code']}.{code}"


def _decision(row: dict[str, Any]) -> Decision:
    scope = "pipeline" if row["pipeline_dependency_id"] is not None else "task"
    upstream = row["upstream_pipeline_code"] if scope == "pipeline" else (
        f"{row['upstream_pipeline_code']}.{row['upstream_task_code']}")
    return Decision(scope, str(upstream), str(row["dependency_type"]), row["result"], row["reason"],
                    required_time(row["decided_at"]))


def _gate_wait(row: dict[str, Any]) -> GateWait:
    return GateWait("pipeline" if row["task_id"] is None else "task", row["waiting_for"],
                    required_time(row["first_check_at"]), required_time(row["last_check_at"]),
                    as_time(row["next_check_at"]), required_time(row["wait_until"]), int(row["looks"]), row["outcome"],
                    as_time(row["ended_at"]))
