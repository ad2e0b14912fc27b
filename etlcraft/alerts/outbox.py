"""The alert outbox: deliver the alerts the Engine DB raised, and record every attempt there.

An alert is raised by the database decision that calls for it (AUD_ALERTS, with one AUD_ALERT_DELIVERIES row per
channel of its rule), in the transaction of that decision. The process that drives runs (`etl-craft run`, the
server) claims the deliveries that are due (claim_alert_deliveries), hands each to its channel as an AlertMessage,
and records what the channel answered (record_alert_delivery): a failure is retried with exponential, capped
backoff until Alerts.max_attempts. A claim expires (Alerts.claim_seconds): a process killed between the claim and
the record leaves the delivery to the next process. A failure to deliver is logged and recorded, never raised into
the loop that drives the data.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from etlcraft.alerts.message import AlertMessage, Delivery
from etlcraft.config.alerts import AlertChannel, AlertsConfig
from etlcraft.config.loader import ProjectConfig, resolve_variable
from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.errors import EtlCraftError, StaleTransitionError
from etlcraft.core.faults import fault_point
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.engine.queries import fetch_one

log = logging.getLogger(__name__)

#: A channel's sender: one delivery attempt of `alert` on `channel`, with the project's configuration (for the
#: Email relay and the variables that hold secrets).
Sender = Callable[[AlertMessage, AlertChannel, ProjectConfig], Delivery]


def _send_email(alert: AlertMessage, channel: AlertChannel, config: ProjectConfig) -> Delivery:
    from etlcraft.alerts.email import send_alert

    if config.email is None:
        return Delivery("FAILED", f"channel {channel.name} is an email channel, but craft-connector.yml has no Email "
                                  "section (the relay); add it")
    return send_alert(alert, config.email, channel.to or config.email.to, config.secret_value(config.email))


def _post(alert: AlertMessage, channel: AlertChannel, config: ProjectConfig) -> Delivery:
    from etlcraft.alerts.webhook import post_alert

    url = channel.url or resolve_variable(channel.url_variable or "", config.env, config.project_dir)
    key = None if channel.signing_key_variable is None else resolve_variable(
        channel.signing_key_variable, config.env, config.project_dir)
    timeout = float(config.alerts.timeout_seconds if config.alerts else 10)
    return post_alert(alert, url, key, slack=channel.type == "slack", timeout=timeout)


#: The real channels by type; tests inject their own.
SENDERS: Mapping[str, Sender] = {"email": _send_email, "webhook": _post, "slack": _post}


def retry_after(settings: AlertsConfig, attempts_made: int) -> int | None:
    """Seconds until the next attempt after `attempts_made` attempts failed: Alerts.retry_delay_seconds, multiplied
    by Alerts.retry_backoff for each further failure, capped at Alerts.retry_max_delay_seconds; None once
    Alerts.max_attempts is reached (the delivery then fails for good)."""
    if attempts_made >= settings.max_attempts:
        return None
    delay = settings.retry_delay_seconds * settings.retry_backoff ** max(0, attempts_made - 1)
    return int(min(delay, settings.retry_max_delay_seconds))


@dataclass(frozen=True)
class Attempted:
    """One delivery attempt the outbox made: what it recorded."""

    delivery_id: int
    alert_id: int
    channel: str
    outcome: str
    detail: str
    status: str | None  # the delivery's status after the record; None when the record was refused (stale claim)


class Outbox:
    """Claims, sends and records the due deliveries of one Engine DB as `owner_id`."""

    def __init__(self, db: EngineDB, config: ProjectConfig, owner_id: str,
                 senders: Mapping[str, Sender] | None = None) -> None:
        self.db, self.config, self.owner_id = db, config, owner_id
        self.settings = config.alerts or AlertsConfig()
        self.senders = SENDERS if senders is None else senders

    def deliver_due(self, max_deliveries: int = 20) -> list[Attempted]:
        """One pass: claim up to `max_deliveries` due deliveries, send each, record each outcome."""
        claimed = call(self.db, "claim_alert_deliveries", owner_id=self.owner_id, max_deliveries=max_deliveries,
                       lease_seconds=self.settings.claim_seconds)
        fault_point("alerts_claimed")
        return [self._deliver(row) for row in claimed]

    def _deliver(self, row: Any) -> Attempted:
        delivery = self._attempt(int(row.alert_id), str(row.channel))
        attempts = int(row.attempts) + 1
        retry = retry_after(self.settings, attempts) if delivery.outcome == "FAILED" and delivery.retryable else None
        try:
            recorded = call(self.db, "record_alert_delivery", delivery_id=row.delivery_id, owner_id=self.owner_id,
                            outcome=delivery.outcome, detail=delivery.detail[:4000], warning=delivery.warning,
                            retry_after_seconds=retry)[0]
        except StaleTransitionError as exc:
            log.warning("alert %s on channel %s: %s", row.alert_id, row.channel, exc)
            return Attempted(int(row.delivery_id), int(row.alert_id), str(row.channel), delivery.outcome,
                             delivery.detail, None)
        status = str(recorded.delivery_status)
        if delivery.outcome == "FAILED":
            then = f"trying again in {retry} s" if retry is not None else f"failed for good after {attempts} attempt(s)"
            log.error("alert %s could not be delivered on channel %s (attempt %d): %s; %s", row.alert_id,
                      row.channel, attempts, delivery.detail, then)
        elif delivery.warning:
            log.warning("alert %s delivered on channel %s with a warning: %s", row.alert_id, row.channel,
                        delivery.warning)
        return Attempted(int(row.delivery_id), int(row.alert_id), str(row.channel), delivery.outcome,
                         delivery.detail, status)

    def _attempt(self, alert_id: int, channel_name: str) -> Delivery:
        """One attempt on the channel; whatever goes wrong becomes a FAILED Delivery naming it."""
        channel = self.settings.channels.get(channel_name)
        if channel is None:
            known = ", ".join(sorted(self.settings.channels)) or "none"
            return Delivery("FAILED", f"channel {channel_name} is not in Alerts.channels of craft-connector.yml "
                                      f"(configured: {known}); add it, or change the alert rule's CHANNELS")
        sender = self.senders.get(channel.type)
        if sender is None:
            return Delivery("FAILED", f"channel {channel_name} has type {channel.type}, which has no sender here")
        try:
            delivery = sender(self.message(alert_id), channel, self.config)
        except EtlCraftError as exc:
            delivery = Delivery("FAILED", f"channel {channel_name}: {exc}")
        except Exception as exc:  # a channel's bug must not stop the outbox or the run
            delivery = Delivery("FAILED", f"channel {channel_name}: {type(exc).__name__}: {exc}")
        return self._scrubbed(delivery, channel)

    def _scrubbed(self, delivery: Delivery, channel: AlertChannel) -> Delivery:
        """The delivery with the channel's secrets (a URL that carries a token, a signing key) masked wherever they
        appear in what is recorded and logged: an error text from a library may quote the URL it called."""
        secrets = []
        for name in (channel.url_variable, channel.signing_key_variable):
            if name:
                try:
                    secrets.append(resolve_variable(name, self.config.env, self.config.project_dir))
                except EtlCraftError:
                    continue
        detail, warning = delivery.detail, delivery.warning
        for secret in filter(None, secrets):
            detail = detail.replace(secret, f"[{channel.name}: secret]")
            warning = None if warning is None else warning.replace(secret, f"[{channel.name}: secret]")
        return Delivery(delivery.outcome, detail, warning, delivery.retryable)

    def message(self, alert_id: int) -> AlertMessage:
        """The alert as channels render it, with links to the run in the HTTP API when its address is known."""
        with self.db.read() as conn:
            row = fetch_one(self.db, conn, "alert_message", alert_id=alert_id)
        if row is None:
            raise EtlCraftError(f"alert {alert_id} does not exist")
        address = self.config.orchestration.api_address
        links = {"api": f"http://{address}/api/v1/runs/{row['pipeline_run_id']}"} if address else {}
        return AlertMessage(
            alert_id=int(row["alert_id"]), kind=str(row["alert_kind"]), project=str(row["project_code"]),
            pipeline=str(row["pipeline_code"]), pipeline_run_id=int(row["pipeline_run_id"]),
            run_date=_text(row["run_date"]), run_key=row["run_key"], task=row["task_code"],
            task_run_id=row["task_run_id"], attempt_id=row["attempt_id"], status=row["status"],
            error=row["error_message"], raised_at=_text(row["raised_at"]) or "", links=links)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.isoformat() if isinstance(value, datetime | date) else str(value)


def sweep_overdue(db: EngineDB) -> None:
    """Raise the alerts that time alone calls for: runs still running past their SLA (breach_slas) and gate waits
    past their rule's threshold (raise_overdue_alerts)."""
    call(db, "breach_slas")
    call(db, "raise_overdue_alerts")


