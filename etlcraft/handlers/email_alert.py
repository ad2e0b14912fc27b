"""EMAIL_ALERT tasks: an e-mail to the task's RECIPIENTS through the relay of the Email section.

For teams that model alerts in their DAG (a task that depends on the data tasks with FAILURE or ALWAYS edges). The
task's parameters say what is sent: RECIPIENTS (required), SUBJECT and BODY, where $$pipeline_id,
$$pipeline_code, $$pipeline_run_id, $$task_run_id, $$task_code and $$run_date are replaced with the run's values.
Without SUBJECT the subject names the pipeline, the run and the tasks that failed so far with the first one's error
(one safe line, B20); without BODY the body lists every task of the run with its status and its full error.

Recipients the relay refuses while it accepts others are written to the task's log as a WARNING and the task
succeeds; a total refusal, a refused certificate or a relay that cannot be reached fails the attempt, which the
task's RETRIES may try again (B61).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping

from etlcraft.alerts.email import send_email
from etlcraft.core import parameters as params
from etlcraft.core.errors import ConfigurationError, EtlCraftError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.queries import fetch_all
from etlcraft.handlers.context import HandlerResult, TaskContext

#: The $$name tokens SUBJECT and BODY may use.
TOKENS = ("pipeline_id", "pipeline_code", "pipeline_run_id", "task_run_id", "task_code", "run_date")
_TOKEN = re.compile(r"\$\$([A-Za-z_][A-Za-z0-9_]*)")
_FAILED = ("FAILED", "TIMED_OUT", "LOST", "CANCELLED")


class EmailNotSentError(EtlCraftError):
    """The relay took the message for none of its recipients; the task's RETRIES may try again (unless the
    message itself cannot be built: `retryable` is then False)."""

    retryable: bool = True


def run_email_alert(context: TaskContext, engine_db: EngineDB) -> HandlerResult:
    """Send the task's e-mail: success when the relay accepted it for at least one recipient."""
    email = context.config.email
    if email is None:
        raise ConfigurationError(
            f"task {context.task_code} is an EMAIL_ALERT task, but {context.project_dir / 'craft-connector.yml'} "
            "has no Email section; expected the SMTP relay there (host, port, tls_mode, from_address, to); add it "
            "(see docs/guides/alerts-email.md)")
    recipients = _recipients(context)
    values = _values(context)
    tasks = _run_tasks(context, engine_db)
    subject = _filled(context, "SUBJECT", values) or _default_subject(context, tasks)
    body = _filled(context, "BODY", values) or _default_body(context, tasks)
    delivery = send_email(subject, body, email, recipients, context.config.secret_value(email))
    if delivery.outcome != "DELIVERED":
        error = EmailNotSentError(f"task {context.task_code}: the alert e-mail was not sent: {delivery.detail}")
        error.retryable = delivery.retryable
        raise error
    if delivery.warning:
        print(f"etl-craft: WARNING: task {context.task_code}: {delivery.warning}", file=sys.stderr, flush=True)
    return HandlerResult(message=f"etl-craft: task {context.task_code}: {delivery.detail}")


def _recipients(context: TaskContext) -> tuple[str, ...]:
    spec = params.BY_NAME["RECIPIENTS"]
    raw = context.parameters.get("RECIPIENTS")
    problem = spec.check(raw)
    if problem is not None:
        raise ConfigurationError(
            f"task {context.task_code}: parameter RECIPIENTS {problem}; expected {spec.expected}; add or correct its "
            "CFG_TASK_PARAMETERS row in a new project migration (etl-craft validate lists such problems)")
    assert raw is not None
    return tuple(spec.parse(raw))


def _values(context: TaskContext) -> dict[str, str]:
    return {"pipeline_id": str(context.pipeline_id), "pipeline_code": context.pipeline_code,
            "pipeline_run_id": str(context.pipeline_run_id), "task_run_id": str(context.task_run_id),
            "task_code": context.task_code, "run_date": context.run_date.isoformat()}


def unknown_tokens(text: str) -> list[str]:
    """The $$name tokens of `text` that SUBJECT and BODY do not know (names match in any case)."""
    return [m.group(0) for m in _TOKEN.finditer(text) if m.group(1).lower() not in TOKENS]


def fill(text: str, values: Mapping[str, str]) -> str:
    """`text` with every known $$name token replaced by its value."""
    return _TOKEN.sub(lambda m: values.get(m.group(1).lower(), m.group(0)), text)


def _filled(context: TaskContext, name: str, values: Mapping[str, str]) -> str | None:
    raw = context.parameters.get(name)
    if raw is None or not raw.strip():
        return None
    unknown = unknown_tokens(raw)
    if unknown:
        raise ConfigurationError(
            f"task {context.task_code}: parameter {name} uses {', '.join(unknown)}, which "
            f"{'has' if len(unknown) == 1 else 'have'} no value; expected "
            f"{', '.join('$$' + t for t in TOKENS)}; correct its CFG_TASK_PARAMETERS row in a new project migration")
    return fill(raw, values)


def _run_tasks(context: TaskContext, engine_db: EngineDB) -> list[Mapping[str, object]]:
    """The run's other tasks with their status and error so far, in task-code order."""
    with engine_db.read() as conn:
        rows = fetch_all(engine_db, conn, "run_task_rows", run_id=context.pipeline_run_id)
    return [r for r in rows if r["task_id"] != context.task_id]


def _default_subject(context: TaskContext, tasks: list[Mapping[str, object]]) -> str:
    head = f"{context.pipeline_code} run {context.pipeline_run_id} ({context.run_date.isoformat()})"
    failed = [t for t in tasks if t["status"] in _FAILED]
    if not failed:
        return f"{head}: no task failed"
    first = failed[0]
    error = first["error_message"] or first["message"] or ""
    return f"{head}: {len(failed)} failed ({', '.join(str(t['task_code']) for t in failed)}): {error}"


def _default_body(context: TaskContext, tasks: list[Mapping[str, object]]) -> str:
    lines = [f"Pipeline: {context.pipeline_code} (PIPELINE_ID {context.pipeline_id})",
             f"Run: {context.pipeline_run_id}, run date {context.run_date.isoformat()}",
             f"Sent by task {context.task_code} (task run {context.task_run_id}, attempt {context.attempt_id})",
             "", "Tasks so far:"]
    for task in tasks:
        lines.append(f"- {task['task_code']}: {task['status'] or 'NOT RUN'}")
        error = task["error_message"] or (task["message"] if task["status"] in _FAILED else None)
        if error:
            lines.extend(f"    {line}" for line in str(error).splitlines())
    return "\n".join(lines) + "\n"
