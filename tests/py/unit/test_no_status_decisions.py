"""Python asks the Engine DB, never decides a status: no code in etlcraft/ compares a run, task-run or attempt status
to choose a transition. The functions of the Engine DB decide (retries, readiness, task commands, settlement,
finalization); Python calls them and shows what they answered.

The scan reads every module's syntax tree and reports each comparison with a status value (a string such as
"FAILED", a tuple or set of them, a member such as RunStatus.SUCCESS, or a terminal set) by module and function.
What is left is display and exit-code code, and the few reads listed in ALLOWED, each with the reason it decides
nothing."""

from __future__ import annotations

import ast
from pathlib import Path

from etlcraft.core.states import state_machine

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "etlcraft"

#: Modules that only show or map outcomes: messages, explanations, exit codes.
DISPLAY = ("etlcraft/cli/", "etlcraft/services/explain.py", "etlcraft/services/status.py")

#: (module, function): why the comparison there decides no status.
ALLOWED = {
    ("etlcraft/supervisor/local.py", "LocalSupervisor._reap"):
        "reads the attempt once its process has gone, to skip a finish_attempt whose compare-and-set would refuse it: "
        "the Engine DB's fence decides",
    ("etlcraft/services/runs.py", "_admitted"):
        "reads the run and admit_run's answer: admit_run decides the admission",
    ("etlcraft/services/runs.py", "_must_be_in_progress"):
        "names the run's status in the message for a run command on an ended run, which start_run refuses anyway",
    ("etlcraft/services/runs.py", "end_run"):
        "leaves an ended run as it is for an orchestrator's __finalize__ step, reporting the status it ended with: "
        "finalize_run refuses an ended run anyway",
    ("etlcraft/services/runs.py", "backfill"):
        "stops a backfill at a date whose run finalize_run ended other than SUCCESS or SKIPPED",
    ("etlcraft/services/runs.py", "backfill_key"):
        "resumes the backfill run of a date that is still active instead of creating another key",
    ("etlcraft/services/control.py", "_task_run_hint"):
        "a hint in a message",
    ("etlcraft/overseer/driver.py", "RunDriver._say_retry"):
        "skips the read for a retry message after a success, which the retry rule never retries",
    ("etlcraft/overseer/server.py", "Server._admit"):
        "reads admit_run's answer: admit_run decides the admission",
    ("etlcraft/overseer/server.py", "Server._work"):
        "reads create_scheduled_runs' answer: it decides which new runs are admitted to the server",
    ("etlcraft/supervisor/pools.py", "LocalPool.submit"):
        "chooses which Engine DB call to make for a submitted attempt (claim_attempt for a QUEUED one, the task "
        "process's start_attempt for one this owner CLAIMED): each refuses an attempt not in that status",
    ("etlcraft/services/handoff.py", "_active"):
        "names the run's status in the message for a run command on an ended run, as _must_be_in_progress does",
}

STATUSES = {s for e in state_machine().entities for s in e.statuses}
STATUS_ENUMS = {e.enum for e in state_machine().entities}
TERMINAL_SETS = {"RUN_TERMINAL", "TASK_RUN_TERMINAL", "ATTEMPT_TERMINAL"}


def _is_status(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in STATUSES
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return bool(node.elts) and all(_is_status(e) for e in node.elts)
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name) and node.value.id in STATUS_ENUMS
    if isinstance(node, ast.Name):
        return node.id in TERMINAL_SETS
    return False


def _names_a_status(node: ast.expr) -> bool:
    """The other side of the comparison: something called status (status, row["attempt_status"], run.status),
    not, say, the outcome queue_attempt returns, whose values include QUEUED."""
    for part in ast.walk(node):
        if isinstance(part, ast.Name) and "status" in part.id.lower():
            return True
        if isinstance(part, ast.Attribute) and "status" in part.attr.lower():
            return True
        if isinstance(part, ast.Constant) and isinstance(part.value, str) and "status" in part.value.lower():
            return True
    return False


def status_comparisons(source: str) -> list[tuple[str, int]]:
    """(function qualified name, line) of each comparison with a status value in `source`."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(child, (*scope, child.name))
                continue
            if isinstance(child, ast.Compare):
                sides = (child.left, *child.comparators)
                if any(_is_status(n) for n in sides) and any(_names_a_status(n) for n in sides):
                    found.append((".".join(scope) or "<module>", child.lineno))
            visit(child, scope)

    visit(ast.parse(source), ())
    return found


def _scan() -> dict[tuple[str, str], list[int]]:
    hits: dict[tuple[str, str], list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(ROOT).as_posix()
        if module == "etlcraft/core/enums.py" or module.startswith(DISPLAY):
            continue
        for function, line in status_comparisons(path.read_text(encoding="utf-8")):
            hits.setdefault((module, function), []).append(line)
    return hits


def test_no_python_code_compares_statuses_to_decide_a_transition() -> None:
    hits = _scan()
    deciding = {f"{module}:{lines[0]} in {function}" for (module, function), lines in hits.items()
                if (module, function) not in ALLOWED}
    assert not deciding, (
        "these compare a status in Python; let an Engine DB function decide (or, for display code, move it to a "
        f"display module or list it in ALLOWED with the reason it decides nothing): {sorted(deciding)}")


def test_the_allow_list_is_kept_small__every_entry_still_matches() -> None:
    stale = sorted(set(ALLOWED) - set(_scan()))
    assert not stale, f"these ALLOWED entries compare no status any more; remove them: {stale}"


def test_the_scan_finds_a_decision_made_in_python() -> None:
    source = '''
class Loop:
    def _retry(self, row):
        if row["status"] in ("FAILED", "TIMED_OUT") and row["retryable"] != "N":
            call(self.db, "queue_attempt", run_id=1, task_id=row["task_id"])
        if row["attempt_status"] == AttemptStatus.LOST:
            pass
        return row["status"] not in TASK_RUN_TERMINAL
'''
    assert status_comparisons(source) == [("Loop._retry", 4), ("Loop._retry", 6), ("Loop._retry", 8)]
    assert status_comparisons('if kind == "warehouse": pass') == []
    assert status_comparisons('if queued.outcome != "QUEUED": pass') == [], "an outcome is not a status"
