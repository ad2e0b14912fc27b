"""The e-mail channel: one message to the SMTP relay of the Email section, one attempt per call.

TLS always verifies the relay (B50): `starttls` upgrades a plain connection and `ssl` speaks TLS from the first
byte, both with a context that checks the certificate's chain (against the system's authorities, or those of
Email.ca_file) and its host name. A subject is always one safe line (B20), built inside the same try as the send so
that a header problem is reported like a send problem. Recipients the relay refuses while it accepts others make a
delivery with a warning; a total refusal, a relay that cannot be reached or a refused certificate make a failed one
that the caller may try again (B61). The password never appears in what this module reports.
"""

from __future__ import annotations

import re
import smtplib
import socket
import ssl
import unicodedata
from collections.abc import Sequence
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import formatdate, make_msgid

from etlcraft.alerts.message import AlertMessage, Delivery
from etlcraft.config.loader import EmailConfig

#: The longest subject sent, in characters, the ellipsis included.
SUBJECT_MAX = 200
#: How long connecting, the TLS handshake and each SMTP exchange may take before the attempt fails.
TIMEOUT_SECONDS = 30.0
_WHITESPACE = re.compile(r"\s+")
#: CRLF line ends, and lines up to RFC 5322's limit of 998 characters, so a subject (at most SUBJECT_MAX) is never
#: folded: a long word in it would come back from the fold with a space that was not there.
_POLICY = SMTP.clone(max_line_length=998)


def safe_subject(text: str) -> str:
    """`text` as one safe header line (B20): every run of whitespace (\\r and \\n included) becomes one space, other
    control characters are dropped, and a subject longer than SUBJECT_MAX ends in an ellipsis."""
    line = _WHITESPACE.sub(" ", text)
    line = "".join(c for c in line if unicodedata.category(c)[0] != "C").strip()
    line = _WHITESPACE.sub(" ", line)
    if len(line) > SUBJECT_MAX:
        line = line[: SUBJECT_MAX - 1].rstrip() + "\u2026"
    return line


def tls_context(email: EmailConfig) -> ssl.SSLContext:
    """The context every TLS connection to the relay uses: the certificate's chain and host name are verified,
    against Email.ca_file's authorities when it is set (the loader made it absolute from the project directory)."""
    return ssl.create_default_context(cafile=str(email.ca_file) if email.ca_file is not None else None)


def send_alert(alert: AlertMessage, email: EmailConfig, to: tuple[str, ...], password: str | None) -> Delivery:
    """Send `alert` to `to` through the relay: its kind, pipeline, run and error in the subject (one safe line),
    every field and the full error in the body."""
    return send_email(alert_subject(alert), alert_body(alert), email, to, password)


def alert_subject(alert: AlertMessage) -> str:
    run = alert.run_key or (f"run {alert.pipeline_run_id}" if alert.pipeline_run_id is not None else "")
    task = f" task {alert.task}" if alert.task else ""
    status = f" {alert.status}" if alert.status else ""
    error = f": {alert.error}" if alert.error else ""
    return f"{alert.kind} {alert.project}.{alert.pipeline} {run}{task}{status}{error}"


def alert_body(alert: AlertMessage) -> str:
    rows = [("Alert", f"{alert.kind} (alert {alert.alert_id}, raised {alert.raised_at})"),
            ("Project", alert.project), ("Pipeline", alert.pipeline),
            ("Run", _joined(alert.pipeline_run_id, alert.run_key)), ("Run date", alert.run_date),
            ("Task", _joined(alert.task, alert.task_run_id)), ("Attempt", alert.attempt_id),
            ("Status", alert.status)]
    rows += [(name.upper() if name in ("api", "ui") else name, url) for name, url in sorted(alert.links.items())]
    lines = [f"{name}: {value}" for name, value in rows if value not in (None, "")]
    if alert.error:
        lines += ["", "Error:", alert.error]
    return "\n".join(lines) + "\n"


def _joined(*parts: object) -> str | None:
    shown = [str(p) for p in parts if p not in (None, "")]
    return " / ".join(shown) or None


def send_email(subject: str, body: str, email: EmailConfig, to: Sequence[str], password: str | None) -> Delivery:
    """One attempt to send one message to every address of `to`, in one SMTP transaction."""
    relay = f"{email.host}:{email.port}"
    try:
        message = _message(subject, body, email, to)
        with _connect(email) as smtp:
            if email.username is not None:
                smtp.login(email.username, password or "")
            refused = smtp.send_message(message, from_addr=email.from_address, to_addrs=list(to))
    except Exception as exc:  # every failure is a Delivery: the caller records it and decides on a retry
        # A message that cannot be built (an address or header refused) fails the same way every time.
        built = not isinstance(exc, ValueError | TypeError) or isinstance(exc, smtplib.SMTPException | OSError)
        return Delivery("FAILED", _scrub(_failure(exc, email, relay, to), password), retryable=built)
    accepted = [address for address in to if address not in refused]
    detail = f"the relay {relay} accepted the message for {', '.join(accepted)}"
    if not refused:
        return Delivery("DELIVERED", _scrub(detail, password))
    warning = (f"the relay {relay} refused {len(refused)} of {len(to)} recipients: {_refusals(refused)}; the "
               f"others got the message; correct or remove the refused addresses")
    return Delivery("DELIVERED", _scrub(detail, password), warning=_scrub(warning, password))


