"""What every alert channel takes and gives back: one AlertMessage in, one Delivery out.

The Engine DB decides that an alert is due (a row of AUD_ALERTS, written in the transaction of the decision); the
process that drives the run reads it as an AlertMessage and hands it to each channel of its rule (email, webhook,
Slack). A channel makes one delivery attempt and reports a Delivery; retrying with backoff is the outbox's job, so
that every attempt is recorded in the Engine DB.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

#: The kinds of alert the Engine DB raises.
ALERT_KINDS = ("RUN_FAILED", "SLA_BREACHED", "ATTEMPT_LOST", "GATE_WAITING", "RUN_RECOVERED")


@dataclass(frozen=True)
class AlertMessage:
    """One alert, as the channels render it. Text fields hold no secret: they come from the Engine DB's run and
    attempt rows, whose errors were scrubbed before they were stored."""

    alert_id: int
    kind: str
    project: str
    pipeline: str
    pipeline_run_id: int | None
    run_date: str | None
    run_key: str | None
    task: str | None
    task_run_id: int | None
    attempt_id: int | None
    status: str | None
    error: str | None
    raised_at: str
    #: Where a person looks next: "api" (the run's API URL), "ui" (its page), when the server's address is known.
    links: Mapping[str, str] = field(default_factory=dict)

    def document(self) -> dict[str, Any]:
        """The JSON document a webhook receives (schema etl-craft/alert/1)."""
        return {
            "schema": "etl-craft/alert/1",
            "alert_id": self.alert_id,
            "kind": self.kind,
            "project": self.project,
            "pipeline": self.pipeline,
            "run": {"pipeline_run_id": self.pipeline_run_id, "run_date": self.run_date, "run_key": self.run_key,
                    "status": self.status},
            "task": None if self.task is None else {"task": self.task, "task_run_id": self.task_run_id,
                                                     "attempt_id": self.attempt_id},
            "error": self.error,
            "raised_at": self.raised_at,
            "links": dict(self.links),
        }


@dataclass(frozen=True)
class Delivery:
    """What one delivery attempt on one channel came to. `detail` names the channel's peer and what it answered,
    without a secret (no password, no signing key, no Slack URL). `warning` is set when the delivery counts as made
    but something was refused on the way (some recipients of an e-mail). `retryable` is False when trying again
    cannot help (a refused certificate still counts as retryable: the relay may be fixed)."""

    outcome: Literal["DELIVERED", "FAILED"]
    detail: str
    warning: str | None = None
    retryable: bool = True
