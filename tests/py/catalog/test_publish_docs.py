"""publish-docs: one path check for every request (B65), a site under a path prefix, forwarded addresses believed
only from configured proxies, and a public URL that changes only on purpose."""

from __future__ import annotations

import http.client
import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest

from etlcraft.catalog_site.publication import public_url, record_url
from etlcraft.catalog_site.serve import CatalogServer, ServeOptions, client_address, serve_in_thread, site_file
from etlcraft.core.errors import UsageError

HIDDEN = ["/.x", "/%2ex", "/a/../.x", "/%2e%2e/", "/%2E%2E/%2e%2e/etc/passwd", "/a/%2e%2e/.x", "/.manifest.json",
          "/static/..%2f.x", "/%2e/index.html", "/..", "/a/..%5c.x"]


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "a").mkdir(parents=True)
    (root / "static").mkdir()
    (root / "index.html").write_text("<h1>catalog</h1>")
    (root / "a" / "index.html").write_text("<h1>a</h1>")
    (root / "static" / "catalog.css").write_text("body {}")
    (root / ".x").write_text("hidden")
    (root / ".manifest.json").write_text("{}")
    (tmp_path / ".x").write_text("outside")
    return root


def _serve(options: ServeOptions) -> Iterator[CatalogServer]:
    server, thread = serve_in_thread(options)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def server(site: Path) -> Iterator[CatalogServer]:
    yield from _serve(ServeOptions(site, port=0, quiet=True))


@pytest.fixture
def prefixed(site: Path) -> Iterator[CatalogServer]:
    yield from _serve(ServeOptions(site, port=0, prefix="/docs/etl/", quiet=True))


def _ask(server: CatalogServer, method: str, path: str,
         headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
    """Send `path` exactly as written (http.client does not normalise it, as a browser would)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        answer = conn.getresponse()
        return answer.status, answer.read(), dict(answer.getheaders())
    finally:
        conn.close()


@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize("path", HIDDEN)
def test_b65_hidden_and_outside_paths_answer_404_for_get_and_head(server: CatalogServer, method: str,
                                                                    path: str) -> None:
    status, body, _ = _ask(server, method, path)
    assert status == 404, f"{method} {path} answered {status}"
    assert b"hidden" not in body and b"outside" not in body


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_b65_hidden_paths_under_a_prefix_answer_404(prefixed: CatalogServer, method: str) -> None:
    for path in HIDDEN:
        assert _ask(prefixed, method, "/docs/etl" + path)[0] == 404, path


def test_site_file__every_refused_path_is_none_and_pages_are_found(site: Path) -> None:
    assert [p for p in HIDDEN if site_file(site, p) is not None] == []
    assert site_file(site, "/") == site / "index.html"
    assert site_file(site, "/a/") == site / "a" / "index.html"
    assert site_file(site, "/static/catalog.css") == site / "static" / "catalog.css"


def test_publish__pages_and_assets__served_with_types_and_head_has_no_body(server: CatalogServer) -> None:
    status, body, headers = _ask(server, "GET", "/")
    assert (status, body) == (200, b"<h1>catalog</h1>")
    assert headers["Content-Type"].startswith("text/html")
    status, body, headers = _ask(server, "HEAD", "/static/catalog.css")
    assert (status, body, headers["Content-Length"]) == (200, b"", "7")
    assert _ask(server, "GET", "/a")[0] == 301
    assert _ask(server, "GET", "/missing.html")[0] == 404


def test_publish__under_a_prefix__pages_assets_and_redirects_work_and_other_paths_404(prefixed: CatalogServer) -> None:
    assert _ask(prefixed, "GET", "/docs/etl/")[:2] == (200, b"<h1>catalog</h1>")
    assert _ask(prefixed, "GET", "/docs/etl/static/catalog.css")[:2] == (200, b"body {}")
    status, _, headers = _ask(prefixed, "GET", "/docs/etl")
    assert (status, headers["Location"]) == (301, "/docs/etl/")
    status, _, headers = _ask(prefixed, "GET", "/docs/etl/a")
    assert (status, headers["Location"]) == (301, "/docs/etl/a/")
    assert _ask(prefixed, "GET", "/index.html")[0] == 404
    assert _ask(prefixed, "GET", "/docs/etlx/index.html")[0] == 404


def test_forwarded_for__believed_only_from_a_trusted_proxy() -> None:
    proxies = (ipaddress.ip_network("10.0.0.0/24"),)
    assert client_address("10.0.0.7", "203.0.113.9", proxies) == "203.0.113.9"
    assert client_address("10.0.0.7", "198.51.100.1, 203.0.113.9, 10.0.0.3", proxies) == "203.0.113.9"
    assert client_address("192.0.2.50", "10.0.0.99", proxies) == "192.0.2.50"  # a direct client cannot spoof
    assert client_address("10.0.0.7", None, proxies) == "10.0.0.7"


def test_allow__visitor_judged_by_the_address_a_trusted_proxy_forwards(site: Path) -> None:
    options = ServeOptions(site, port=0, quiet=True, trusted_proxies=(ipaddress.ip_network("127.0.0.1/32"),),
                           allow=(ipaddress.ip_network("192.0.2.0/24"),))
    for server in _serve(options):
        assert _ask(server, "GET", "/", {"X-Forwarded-For": "192.0.2.10"})[0] == 200
        assert _ask(server, "GET", "/", {"X-Forwarded-For": "203.0.113.1"})[0] == 403
        assert _ask(server, "GET", "/")[0] == 403  # loopback itself is not allowed


def test_allow__untrusted_peer_cannot_get_in_by_forging_forwarded_for(site: Path) -> None:
    options = ServeOptions(site, port=0, quiet=True, allow=(ipaddress.ip_network("192.0.2.0/24"),))
    for server in _serve(options):
        assert _ask(server, "GET", "/", {"X-Forwarded-For": "192.0.2.10"})[0] == 403


def test_public_url__recorded_and_a_change_refused_unless_accepted(site: Path) -> None:
    assert public_url(None, "127.0.0.1", 8765) == "http://127.0.0.1:8765/"
    first = public_url("https://docs.example.org/etl", "127.0.0.1", 8765)
    assert first == "https://docs.example.org/etl/"
    assert record_url(site, first, accept_change=False) is None
    assert record_url(site, first, accept_change=False) is None
    moved = "https://catalog.example.org/"
    with pytest.raises(UsageError, match="--accept-url-change"):
        record_url(site, moved, accept_change=False)
    assert record_url(site, moved, accept_change=True) == first
    with pytest.raises(UsageError, match="not an http or https URL"):
        public_url("ftp://example.org/", "127.0.0.1", 1)
