"""Servers on 127.0.0.1 that misbehave the way real ones do, for connection tests: one that accepts TCP connections
and never says a word (a hung server, a half-open firewall), and one that speaks just enough of PostgreSQL's protocol
to ask for a password and refuse it, as a server with password authentication does."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator

#: The 8-byte requests a client sends before its startup message: SSLRequest and GSSENCRequest.
_ENCRYPTION_REQUESTS = (80877103, 80877104)


class _Server:
    """A listening socket on 127.0.0.1 and a thread that hands each connection to `serve`."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.connections: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, name=type(self).__name__, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed
                return
            self.connections.append(conn)
            threading.Thread(target=self._serve_quietly, args=(conn,), daemon=True).start()

    def _serve_quietly(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            self.serve(conn)

    def serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.listener.close()
        for conn in self.connections:
            conn.close()
        self._thread.join(timeout=5)


class SilentServer(_Server):
    """Accepts every connection and never answers: reads whatever comes and sends nothing."""

    def serve(self, conn: socket.socket) -> None:
        while conn.recv(4096):
            pass


class PasswordRefusingServer(_Server):
    """Declines TLS, asks for a clear-text password and refuses it with PostgreSQL's FATAL 28P01, naming the user.
    `passwords` keeps what clients sent, so a test can check that the value appears in no message."""

    def __init__(self) -> None:
        self.passwords: list[str] = []
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        startup = self._startup(conn)
        if startup is None:
            return
        user = startup.get("user", "")
        conn.sendall(b"R" + struct.pack("!ii", 8, 3))  # AuthenticationCleartextPassword
        kind, body = conn.recv(1), _read_body(conn)
        if kind == b"p":
            self.passwords.append(body.rstrip(b"\0").decode("utf-8", "replace"))
        fields = [b"SFATAL", b"VFATAL", b"C28P01", f'Mpassword authentication failed for user "{user}"'.encode()]
        payload = b"".join(f + b"\0" for f in fields) + b"\0"
        conn.sendall(b"E" + struct.pack("!i", len(payload) + 4) + payload)
        conn.close()

    @staticmethod
    def _startup(conn: socket.socket) -> dict[str, str] | None:
        """The startup message's parameters, after declining any encryption request."""
        while True:
            body = _read_body(conn)
            if len(body) < 4:
                return None
            (code,) = struct.unpack("!i", body[:4])
            if code in _ENCRYPTION_REQUESTS:
                conn.sendall(b"N")
                continue
            parts = body[4:].split(b"\0")
            return {parts[i].decode(): parts[i + 1].decode() for i in range(0, len(parts) - 1, 2) if parts[i]}


def _read_body(conn: socket.socket) -> bytes:
    """One length-prefixed message body (the length counts itself)."""
    head = _read_exactly(conn, 4)
    (length,) = struct.unpack("!i", head)
    return _read_exactly(conn, length - 4)


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise OSError("the client closed the connection")
        data += chunk
    return data


@contextlib.contextmanager
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    try:
        yield server
    finally:
        server.close()


@contextlib.contextmanager
def password_refusing_server() -> Iterator[PasswordRefusingServer]:
    server = PasswordRefusingServer()
    try:
        yield server
    finally:
        server.close()