def alert_sender(db: EngineDB, config: ProjectConfig, owner_id: str, actor: Actor, *, sweep: bool,
                 senders: Mapping[str, Sender] | None = None) -> AlertSender:
    """The alert sender of a process that drives runs: a pass every heartbeat (Orchestration.Heartbeat_seconds)."""
    return AlertSender(Outbox(db, config, owner_id, senders), float(config.orchestration.heartbeat_seconds), actor,
                       sweep)


class AlertSender(threading.Thread):
    """Delivers alerts beside the loop that drives runs, on its own thread, so a slow relay never holds up a task:
    every `interval` seconds, and at once when poked. stop() makes a last pass, bounded by the channels' timeouts."""

    def __init__(self, outbox: Outbox, interval: float, actor: Actor, sweep: bool = False) -> None:
        super().__init__(name="etl-craft alerts", daemon=True)
        self.outbox, self.interval, self.actor, self.sweep = outbox, interval, actor, sweep
        self.stopping = threading.Event()
        self.woken = threading.Event()

    def run(self) -> None:
        with acting_as(self.actor):
            while not self.stopping.is_set():
                self.pass_once()
                self.woken.wait(self.interval)
                self.woken.clear()

    def poke(self) -> None:
        self.woken.set()

    def pass_once(self) -> list[Attempted]:
        """One delivery pass (with `sweep`, after raising the alerts that time calls for: SLAs breached while runs
        run, gate waits past their rule's threshold); an error (the Engine DB unreachable) is logged, and the next
        pass tries again."""
        try:
            if self.sweep:
                sweep_overdue(self.outbox.db)
            return self.outbox.deliver_due()
        except EtlCraftError as exc:
            log.warning("alert delivery pass failed: %s; the next pass tries again", exc)
        except Exception:  # never raised into the loop that runs the data
            log.exception("alert delivery pass failed; the next pass tries again")
        return []

    def stop(self, last_pass: bool = True) -> None:
        self.stopping.set()
        self.woken.set()
        self.join(timeout=self.outbox.settings.timeout_seconds * 3 + 5)
        if last_pass:
            with acting_as(self.actor):
                self.pass_once()
