"""The webhook and Slack channels against a real HTTP receiver on loopback, which verifies every signature with
verify_signature, answers what each test scripts, and echoes the request's path in its refusals (so that a detail
quoting the receiver's answer would leak the URL's secret path if it were not scrubbed)."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from etlcraft.alerts.message import ALERT_KINDS, AlertMessage
from etlcraft.alerts.webhook import (
    ALERT_ID_HEADER,
    ERROR_MAX,
    SIGNATURE_HEADER,
    SUMMARY_MAX,
    TIMESTAMP_HEADER,
    WebhookURLError,
    check_url,
    document_body,
    document_schema,
    post_alert,
    sign,
    verify_signature,
)

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guides" / "alerts-webhooks.md"
KEY = "whsec-3f9c1e0b7d5a4e2c8b6a9d0f1e2c3b4a"
ERROR = 'relation "stg.orders" does not exist\nLINE 1: select * from stg.orders <b>&</b>\n```\nrésumé'
ALERT = AlertMessage(
    alert_id=7, kind="RUN_FAILED", project="sales", pipeline="orders", pipeline_run_id=42, run_date="2026-03-14",
    run_key="2026-03-14", task="load", task_run_id=420, attempt_id=4201, status="FAILED", error=ERROR,
    raised_at="2026-03-14T06:00:02+00:00",
    links={"ui": "https://etl.example.com/runs/42", "api": "https://etl.example.com/api/v1/runs/42"})


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """What the handler does: answer the scripted statuses first, then verify (when it has a key) and accept."""

    url: str = ""
    key: str | None = KEY
    script: list[int] = field(default_factory=list)
    clock_offset: float = 0.0
    hold: threading.Event | None = None
    #: Refusals announce ten million bytes, send 8 KiB of them and wait until the test ends.
    endless: bool = False
    released: threading.Event = field(default_factory=threading.Event)
    requests: list[Request] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, request: Request) -> tuple[int, str]:
        with self.lock:
            self.requests.append(request)
            if self.script:
                return self.script.pop(0), f"cannot take {request.path} now"
        if self.hold is not None:
            self.hold.wait(10)
            return 200, "late"
        if self.key is not None and not verify_signature(
                request.body, request.headers.get(TIMESTAMP_HEADER.lower(), ""),
                request.headers.get(SIGNATURE_HEADER.lower(), ""), self.key, now=time.time() + self.clock_offset):
            return 401, f"bad signature for {request.path}"
        with self.lock:
            self.accepted.append(json.loads(request.body).get("alert_id", 0) if self.key else 0)
        return 200, "ok"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {name.lower(): value for name, value in self.headers.items()}
            status, text = state.answer(Request(self.path, headers, body))
            try:
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                if state.endless and status >= 400:
                    self.send_header("Content-Length", str(10**7))
                    self.end_headers()
                    self.wfile.write(text.encode() + b"x" * 8192)
                    self.wfile.flush()
                    state.released.wait(10)
                    return
                self.end_headers()
                self.wfile.write(text.encode())
            except (BrokenPipeError, ConnectionResetError):
                pass  # the sender gave up waiting (the timeout tests)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        if state.hold is not None:
            state.hold.set()
        state.released.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def resend(receiver: Receiver, request: Request, body: bytes | None = None, **headers: str) -> int:
    """POST a captured request again, with another body or headers, as an attacker would; the receiver's status."""
    sent = {**request.headers, **{name.replace("_", "-"): value for name, value in headers.items()}}
    sent.pop("content-length", None)
    return httpx.post(receiver.url + request.path, content=request.body if body is None else body,
                      headers=sent).status_code


def test_post_alert__signed_webhook__receiver_verifies_and_accepts(receiver: Receiver) -> None:
    delivery = post_alert(ALERT, receiver.url + "/hooks/etl", KEY)
    assert (delivery.outcome, delivery.retryable) == ("DELIVERED", True), delivery
    assert delivery.detail == f"webhook {receiver.url}: answered HTTP 200 OK"
    assert receiver.accepted == [7]
    (got,) = receiver.requests
    assert got.body == document_body(ALERT) and json.loads(got.body) == ALERT.document()
    assert got.headers["content-type"] == "application/json"
    assert got.headers[ALERT_ID_HEADER.lower()] == "7"
    assert abs(int(got.headers[TIMESTAMP_HEADER.lower()]) - time.time()) < 60
    assert got.headers[SIGNATURE_HEADER.lower()] == sign(got.body, got.headers[TIMESTAMP_HEADER.lower()], KEY)


