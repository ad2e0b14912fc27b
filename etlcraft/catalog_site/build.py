"""Build the catalog site into a folder, rendering only the pages whose input changed since the last build.

Each page's input (its template's data, see pages.py) is hashed with the templates and the stylesheet; the site's
manifest (`.manifest.json`, a hidden file publish-docs never serves) keeps each page's input and output hashes.
A page whose input hash is unchanged and whose file still holds the recorded output is not rendered again; a page
no longer produced is removed. The reads cost the same whatever changed (model.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import sqlglot
from sqlglot import exp
from sqlglot.schema import MappingSchema

from etlcraft import __version__
from etlcraft.catalog_site.lineage import ColumnLineage, ColumnSource, TaskLineage, task_lineage
from etlcraft.catalog_site.model import SiteData
from etlcraft.catalog_site.pages import Page, PageMaker
from etlcraft.services.metadata import TaskView, dependency_levels
from etlcraft.warehouse.catalog import Catalog

MANIFEST = ".manifest.json"
#: The lineage of the last build and what it was traced from: reused whole while no SQL text, target, dependency or
#: warehouse table changed (tracing is most of a build's time).
LINEAGE_CACHE = ".lineage.json"
MANIFEST_VERSION = 1
STYLESHEET = "static/catalog.css"


@dataclass(frozen=True)
class BuildResult:
    folder: Path
    pages: int  # pages the site holds
    rendered: int  # pages rendered in this build
    written: int  # files whose content changed
    removed: int  # pages of the previous build no longer produced
    unresolved_columns: int  # output columns of SQL tasks with some source not traced


def _package_files() -> dict[str, bytes]:
    root = resources.files("etlcraft.catalog_site")
    found: dict[str, bytes] = {}
    for folder in ("templates", "static"):
        for item in sorted(root.joinpath(folder).iterdir(), key=lambda i: i.name):
            if item.is_file() and not item.name.startswith("."):
                found[f"{folder}/{item.name}"] = item.read_bytes()
    return found


def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("etlcraft.catalog_site", "templates"),
                              undefined=jinja2.StrictUndefined, autoescape=True, trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True)


def resolve_lineage(data: SiteData, sql: Mapping[int, str | None], catalog: Catalog) -> dict[int, TaskLineage]:
    """The lineage of every SQL task with a readable SELECT. Tasks are traced upstream first; a table a task
    makes counts as known from then on, with the columns its SELECT returns when every one is named, so a task
    reading it is traced through it. A task traced before the maker of a table it reads is traced once more."""
    metadata = data.metadata
    order, cyclic = dependency_levels([t.task_id for t in metadata.tasks],
                                      [(e.task_id, e.upstream_task_id) for e in metadata.task_edges])
    by_id = {t.task_id: t for t in metadata.tasks}
    sql_tasks = [by_id[i] for i in [*(i for level in order for i in level), *cyclic]
                 if by_id[i].handler == "SQL" and sql.get(i)]
    schema = catalog.schema()
    found: dict[int, TaskLineage] = {}
    for t in sql_tasks:
        found[t.task_id] = task_lineage(sql[t.task_id] or "", catalog, schema)
        _add_made(catalog, schema, t, found[t.task_id])
    for t in sql_tasks:
        lineage = found[t.task_id]
        if lineage.error is None and any("is not in the warehouse schema" in r for c in lineage.columns
                                         for r in c.unresolved):
            found[t.task_id] = task_lineage(sql[t.task_id] or "", catalog, schema)
    return found


def _lineage_key(data: SiteData, sql: Mapping[int, str | None], catalog: Catalog) -> str:
    tasks = sorted((t.task_id, t.handler, t.target, sql.get(t.task_id)) for t in data.metadata.tasks)
    edges = sorted((e.task_id, e.upstream_task_id) for e in data.metadata.task_edges)
    basis = [__version__, sqlglot.__version__, catalog.dialect, catalog.database, sorted(catalog.tables.items()),
             tasks, edges]
    return hashlib.sha256(json.dumps(basis, default=str).encode()).hexdigest()


def _cached_lineage(folder: Path, data: SiteData, sql: Mapping[int, str | None],
                    catalog: Catalog) -> dict[int, TaskLineage]:
    """resolve_lineage, or the last build's answer when it was traced from the same inputs (LINEAGE_CACHE)."""
    key = _lineage_key(data, sql, catalog)
    try:
        cached = json.loads((folder / LINEAGE_CACHE).read_text(encoding="utf-8"))
        if cached["key"] == key:
            catalog.made.update({k: tuple(v) if v is not None else None for k, v in cached["made"].items()})
            return {int(i): _lineage_from(v) for i, v in cached["lineage"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    found = resolve_lineage(data, sql, catalog)
    document = {"key": key, "made": catalog.made, "lineage": {i: asdict(v) for i, v in found.items()}}
    _write(folder, LINEAGE_CACHE, json.dumps(document).encode())
    return found


def _lineage_from(value: dict[str, Any]) -> TaskLineage:
    columns = tuple(ColumnLineage(c["column"], tuple(ColumnSource(s["table"], s["column"]) for s in c["sources"]),
                                  tuple(c["unresolved"])) for c in value["columns"])
    return TaskLineage(columns, value["error"])


def _add_made(catalog: Catalog, schema: MappingSchema, task: TaskView, lineage: TaskLineage) -> None:
    key = catalog.key((task.target or "").split("."))
    columns = lineage.columns
    if not task.target or key in catalog.tables or not columns or any(c.column == "*" for c in columns):
        return
    names = tuple(c.column for c in columns)
    catalog.made[key] = names
    fold = catalog.dialect == "duckdb"  # as Catalog.schema: DuckDB matches names case-blind
    schema.add_table(exp.to_table(key), {(c.lower() if fold else c): "text" for c in names}, normalize=False)


def build_site(data: SiteData, folder: Path, sql: Mapping[int, str | None], catalog: Catalog,
               title: str = "etl-craft catalog") -> BuildResult:
    """Write the site into `folder` (created when missing); see the module's docstring."""
    folder.mkdir(parents=True, exist_ok=True)
    lineage = _cached_lineage(folder, data, sql, catalog)
    files = _package_files()
    salt = hashlib.sha256(__version__.encode() + b"".join(k.encode() + v for k, v in files.items())).hexdigest()
    old = _read_manifest(folder)
    env = _environment()
    entries: dict[str, dict[str, str]] = {}
    rendered = written = 0
    for path, content in files.items():
        if path.startswith("static/"):
            written += _write(folder, path, content)
    for page in PageMaker(data, lineage, dict(sql), catalog, title).pages():
        entry, did_render, did_write = _page(env, folder, page, salt, old.get(page.path))
        entries[page.path] = entry
        rendered += did_render
        written += did_write
    removed = _remove_stale(folder, old, entries)
    _write(folder, MANIFEST, json.dumps({"version": MANIFEST_VERSION, "generator": f"etl-craft {__version__}",
                                         "pages": entries}, indent=1, sort_keys=True).encode())
    unresolved = sum(1 for lin in lineage.values() for c in lin.columns if not c.resolved)
    return BuildResult(folder, len(entries), rendered, written, removed, unresolved)


def _page(env: jinja2.Environment, folder: Path, page: Page, salt: str,
          before: Mapping[str, str] | None) -> tuple[dict[str, str], bool, bool]:
    digest = hashlib.sha256((salt + page.template + json.dumps(page.context, sort_keys=True, default=str))
                            .encode()).hexdigest()
    target = folder / page.path
    if before and before.get("input") == digest and _hash_of(target) == before.get("output"):
        return dict(before), False, False
    html = env.get_template(page.template).render(**page.context).encode()
    return {"input": digest, "output": hashlib.sha256(html).hexdigest()}, True, _write(folder, page.path, html)


def _hash_of(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _write(folder: Path, path: str, content: bytes) -> bool:
    """Replace the file atomically (a reader being served never sees half a page); False when it is unchanged."""
    target = folder / path
    if _hash_of(target) == hashlib.sha256(content).hexdigest():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, scratch = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)
    os.chmod(scratch, 0o644)
    os.replace(scratch, target)
    return True


def _read_manifest(folder: Path) -> dict[str, Any]:
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(manifest, dict) or manifest.get("version") != MANIFEST_VERSION:
        return {}
    pages = manifest.get("pages")
    return pages if isinstance(pages, dict) else {}


def _remove_stale(folder: Path, old: Mapping[str, Any], entries: Mapping[str, Any]) -> int:
    removed = 0
    for path in old:
        if path not in entries and not Path(path).is_absolute() and ".." not in Path(path).parts:
            (folder / path).unlink(missing_ok=True)
            removed += 1
    return removed
