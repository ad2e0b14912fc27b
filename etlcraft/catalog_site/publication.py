"""The catalog's public address: where visitors reach it, recorded in the site folder so it changes only on purpose.

A team shares one URL; a reverse proxy or a rebuilt folder must not move it silently. The first publish-docs
records the external base URL in `.publication.json` (hidden: never served); a later one with another URL is
refused unless told that the change is meant (--accept-url-change), and the new one is recorded.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from etlcraft.core.errors import UsageError

RECORD = ".publication.json"


def public_url(base_url: str | None, host: str, port: int) -> str:
    """The external base URL, normalised to end with /; without one, the listen address."""
    if not base_url:
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise UsageError(f"--base-url {base_url!r} is not an http or https URL without query or fragment; give "
                         "one like https://docs.example.org/etl-craft/")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}/"


def record_url(folder: Path, url: str, accept_change: bool) -> str | None:
    """Record `url` as the catalog's public address; the one recorded before, when it differs (None otherwise).
    UsageError when it differs and the change is not accepted."""
    path = folder / RECORD
    try:
        before = json.loads(path.read_text(encoding="utf-8")).get("url")
    except (OSError, ValueError, AttributeError):
        before = None
    if before and before != url and not accept_change:
        raise UsageError(f"the catalog in {folder} is published at {before}, not {url}; pass --accept-url-change "
                         "to move it (tell its readers), or give --base-url " + before)
    path.write_text(json.dumps({"url": url, "recorded_at": datetime.now(UTC).isoformat()}, indent=1) + "\n",
                    encoding="utf-8")
    return before if before and before != url else None