def test_receiver__tampered_body_or_other_key__refused(receiver: Receiver) -> None:
    assert post_alert(ALERT, receiver.url, KEY).outcome == "DELIVERED"
    (got,) = receiver.requests
    tampered = got.body.replace(b'"status":"FAILED"', b'"status":"SUCCESS"')
    assert tampered != got.body
    assert resend(receiver, got, body=tampered) == 401
    assert resend(receiver, got, body=got.body + b" ") == 401
    forged = sign(tampered, got.headers[TIMESTAMP_HEADER.lower()], "another key")
    assert resend(receiver, got, body=tampered, **{SIGNATURE_HEADER: forged}) == 401
    assert resend(receiver, got) == 200  # the untouched request still passes: the refusals are the tampering's
    assert receiver.accepted == [7, 7]


def test_receiver__replayed_request_or_old_timestamp__refused(receiver: Receiver) -> None:
    assert post_alert(ALERT, receiver.url, KEY).outcome == "DELIVERED"
    (got,) = receiver.requests
    receiver.clock_offset = 301  # the attacker sends the captured request again five minutes later
    assert resend(receiver, got) == 401
    receiver.clock_offset = 0
    old = str(int(time.time()) - 301)  # signed with the right key, but long ago
    assert resend(receiver, got, **{TIMESTAMP_HEADER: old, SIGNATURE_HEADER: sign(got.body, old, KEY)}) == 401
    fresh = str(int(time.time()) - 200)
    assert resend(receiver, got, **{TIMESTAMP_HEADER: fresh, SIGNATURE_HEADER: sign(got.body, fresh, KEY)}) == 200
    assert receiver.accepted == [7, 7]


def test_post_alert__500_three_times_then_200__three_retryable_failures_then_delivered_once(
        receiver: Receiver) -> None:
    receiver.script = [500, 500, 500]
    outcomes = []
    for _ in range(10):
        delivery = post_alert(ALERT, receiver.url, KEY)
        outcomes.append((delivery.outcome, delivery.retryable))
        if delivery.outcome == "DELIVERED":
            break
    assert outcomes == [("FAILED", True)] * 3 + [("DELIVERED", True)]
    assert len(receiver.requests) == 4 and receiver.accepted == [7]
    assert len({r.headers[ALERT_ID_HEADER.lower()] for r in receiver.requests}) == 1


@pytest.mark.parametrize(("status", "retryable"), [(404, False), (400, False), (401, False), (301, False),
                                                   (408, True), (429, True), (503, True)])
def test_post_alert__refusal__retryable_only_when_trying_again_can_help(
        receiver: Receiver, status: int, retryable: bool) -> None:
    receiver.script = [status]
    delivery = post_alert(ALERT, receiver.url + "/hooks/etl", KEY)
    assert (delivery.outcome, delivery.retryable) == ("FAILED", retryable), delivery
    assert f"webhook {receiver.url}: answered HTTP {status}" in delivery.detail
    assert "expected a 2xx answer" in delivery.detail
    assert ("another attempt would fail the same way" in delivery.detail) is not retryable


def test_post_alert__secret_path_and_query__absent_from_every_detail(receiver: Receiver) -> None:
    secret_path, secret_query = "/services/T0001/B0002/XyZsecretPart", "token=qs-secret-value"
    url = f"{receiver.url}{secret_path}?{secret_query}"
    receiver.script = [404, 500]
    details = [post_alert(ALERT, url, KEY).detail, post_alert(ALERT, url, None, slack=True).detail]
    receiver.hold = threading.Event()
    details.append(post_alert(ALERT, url, KEY, timeout=0.3).detail)
    receiver.hold.set()
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{unused.getsockname()[1]}{secret_path}?{secret_query}"
    details.append(post_alert(ALERT, closed, KEY).detail)
    assert all(r.path == f"{secret_path}?{secret_query}" for r in receiver.requests)
    assert "cannot take" in details[0] and "no answer within 0.3 s" in details[2], details
    for detail in details:
        assert "XyZsecretPart" not in detail and "qs-secret-value" not in detail and KEY not in detail, detail
        assert "T0001" not in detail and "services" not in detail, detail


