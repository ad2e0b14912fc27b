"""The webhook and Slack channels: one POST of one alert per call, reported as a Delivery.

A webhook receives the alert's document (schema etl-craft/alert/1, alert.schema.json) as compact JSON with sorted
keys in UTF-8, signed with scheme v1 when a signing key is configured:

    X-Etl-Craft-Timestamp: <unix seconds, decimal digits>
    X-Etl-Craft-Signature: v1=<hex HMAC-SHA256, keyed with the signing key's UTF-8 bytes,
                              over the bytes "<timestamp>.<body>">
    X-Etl-Craft-Alert-Id: <alert_id>   (the same on every attempt: a receiver drops what it has seen)

A receiver recomputes the HMAC over the raw body it received and refuses a timestamp more than five minutes from
its own clock, so a captured request cannot be replayed later (verify_signature; docs/guides/alerts-webhooks.md
gives the same logic in plain Python). The signature header may hold several comma-separated entries; a receiver
accepts the request when one `v1=` entry matches and ignores entries of schemes it does not know.

A Slack incoming-webhook URL receives a Slack message instead, unsigned: the URL itself is the secret. Neither URL
ever appears in a Delivery's detail, only its scheme, host and port. Retrying is the outbox's job, not this one's.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import time
from contextvars import ContextVar
from functools import cache
from importlib import resources
from typing import Any

import httpx

from etlcraft import __version__
from etlcraft.alerts.message import AlertMessage, Delivery

SIGNATURE_SCHEME = "v1"
TIMESTAMP_HEADER = "X-Etl-Craft-Timestamp"
SIGNATURE_HEADER = "X-Etl-Craft-Signature"
ALERT_ID_HEADER = "X-Etl-Craft-Alert-Id"
#: How far a receiver lets a request's timestamp stray from its own clock, either way.
DEFAULT_TOLERANCE_SECONDS = 300
#: Slack's header block takes at most 150 characters; e-mail subjects and logs want one short line too.
SUMMARY_MAX = 150
#: Slack's section text takes at most 3000 characters; the error's code block stays well under it.
ERROR_MAX = 2000
#: How much of a refusing receiver's answer the detail quotes, and how many bytes of it are read at most.
ANSWER_MAX = 200
_ANSWER_READ = 4096

_PHRASES = {"RUN_FAILED": "run failed", "SLA_BREACHED": "SLA breached", "ATTEMPT_LOST": "attempt lost",
            "GATE_WAITING": "gate waiting", "RUN_RECOVERED": "run recovered"}
_BLANKS = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u2028\u2029]+")
_MRKDWN = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_LINK_LABELS = {"ui": "Run page", "api": "API"}


#: The URL this thread is POSTing an alert to, while it does: httpx logs every request's full URL at INFO.
_POSTING: ContextVar[httpx.URL | None] = ContextVar("etl_craft_alert_url", default=None)


class _HideAlertURL(logging.Filter):
    """On the httpx logger: a request line about the alert being POSTed in this thread names the receiver's
    scheme, host and port only, never the path or query that may carry a Slack or webhook token."""

    def filter(self, record: logging.LogRecord) -> bool:
        target = _POSTING.get()
        if target is not None and isinstance(record.args, tuple):
            record.args = tuple(f"{peer(target)}/…" if isinstance(arg, httpx.URL) and arg == target else arg
                                for arg in record.args)
        return True


logging.getLogger("httpx").addFilter(_HideAlertURL())


class WebhookURLError(ValueError):
    """A webhook or Slack URL etl-craft cannot POST to. The message never quotes the URL, which may be secret."""


def check_url(url: str, channel: str = "webhook") -> httpx.URL:
    """The URL parsed, or WebhookURLError when it is not an absolute http(s) URL with a host."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as error:
        raise WebhookURLError(f"{channel} URL: cannot be read as a URL ({type(error).__name__}); expected "
                              "http://host/... or https://host/...; fix the variable that holds it") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        found = f"scheme {parsed.scheme!r}" if parsed.scheme else "no scheme"
        raise WebhookURLError(f"{channel} URL: has {found}{'' if parsed.host else ' and no host'}; expected an "
                              "http:// or https:// URL with a host; fix the variable that holds it")
    return parsed


def peer(url: httpx.URL) -> str:
    """scheme://host[:port] of a URL: all of it that may be shown (the path and query of a Slack URL are secret)."""
    host = f"[{url.host}]" if ":" in url.host else url.host
    return f"{url.scheme}://{host}" + (f":{url.port}" if url.port is not None else "")


