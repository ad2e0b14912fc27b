"""The app factory: create_app(engine_db, config) is the whole HTTP API v1, mounted under /api/v1."""

from __future__ import annotations

from typing import Any, cast

from fastapi import FastAPI

from etlcraft import __version__
from etlcraft.api import errors, metrics_route, pipelines, runs
from etlcraft.api.documents import Document
from etlcraft.config.loader import ProjectConfig
from etlcraft.engine.db import EngineDB

PREFIX = "/api/v1"


def create_app(engine_db: EngineDB, config: ProjectConfig) -> FastAPI:
    app = FastAPI(title="etl-craft", version=__version__, default_response_class=Document,
                  description="The HTTP API of etl-craft: every endpoint calls the service the matching command "
                              "calls and returns the JSON document the command prints with --format json.",
                  openapi_url=f"{PREFIX}/openapi.json", docs_url=None, redoc_url=None,
                  responses=errors.RESPONSES)
    app.state.db, app.state.config = engine_db, config
    errors.install(app)
    app.include_router(pipelines.router, prefix=PREFIX)
    app.include_router(runs.router, prefix=PREFIX)
    app.include_router(metrics_route.router)  # /metrics, where Prometheus looks by default
    return app


def openapi_document() -> dict[str, Any]:
    """The API's OpenAPI document (docs/reference/openapi.json), without the package version."""
    app = create_app(cast(EngineDB, None), cast(ProjectConfig, None))
    document = app.openapi()
    document["info"].pop("version", None)
    return document