def _message(subject: str, body: str, email: EmailConfig, to: Sequence[str]) -> EmailMessage:
    if not to:
        raise ValueError("no recipient was given; expected at least one address")
    message = EmailMessage(policy=_POLICY)
    message["Subject"] = safe_subject(f"{email.subject_prefix} {subject}" if email.subject_prefix else subject)
    message["From"] = email.from_address
    message["To"] = ", ".join(to)
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = make_msgid(domain=email.from_address.rpartition("@")[2] or None)
    message.set_content(body)
    return message


def _connect(email: EmailConfig) -> smtplib.SMTP:
    """An SMTP session with the relay, encrypted as Email.tls_mode says (a failed STARTTLS closes the socket)."""
    if email.tls_mode == "ssl":
        return smtplib.SMTP_SSL(email.host, email.port, timeout=TIMEOUT_SECONDS, context=tls_context(email))
    smtp = smtplib.SMTP(email.host, email.port, timeout=TIMEOUT_SECONDS)
    if email.tls_mode == "starttls":
        try:
            smtp.starttls(context=tls_context(email))
        except BaseException:
            smtp.close()
            raise
    return smtp


def _refusals(refused: dict[str, tuple[int, bytes]]) -> str:
    return ", ".join(f"{address} ({code} {_text(reply)})" for address, (code, reply) in sorted(refused.items()))


def _text(reply: bytes | str) -> str:
    text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
    return " ".join(text.split())


def _failure(exc: Exception, email: EmailConfig, relay: str, to: Sequence[str]) -> str:
    """What went wrong, naming the relay, what it answered or what the network said, what was expected and what
    to do."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return (f"the relay {relay} refused every recipient: {_refusals(exc.recipients)}; nothing was sent; "
                "check the addresses (RECIPIENTS or Email.to) and the relay's rules for this sender")
    if isinstance(exc, ssl.SSLCertVerificationError):
        authorities = (f"the authorities of Email.ca_file {email.ca_file}" if email.ca_file
                       else "the system's authorities")
        return (f"the relay {relay} presented a certificate that was refused ({exc.verify_message}); expected a "
                f"certificate for {email.host} signed by {authorities}; give the relay such a certificate, set "
                "Email.host to the name its certificate bears, or set Email.ca_file to the PEM file of its authority")
    if isinstance(exc, smtplib.SMTPNotSupportedError) and "STARTTLS" in str(exc):
        return (f"the relay {relay} does not offer STARTTLS (tls_mode starttls); expected a relay that upgrades to "
                "TLS; use the relay's TLS port with tls_mode ssl, or a relay that offers STARTTLS")
    if isinstance(exc, smtplib.SMTPNotSupportedError) and "AUTH" in str(exc):
        return (f"the relay {relay} does not offer a login (no AUTH), but Email.username is {email.username}; "
                "remove Email.username and Email.secret, or use the relay's submission port that takes a login")
    if isinstance(exc, smtplib.SMTPAuthenticationError):
        return (f"the relay {relay} refused the login of {email.username} ({exc.smtp_code} {_text(exc.smtp_error)});"
                f" check Email.username and the password in the variable {email.secret}")
    if isinstance(exc, smtplib.SMTPSenderRefused):
        return (f"the relay {relay} refused the sender {email.from_address} ({exc.smtp_code} "
                f"{_text(exc.smtp_error)}); set Email.from_address to an address the relay accepts")
    if isinstance(exc, smtplib.SMTPResponseException):
        return f"the relay {relay} answered {exc.smtp_code} {_text(exc.smtp_error)}; the message was not sent"
    if isinstance(exc, smtplib.SMTPException | ssl.SSLError):
        return f"the session with the relay {relay} failed ({type(exc).__name__}: {exc}); the message was not sent"
    if isinstance(exc, socket.gaierror):
        return (f"the relay's host name {email.host} cannot be resolved ({exc}); check Email.host and the "
                "machine's DNS")
    if isinstance(exc, OSError):
        return (f"the relay {relay} cannot be reached ({type(exc).__name__}: {exc}); expected an SMTP relay "
                "listening there; check that it runs and that Email.host and Email.port name it")
    return (f"the message for {', '.join(to) or 'no recipient'} could not be built or sent through {relay} "
            f"({type(exc).__name__}: {exc}); nothing was sent")


def _scrub(text: str, password: str | None) -> str:
    """`text` without the password, in case a relay or a library ever echoes it."""
    return text.replace(password, "[password]") if password else text


def probe(email: EmailConfig, timeout: float = 10.0) -> str:
    """Connect to the relay as a send would (TLS verified as Email.tls_mode says), greet it and leave without
    logging in or sending: what it answered. Raises OSError or smtplib.SMTPException (ssl errors are OSErrors)."""
    if email.tls_mode == "ssl":
        smtp: smtplib.SMTP = smtplib.SMTP_SSL(email.host, email.port, timeout=timeout, context=tls_context(email))
    else:
        smtp = smtplib.SMTP(email.host, email.port, timeout=timeout)
    with smtp:
        if email.tls_mode == "starttls":
            smtp.starttls(context=tls_context(email))
        code, _ = smtp.ehlo()
        sock = smtp.sock
        version = sock.version() if isinstance(sock, ssl.SSLSocket) else None
    return f"answered EHLO with {code}" + (f" over {version}, its certificate verified" if version else
                                           " without encryption")


def failure_text(exc: Exception, email: EmailConfig) -> str:
    """What a failed probe or send came to, as send_email reports it."""
    return _failure(exc, email, f"{email.host}:{email.port}", ())
