"""The app factory: create_app(engine_db, config) is the whole HTTP API v1, mounted under /api/v1."""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from etlcraft import __version__
from etlcraft.api import errors, pipelines, runs
from etlcraft.config.loader import ProjectConfig
from etlcraft.engine.db import EngineDB

PREFIX = "/api/v1"


class Document(JSONResponse):
    """A JSON document written exactly as the CLI prints it with --format json (values JSON cannot hold, such as
    a time read straight from the Engine DB, as their text)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, default=str).encode("utf-8")


def create_app(engine_db: EngineDB, config: ProjectConfig) -> FastAPI:
    app = FastAPI(title="etl-craft", version=__version__, default_response_class=Document,
                  description="The HTTP API of etl-craft: every endpoint calls the service the matching command "
                              "calls and returns the JSON document the command prints with --format json.",
                  openapi_url=f"{PREFIX}/openapi.json", docs_url=None, redoc_url=None)
    app.state.db, app.state.config = engine_db, config
    errors.install(app)
    app.include_router(pipelines.router, prefix=PREFIX)
    app.include_router(runs.router, prefix=PREFIX)
    # Metrics, when they come, are one more router here.
    return app