def document_body(alert: AlertMessage) -> bytes:
    """The bytes a webhook receives and the signature covers: compact JSON, keys sorted, UTF-8."""
    return json.dumps(alert.document(), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@cache
def document_schema() -> dict[str, Any]:
    """The JSON Schema of etl-craft/alert/1 (etlcraft/alerts/alert.schema.json, shipped with the package)."""
    text = resources.files("etlcraft.alerts").joinpath("alert.schema.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def sign(body: bytes, timestamp: str, key: str) -> str:
    """The X-Etl-Craft-Signature value of scheme v1 for `body` sent at `timestamp`."""
    mac = hmac.new(key.encode("utf-8"), timestamp.encode("ascii") + b"." + body, hashlib.sha256)
    return f"{SIGNATURE_SCHEME}={mac.hexdigest()}"


def verify_signature(body: bytes, timestamp: str, signature: str, key: str, *,
                     tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS, now: float | None = None) -> bool:
    """True when `signature` holds a v1 entry made with `key` over `timestamp` and these exact body bytes, and the
    timestamp lies within `tolerance_seconds` of `now` (default: this clock). Compares in constant time."""
    if not key or not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12:
        return False
    if abs((time.time() if now is None else now) - int(timestamp)) > tolerance_seconds:
        return False
    expected = sign(body, timestamp, key).encode("ascii")
    offered = [entry.strip().encode("utf-8") for entry in signature.split(",")]
    return any([hmac.compare_digest(expected, entry) for entry in offered])


def one_line(text: str, limit: int) -> str:
    """`text` as one line (every run of blanks and control characters one space), at most `limit` characters."""
    flat = _BLANKS.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[:limit - 1].rstrip() + "…"


def summary_line(alert: AlertMessage) -> str:
    """One safe line saying what happened where, e.g. `sales/orders: run failed, run 42 of 2026-03-14, task load`."""
    parts = [f"{alert.project}/{alert.pipeline}: {_PHRASES.get(alert.kind, alert.kind)}"]
    if alert.pipeline_run_id is not None:
        parts.append(f"run {alert.pipeline_run_id}" + (f" of {alert.run_date}" if alert.run_date else ""))
    if alert.task is not None:
        parts.append(f"task {alert.task}")
    line = ", ".join(parts) + (f" ({alert.status})" if alert.status else "")
    return one_line(line, SUMMARY_MAX)


def _mrkdwn(text: str, limit: int) -> str:
    """`text` escaped for Slack's mrkdwn (&, <, >), cut so that the escaped text holds at most `limit` characters."""
    pieces, size = [], 0
    for char in text:
        piece = _MRKDWN.get(char, char)
        if size + len(piece) > limit - 1:
            pieces.append("…")
            break
        pieces.append(piece)
        size += len(piece)
    return "".join(pieces)


def _slack_link(url: str, label: str) -> str | None:
    """A mrkdwn link <url|label>, or None for a link that is not http(s) (never a javascript: or mailto: link)."""
    if not re.match(r"https?://", url):
        return None
    safe = url.replace("|", "%7C")
    return f"<{_mrkdwn(safe, 1000)}|{label}>"


def slack_message(alert: AlertMessage) -> dict[str, Any]:
    """The Slack incoming-webhook message of an alert: the summary line as text and header, the error (if any) in a
    code block capped at ERROR_MAX characters, the facts and the run's links in a context line."""
    summary = summary_line(alert)
    blocks: list[dict[str, Any]] = [{"type": "header", "text": {"type": "plain_text", "text": summary}}]
    if alert.error:
        code = _mrkdwn(alert.error.replace("```", "'''"), ERROR_MAX)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"```{code}```"}})
    facts = [f"alert {alert.alert_id}", alert.kind, f"raised {alert.raised_at}"]
    links = [_slack_link(url, _LINK_LABELS.get(name, _mrkdwn(one_line(name, 40), 80)))
             for name, url in sorted(alert.links.items())]
    context = " · ".join([_mrkdwn(one_line(fact, 200), 400) for fact in facts] + [link for link in links if link])
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": context}]})
    return {"text": _mrkdwn(summary, 3 * SUMMARY_MAX), "blocks": blocks}


