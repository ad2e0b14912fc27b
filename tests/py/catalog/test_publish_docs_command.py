"""`etl-craft publish-docs` as a process: it serves a built site on the port it prints, under the prefix of its
--base-url, refuses hidden paths (B65), records its public URL, refuses to move it silently, and ends on SIGTERM."""

from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.py.support.cli import etl_craft, start_etl_craft

pytestmark = pytest.mark.process


def _port(log: Path, process: subprocess.Popen[bytes]) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"on http://127\.0\.0\.1:(\d+)/", log.read_text())
        if found:
            return int(found.group(1))
        assert process.poll() is None, log.read_text()
        time.sleep(0.1)
    raise AssertionError(f"publish-docs printed no address: {log.read_text()}")


def _status(port: int, method: str, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path)
        return conn.getresponse().status
    finally:
        conn.close()


def test_publish_docs_command__serves_under_prefix_refuses_hidden_paths_and_stops_on_sigterm(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<h1>catalog</h1>")
    (site / ".manifest.json").write_text("{}")
    log = tmp_path / "serve.log"
    process = start_etl_craft("publish-docs", "--dir", str(site), "--port", "0", "--base-url",
                              "https://intranet.example.org/etl/", cwd=tmp_path, log=log)
    try:
        port = _port(log, process)
        assert _status(port, "GET", "/etl/") == 200
        assert _status(port, "HEAD", "/etl/index.html") == 200
        for path in ("/etl/.manifest.json", "/etl/%2emanifest.json", "/etl/a/../.manifest.json", "/etl/%2e%2e/"):
            assert (_status(port, "GET", path), _status(port, "HEAD", path)) == (404, 404), path
        assert _status(port, "GET", "/index.html") == 404
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0, log.read_text()
    recorded = json.loads((site / ".publication.json").read_text())
    assert recorded["url"] == "https://intranet.example.org/etl/"
    moved = etl_craft("publish-docs", "--dir", str(site), "--port", "0", "--base-url", "https://other.example.org/",
                      cwd=tmp_path)
    assert moved.code != 0 and "--accept-url-change" in moved.err


def test_publish_docs_command__no_site__says_to_generate_it(tmp_path: Path) -> None:
    done = etl_craft("publish-docs", "--dir", str(tmp_path / "nothing"), cwd=tmp_path)
    assert done.code != 0 and "etl-craft generate-docs" in done.err
