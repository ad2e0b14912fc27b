"""Screenshots of the catalog's index and a pipeline page in headless Chromium (Debian's package `chromium`), served
by publish-docs under a path prefix and opened from file://; any console message (an error, an uncaught exception)
and any link to a local file that does not exist fails the test.

Chromium is installed by `scripts/install-system-deps.sh browser`, which .ci/run calls; there
ETL_CRAFT_REQUIRE_BROWSER=1 makes a missing browser a failure rather than a skip. ETL_CRAFT_SCREENSHOT_DIR keeps
the pictures.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from etlcraft.catalog_site.build import build_site
from etlcraft.catalog_site.model import read_site_data
from etlcraft.catalog_site.serve import ServeOptions, serve_in_thread
from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.engine.db import EngineDB
from etlcraft.warehouse.catalog import Catalog
from tests.py.catalog.history import Shape, build

#: Chromium's log line for a console message or an uncaught exception (with --enable-logging=stderr --v=0).
CONSOLE = re.compile(r":CONSOLE[:(]\d*\)?\]? ?(.*)")
PREFIX = "/catalog/"


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("ETL_CRAFT_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is missing; run scripts/install-system-deps.sh browser")
        pytest.skip("chromium is not installed (scripts/install-system-deps.sh browser installs it)")
    return found


def shoot(url: str, picture: Path, profile: Path) -> list[str]:
    """Take a screenshot of `url` into `picture`; the console messages Chromium logged while loading it."""
    done = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={profile}",
         "--window-size=1280,900", "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
         f"--screenshot={picture}", url], capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return [m.group(0) for line in done.stderr.splitlines() if (m := CONSOLE.search(line))]


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [v for k, v in attrs if k in ("href", "src") and v]


def broken_links(page: Path, root: Path) -> list[str]:
    """Links of `page` to files of the site that do not exist (the stylesheet, other pages)."""
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    base = page.resolve().as_uri()
    broken = []
    for link in parser.found:
        target = urlsplit(urljoin(base, link))
        if target.scheme == "file" and not Path(target.path).exists():
            broken.append(link)
    return broken


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("catalog")
    db = EngineDB(f"sqlite:///{folder / 'engine.db'}")
    from etlcraft.engine.migrations import migrate

    with acting_as(Actor("tester@pytest", ActorKind.HUMAN)):
        migrate(db)
        build(db, Shape(4, 6, 12))
    data = read_site_data(db, 50)
    sql = {t.task_id: "SELECT id, amount FROM orders" for t in data.metadata.tasks}
    build_site(data, folder / "site", sql, Catalog("duckdb", None, {"main.orders": ("id", "amount")}))
    db.dispose()
    return folder / "site"


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    server, thread = serve_in_thread(ServeOptions(site, port=0, prefix=PREFIX, quiet=True))
    yield f"http://127.0.0.1:{server.server_address[1]}{PREFIX}"
    server.shutdown()
    server.server_close()
    thread.join(5)


def _keep(picture: Path) -> None:
    keep = os.environ.get("ETL_CRAFT_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(picture, Path(keep) / picture.name)


@pytest.mark.parametrize("page", ["index.html", "pipelines/shop.p0001.html", "tasks/shop.p0001.t02.html"])
def test_screenshot__served_under_a_prefix__renders_with_no_console_message(site: Path, served: str, page: str,
                                                                             tmp_path: Path) -> None:
    picture = tmp_path / (page.replace("/", "_").removesuffix(".html") + ".png")
    messages = shoot(served + page, picture, tmp_path / "profile")
    assert messages == [], f"the browser's console reported: {messages}"
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and picture.stat().st_size > 20_000
    assert broken_links(site / page, site) == []
    _keep(picture)


def test_screenshot__from_file_url__renders_with_no_console_message(site: Path, tmp_path: Path) -> None:
    picture = tmp_path / "pipeline_file.png"
    assert shoot((site / "pipelines" / "shop.p0000.html").as_uri(), picture, tmp_path / "profile") == []
    assert picture.stat().st_size > 20_000


def test_screenshot__console_error_on_the_page__is_reported(tmp_path: Path) -> None:
    """The check above can fail: a page that logs an error is caught."""
    page = tmp_path / "noisy.html"
    page.write_text("<html><body><script>console.error('catalog-check')</script>x</body></html>")
    messages = shoot(page.as_uri(), tmp_path / "noisy.png", tmp_path / "profile")
    assert any("catalog-check" in m for m in messages)