def test_post_alert__endless_refusal__judged_on_its_start_without_reading_it_all(receiver: Receiver) -> None:
    receiver.script, receiver.endless = [503], True
    delivery = post_alert(ALERT, receiver.url + "/hooks/etl", KEY, timeout=2)
    assert (delivery.outcome, delivery.retryable) == ("FAILED", True), delivery
    assert f"webhook {receiver.url}: answered HTTP 503 Service Unavailable (cannot take … now" in delivery.detail
    assert len(delivery.detail) < 400, delivery.detail


def test_post_alert__no_listener_or_no_answer__retryable(receiver: Receiver) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{unused.getsockname()[1]}/hook"
    refused = post_alert(ALERT, closed, KEY)
    assert (refused.outcome, refused.retryable) == ("FAILED", True) and "ConnectError" in refused.detail, refused
    receiver.hold = threading.Event()
    silent = post_alert(ALERT, receiver.url, KEY, timeout=0.3)
    receiver.hold.set()
    assert (silent.outcome, silent.retryable) == ("FAILED", True), silent
    assert silent.detail.startswith(f"webhook {receiver.url}: no answer within 0.3 s"), silent


@pytest.mark.parametrize("url", ["ftp://hooks.example.com/secret", "file:///etc/secret", "hooks.example.com/secret",
                                 "https:///secret", "javascript:alert(1)"])
def test_post_alert__not_an_http_url__final_failure_naming_no_url(url: str) -> None:
    delivery = post_alert(ALERT, url, KEY)
    assert (delivery.outcome, delivery.retryable) == ("FAILED", False), delivery
    assert delivery.detail.startswith("webhook URL: ") and "expected an http:// or https:// URL" in delivery.detail
    assert "secret" not in delivery.detail and "alert(1)" not in delivery.detail
    with pytest.raises(WebhookURLError, match="Slack URL: "):
        check_url(url, "Slack")


def test_post_alert__empty_signing_key__final_failure_nothing_sent(receiver: Receiver) -> None:
    delivery = post_alert(ALERT, receiver.url, "")
    assert (delivery.outcome, delivery.retryable) == ("FAILED", False) and "signing key is empty" in delivery.detail
    assert receiver.requests == []


def test_post_alert__no_signing_key__unsigned_but_timestamped(receiver: Receiver) -> None:
    receiver.key = None
    assert post_alert(ALERT, receiver.url, None).outcome == "DELIVERED"
    (got,) = receiver.requests
    assert SIGNATURE_HEADER.lower() not in got.headers and got.headers[ALERT_ID_HEADER.lower()] == "7"


def test_post_alert__slack__one_line_summary_capped_code_block_links_no_signature(receiver: Receiver) -> None:
    receiver.key = None
    long_error = ERROR + "\n" + "x<" * 3000
    alert = replace(ALERT, pipeline="orders\nwith\ttabs" + "p" * 200, error=long_error)
    assert post_alert(alert, receiver.url + "/services/T/B/X", KEY, slack=True).outcome == "DELIVERED"
    (got,) = receiver.requests
    assert not {TIMESTAMP_HEADER.lower(), SIGNATURE_HEADER.lower(), ALERT_ID_HEADER.lower()} & set(got.headers)
    message = json.loads(got.body)
    assert set(message) == {"text", "blocks"}
    header, code, context = message["blocks"]
    summary = header["text"]["text"]
    assert header["type"] == "header" and header["text"]["type"] == "plain_text"
    assert summary.startswith("sales/orders with tabs") and "\n" not in summary and "\t" not in summary
    assert len(summary) <= SUMMARY_MAX and summary.endswith("…") and message["text"] == summary
    text = code["text"]["text"]
    assert code["type"] == "section" and text.startswith("```relation") and text.endswith("…```")
    assert text.count("```") == 2 and "<" not in text and "&lt;b&gt;&amp;&lt;/b&gt;" in text
    assert len(text) <= ERROR_MAX + 6 and "résumé" in text
    links = context["elements"][0]["text"]
    assert "<https://etl.example.com/runs/42|Run page>" in links and "alert 7 · RUN_FAILED" in links


def test_post_alert__slack_no_error_odd_links__no_code_block_only_safe_links(receiver: Receiver) -> None:
    receiver.key = None
    alert = replace(ALERT, kind="RUN_RECOVERED", status="SUCCESS", error=None, task=None,
                    links={"ui": "javascript:alert(1)", "api": "https://etl.example.com/api?a=1|2>"})
    assert post_alert(alert, receiver.url, None, slack=True).outcome == "DELIVERED"
    header, context = json.loads(receiver.requests[0].body)["blocks"]
    assert header["text"]["text"] == "sales/orders: run recovered, run 42 of 2026-03-14 (SUCCESS)"
    assert "javascript" not in context["elements"][0]["text"]
    assert context["elements"][0]["text"].endswith(" · <https://etl.example.com/api?a=1%7C2&gt;|API>")


