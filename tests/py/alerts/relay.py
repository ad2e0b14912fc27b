"""A real SMTP relay on loopback for the e-mail tests (aiosmtpd), with certificates made by the test (trustme).

The relay refuses every recipient whose address starts with "nobody" (550) and keeps what it accepted, so a test
reads the message as it arrived. It logs in the user "etl" with the password PASSWORD, over TLS only.
"""

from __future__ import annotations

import email
import email.policy
import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import trustme
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

PASSWORD = "Sentinel-smtp-pw-7c1e-never-shown"


@dataclass
class Received:
    recipients: list[str]
    message: EmailMessage
    raw: bytes = b""  # the message as it arrived, before parsing unfolds its headers


@dataclass
class Recorder:
    """The relay's handler: refuses nobody*@..., keeps every message it accepted."""

    received: list[Received] = field(default_factory=list)

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str,
                          rcpt_options: list[str]) -> str:
        if address.startswith("nobody"):
            return "550 5.1.1 no mailbox here by that name"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        self.received.append(Received(list(envelope.rcpt_tos), parsed, envelope.content))
        return "250 Message accepted for delivery"


def _authenticate(server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
    ok = isinstance(auth_data, LoginPassword) and auth_data.login == b"etl" and \
        auth_data.password == PASSWORD.encode()
    return AuthResult(success=ok, handled=False)  # not handled: aiosmtpd answers 535 itself


def free_port() -> int:
    """A loopback port nothing listens on (bound, read, released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_context(ca: trustme.CA, *names: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(context)
    return context


@dataclass
class Relay:
    host: str
    port: int
    recorder: Recorder


@contextmanager
def relay(context: ssl.SSLContext | None, *, implicit: bool = False, port: int | None = None) -> Iterator[Relay]:
    """A relay on 127.0.0.1 offering STARTTLS with `context`, or speaking TLS from the first byte (`implicit`), or
    (without a context) offering neither; on `port` when given (a relay that comes back where it was), else on a
    free one.
    A login is offered over TLS only (aiosmtpd does not count implicit TLS as TLS, so there it offers it anyway)."""
    recorder = Recorder()
    tls = {} if context is None else {"ssl_context": context} if implicit else {"tls_context": context}
    controller = Controller(recorder, hostname="127.0.0.1", port=port or free_port(), authenticator=_authenticate,
                            auth_require_tls=not implicit, **tls)
    controller.start()
    try:
        yield Relay("127.0.0.1", controller.port, recorder)
    finally:
        controller.stop()


def write_ca(ca: trustme.CA, path: Path) -> Path:
    ca.cert_pem.write_to_path(str(path))
    return path
