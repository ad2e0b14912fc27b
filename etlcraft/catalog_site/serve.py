"""Serve a built catalog site over HTTP (etl-craft publish-docs).

One path check for every request (B65): `site_file` URL-decodes the path once, refuses any segment that starts
with a dot (., .., .manifest.json, an encoded %2e...) and any path that resolves outside the site's folder, and
answers 404 for all of them, for GET and HEAD alike: both methods go through `_Handler._answer`, and nothing else
maps a URL to a file.

The site can live below a path prefix (an organization's reverse proxy routing https://host/prefix/ to this port,
the prefix kept in the forwarded path): requests outside the prefix answer 404 and the prefix itself redirects to
prefix/. The visitor's address is the peer's, unless the peer is one of the configured trusted proxies: only then
is X-Forwarded-For read, from its right end, skipping the trusted hops. `allow` restricts visitors by that address.
"""

from __future__ import annotations

import ipaddress
import mimetypes
import posixpath
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class ServeOptions:
    folder: Path
    host: str = "127.0.0.1"
    port: int = 8765
    prefix: str = "/"  # the path the site lives under, starting and ending with /
    trusted_proxies: tuple[Network, ...] = ()
    allow: tuple[Network, ...] = field(default=())  # empty: every visitor
    quiet: bool = False


def networks(values: Sequence[str], what: str) -> tuple[Network, ...]:
    """Addresses or CIDR blocks, checked; ValueError names the bad one and the expected form."""
    found = []
    for value in values:
        try:
            found.append(ipaddress.ip_network(value.strip(), strict=False))
        except ValueError as exc:
            raise ValueError(f"{what} {value!r} is not an IP address or CIDR block; give one like 10.0.0.5 or "
                             "10.0.0.0/8") from exc
    return tuple(found)


def normal_prefix(path: str) -> str:
    """`/`, or `/a/b/`: the path of an external base URL as the server matches it."""
    parts = [p for p in path.split("/") if p]
    if any(p.startswith(".") or "%" in p for p in parts):
        raise ValueError(f"the path prefix {path!r} has a segment starting with a dot or an encoded character; "
                         "give plain segments such as /catalog/")
    return "/" + "".join(p + "/" for p in parts)


def site_file(root: Path, raw_path: str) -> Path | None:
    """The file of the site that `raw_path` (the request's path, below any prefix, without query) names, or None
    for 404: the one check of B65 (see the module's docstring). A folder names its index.html."""
    decoded = unquote(raw_path, errors="strict") if "%" in raw_path else raw_path
    if "\x00" in decoded or "\\" in decoded:
        return None
    segments = [s for s in decoded.split("/") if s]
    if any(s.startswith(".") for s in segments):
        return None
    normal = posixpath.normpath("/" + "/".join(segments))
    base = root.resolve()
    candidate = (base / normal.lstrip("/")).resolve()
    if candidate != base and base not in candidate.parents:
        return None
    if candidate.is_dir():
        candidate = candidate / "index.html"
    return candidate if candidate.is_file() else None


def client_address(peer: str, forwarded_for: str | None, trusted: Sequence[Network]) -> str:
    """The visitor's address: `peer`, unless it is a trusted proxy and X-Forwarded-For names the hop before it."""
    if not forwarded_for or not _within(peer, trusted):
        return peer
    hops = [h.strip() for h in forwarded_for.split(",") if h.strip()]
    for hop in reversed(hops):
        if not _within(hop, trusted):
            return hop
    return hops[0] if hops else peer


def _within(address: str, blocks: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in block for block in blocks)


class _Handler(BaseHTTPRequestHandler):
    server_version = "etl-craft-catalog"
    options: ServeOptions

    def do_GET(self) -> None:
        self._answer(head=False)

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def _answer(self, head: bool) -> None:
        opts = self.options
        visitor = client_address(self.client_address[0], self.headers.get("X-Forwarded-For"), opts.trusted_proxies)
        if opts.allow and not _within(visitor, opts.allow):
            return self._plain(HTTPStatus.FORBIDDEN, f"{visitor} may not read this catalog\n", head)
        path = urlsplit(self.path).path
        if path + "/" == opts.prefix:
            return self._redirect(opts.prefix, head)
        if not path.startswith(opts.prefix):
            return self._plain(HTTPStatus.NOT_FOUND, "not found\n", head)
        try:
            found = site_file(opts.folder, path[len(opts.prefix) - 1:])
        except UnicodeDecodeError:
            found = None
        if found is None:
            return self._plain(HTTPStatus.NOT_FOUND, "not found\n", head)
        if found.name == "index.html" and not path.endswith("/") and not path.endswith(".html"):
            return self._redirect(path + "/", head)
        self._file(found, head)

    def _file(self, found: Path, head: bool) -> None:
        try:
            body = found.read_bytes()
        except OSError:
            return self._plain(HTTPStatus.NOT_FOUND, "not found\n", head)
        kind = mimetypes.guess_type(found.name)[0] or "application/octet-stream"
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", kind + ("; charset=utf-8" if kind.startswith("text/") else ""))
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _redirect(self, location: str, head: bool) -> None:
        self.send_response(HTTPStatus.MOVED_PERMANENTLY)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _plain(self, status: HTTPStatus, text: str, head: bool) -> None:
        body = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        if not self.options.quiet:
            visitor = client_address(self.client_address[0], self.headers.get("X-Forwarded-For"),
                                     self.options.trusted_proxies)
            super().log_message("%s " + format, visitor, *args)

    def address_string(self) -> str:
        return ""


class CatalogServer(ThreadingHTTPServer):
    daemon_threads = True


def make_server(options: ServeOptions) -> CatalogServer:
    """A server bound to options.host:port (port 0: any free port), not yet serving."""
    handler = type("Handler", (_Handler,), {"options": options})
    return CatalogServer((options.host, options.port), handler)


def serve_in_thread(options: ServeOptions) -> tuple[CatalogServer, threading.Thread]:
    """For tests and embedding: a server serving from a daemon thread; call server.shutdown() to stop it."""
    server = make_server(options)
    thread = threading.Thread(target=server.serve_forever, name="catalog-server", daemon=True)
    thread.start()
    return server, thread