def _request(alert: AlertMessage, signing_key: str | None, slack: bool) -> tuple[bytes, dict[str, str]]:
    """The body and headers of one attempt: signed now for a webhook, a plain Slack message for Slack."""
    headers = {"Content-Type": "application/json", "User-Agent": f"etl-craft/{__version__}"}
    if slack:
        body = json.dumps(slack_message(alert), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        return body, headers
    body, timestamp = document_body(alert), str(int(time.time()))
    headers.update({TIMESTAMP_HEADER: timestamp, ALERT_ID_HEADER: str(alert.alert_id)})
    if signing_key is not None:
        headers[SIGNATURE_HEADER] = sign(body, timestamp, signing_key)
    return body, headers


def _scrubbed(text: str, url: str, target: httpx.URL) -> str:
    """`text` (an error or a receiver's answer) on one line, capped, without the URL, its path, query or password."""
    query, userinfo = target.query.decode("ascii", "replace"), target.userinfo.decode("ascii", "replace")
    for secret in sorted({url, str(target), target.raw_path.decode("ascii", "replace"), target.path, query, userinfo},
                         key=len, reverse=True):
        if len(secret) > 1:
            text = text.replace(secret, "…")
    return one_line(text, ANSWER_MAX)


def _answer(response: httpx.Response) -> str:
    """The start of a receiver's answer: at most _ANSWER_READ bytes are read, however much it sends."""
    read = b""
    for chunk in response.iter_bytes():
        read += chunk
        if len(read) >= _ANSWER_READ:
            break
    return read[:_ANSWER_READ].decode(response.encoding or "utf-8", "replace")


def _judge(response: httpx.Response, answer: str, channel: str, url: str, target: httpx.URL) -> Delivery:
    """The Delivery of an answer: 2xx delivered; 408, 429 and 5xx retryable; any other answer final."""
    status = response.status_code
    answered = f"{channel} {peer(target)}: answered HTTP {status} {response.reason_phrase}".rstrip()
    if 200 <= status < 300:
        return Delivery("DELIVERED", answered)
    said = _scrubbed(answer, url, target)
    answered += f" ({said})" if said else ""
    if status in (408, 429) or status >= 500 or status < 200:
        return Delivery("FAILED", f"{answered}; expected a 2xx answer; the receiver is unavailable or busy, "
                                  "another attempt may succeed", retryable=True)
    remedy = ("etl-craft does not follow redirects: configure the URL the redirect points to" if status < 400 else
              "the receiver refused the alert: check the URL" + ("" if channel == "Slack" else
              " and the signing key it verifies with"))
    return Delivery("FAILED", f"{answered}; expected a 2xx answer; {remedy}; another attempt would fail the same way",
                    retryable=False)


def post_alert(alert: AlertMessage, url: str, signing_key: str | None, *, slack: bool = False,
               timeout: float = 10.0) -> Delivery:
    """POST `alert` to `url` once: its signed document (signed when `signing_key` is given), or with `slack` a Slack
    message. Never raises for a delivery problem: a bad URL or an empty key is a final FAILED, a timeout, a refused
    connection, a 408, a 429 or a 5xx a retryable one."""
    channel = "Slack" if slack else "webhook"
    try:
        target = check_url(url, channel)
    except WebhookURLError as refused:
        return Delivery("FAILED", str(refused), retryable=False)
    if signing_key == "" and not slack:
        return Delivery("FAILED", f"{channel} {peer(target)}: the signing key is empty; expected a secret of at "
                                  "least 32 random characters, or none for an unsigned webhook; set it in the "
                                  "variable the alert rule names", retryable=False)
    body, headers = _request(alert, signing_key, slack)
    posting = _POSTING.set(target)
    try:
        with httpx.stream("POST", target, content=body, headers=headers, timeout=timeout,
                          follow_redirects=False) as response:
            answer = "" if response.is_success else _answer(response)
    except httpx.TimeoutException:
        return Delivery("FAILED", f"{channel} {peer(target)}: no answer within {timeout:g} s; expected a 2xx "
                                  "answer; another attempt may succeed", retryable=True)
    except httpx.HTTPError as error:
        said = _scrubbed(str(error) or type(error).__name__, url, target)
        return Delivery("FAILED", f"{channel} {peer(target)}: {type(error).__name__}: {said}; expected a 2xx "
                                  "answer; another attempt may succeed", retryable=True)
    finally:
        _POSTING.reset(posting)
    return _judge(response, answer, channel, url, target)