@pytest.mark.parametrize(("case", "expected"), [
    ("as signed", True), ("other key", False), ("body changed", False), ("timestamp changed", False),
    ("301 s later", False), ("299 s later", True), ("299 s earlier", True), ("301 s earlier", False),
    ("not digits", False), ("empty key", False), ("no signature", False), ("unknown scheme", False),
    ("among others", True)])
def test_verify_signature__each_case(case: str, expected: bool) -> None:
    body, at = document_body(ALERT), 1_773_468_002
    timestamp, signature, key, now = str(at), sign(body, str(at), KEY), KEY, float(at)
    changes = {"other key": {"key": KEY + "x"}, "body changed": {"body": body[:-1]},
               "timestamp changed": {"timestamp": str(at + 1), "now": at + 1.0}, "301 s later": {"now": at + 301.0},
               "299 s later": {"now": at + 299.0}, "299 s earlier": {"now": at - 299.0},
               "301 s earlier": {"now": at - 301.0}, "not digits": {"timestamp": f" {at}"}, "empty key": {"key": ""},
               "no signature": {"signature": ""}, "unknown scheme": {"signature": "v0=" + signature[3:]},
               "among others": {"signature": f"v2=abc, {signature} ,v1=00"}}
    given = {"body": body, "timestamp": timestamp, "signature": signature, "key": key, "now": now,
             **changes.get(case, {})}
    got = verify_signature(given["body"], given["timestamp"], given["signature"], given["key"], now=given["now"])
    assert got is expected


def test_alert_schema__body_posted_validates_and_schema_matches_the_document(receiver: Receiver) -> None:
    schema = document_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    for alert in (ALERT, replace(ALERT, task=None, pipeline_run_id=None, run_date=None, error=None, links={})):
        assert post_alert(alert, receiver.url, KEY).outcome == "DELIVERED"
        jsonschema.validate(json.loads(receiver.requests[-1].body), schema)
    document = ALERT.document()
    assert set(schema["required"]) == set(schema["properties"]) == set(document)
    for nested in ("run", "task"):
        assert set(schema["properties"][nested]["required"]) == set(document[nested])
    assert schema["properties"]["kind"]["enum"] == list(ALERT_KINDS)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**document, "alert_id": "7"}, schema)


def guide_recipe() -> Any:
    """The guide's ```python block, run on its own (standard library only): its verify_etl_craft_signature."""
    (code,) = re.findall(r"^```python\n(.*?)^```", GUIDE.read_text(encoding="utf-8"), flags=re.S | re.M)
    imports = re.findall(r"^(?:from|import) (\w+)", code, flags=re.M)
    assert set(imports) <= {"hashlib", "hmac", "time"}, imports
    scope: dict[str, Any] = {}
    exec(compile(code, str(GUIDE), "exec"), scope)
    return scope["verify_etl_craft_signature"]


def test_guide_recipe__verifies_a_signed_request_like_verify_signature(receiver: Receiver) -> None:
    recipe = guide_recipe()
    assert post_alert(ALERT, receiver.url, KEY).outcome == "DELIVERED"
    (got,) = receiver.requests
    timestamp, signature = got.headers[TIMESTAMP_HEADER.lower()], got.headers[SIGNATURE_HEADER.lower()]
    assert recipe(got.body, timestamp, signature, KEY) is True
    assert recipe(got.body.replace(b"FAILED", b"SUCCESS"), timestamp, signature, KEY) is False
    assert recipe(got.body, timestamp, signature, KEY, now=int(timestamp) + 301) is False
    at = int(timestamp)
    for body in (got.body, got.body[:-1]):
        for stamp in (timestamp, str(at + 1), "x" + timestamp, ""):
            for offered in (signature, sign(body, stamp, KEY) if stamp.isdigit() else "", f"v0=1,{signature}", ""):
                for key in (KEY, KEY[:-1], ""):
                    for now in (at, at - 300, at + 300.5, at + 600):
                        case = (body, stamp, offered, key)
                        assert recipe(*case, now=now) is verify_signature(*case, now=now), (case, now)
