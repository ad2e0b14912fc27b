"""etl-craft bundle publish and list: a project's files uploaded to the artifact store and recorded as a bundle
that new runs pin (etlcraft.engine.bundles; record_bundle in sql/functions/039_bundles.sql.j2)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from etlcraft.config.loader import ProjectConfig
from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.errors import ConfigurationError
from etlcraft.engine.bundles import build_manifest, open_store
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.engine.queries import fetch_all
from etlcraft.services.projects import resolve_project
from etlcraft.services.values import as_time, plain


@dataclass(frozen=True)
class BundleView:
    bundle_id: int
    manifest_sha256: str
    file_count: int
    total_bytes: int
    store_url: str
    created_by: str
    created_at: datetime
    run_count: int


@dataclass(frozen=True)
class Published:
    """What publish did: `created` False when the project's latest bundle had the same files (nothing recorded);
    `uploaded` the files the store did not hold yet."""

    project: str
    created: bool
    uploaded: int
    bundle: BundleView


def store_url(config: ProjectConfig) -> str:
    if config.artifacts is None:
        raise ConfigurationError(f"{config.project_dir / 'craft-connector.yml'} has no Artifacts section; bundles "
                                 "are uploaded to Artifacts.Store: add Artifacts: {Store: file:///path/of/a/folder} "
                                 "or {Store: s3://BUCKET/PREFIX} (guides/bundles.md)")
    return config.artifacts.store


def publish(db: EngineDB, config: ProjectConfig, actor: Actor) -> Published:
    """Upload the project's files to the store (each once, by hash) and record the bundle."""
    url = store_url(config)
    store = open_store(url, config)
    manifest = build_manifest(config.project_dir)
    uploaded = sum(store.put(digest, config.project_dir / relative) for relative, digest in manifest.files.items())
    project = chosen_project(db)
    with acting_as(actor):
        row = call(db, "record_bundle", project_code=project, manifest=manifest.text,
                   manifest_sha256=manifest.sha256, file_count=len(manifest.files), total_bytes=manifest.total_bytes,
                   store_url=url)[0]
    bundle = next(b for b in list_bundles(db, project) if b.bundle_id == int(row.bundle_id))
    return Published(project, bool(row.created), uploaded, bundle)


def chosen_project(db: EngineDB) -> str:
    """The project a bundle command acts on: --project-code, else Orchestration: Project, else the only one."""
    with db.read() as conn:
        return resolve_project(db, conn)


def list_bundles(db: EngineDB, project: str) -> tuple[BundleView, ...]:
    with db.read() as conn:
        rows = fetch_all(db, conn, "bundle_list", project_code=project)
    return tuple(_view(row) for row in rows)


def _view(row: dict[str, Any]) -> BundleView:
    created = as_time(row["created_at"])
    assert created is not None
    return BundleView(int(row["bundle_id"]), row["manifest_sha256"], int(row["file_count"]),
                      int(row["total_bytes"]), row["store_url"], row["created_by"], created, int(row["run_count"]))


def published_json(published: Published) -> dict[str, Any]:
    """`etl-craft bundle publish`: etl-craft/bundle-published/1 (docs/reference/json.md)."""
    return {"schema": "etl-craft/bundle-published/1", "project": published.project, "created": published.created,
            "uploaded": published.uploaded, "bundle": plain(dataclasses.asdict(published.bundle))}


def list_json(project: str, bundles: tuple[BundleView, ...]) -> dict[str, Any]:
    """`etl-craft bundle list`: etl-craft/bundles/1, newest first (docs/reference/json.md)."""
    return {"schema": "etl-craft/bundles/1", "project": project,
            "bundles": [plain(dataclasses.asdict(b)) for b in bundles]}
