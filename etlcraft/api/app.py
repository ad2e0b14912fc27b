"""The app factory: create_app(engine_db, config) is the whole HTTP API v1, mounted under /api/v1."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import AsyncIterator
from typing import Any, cast

import anyio.to_thread
from fastapi import FastAPI

from etlcraft import __version__
from etlcraft.api import errors, metrics_route, pipelines, runs
from etlcraft.api.documents import Document
from etlcraft.config.loader import ProjectConfig
from etlcraft.engine.db import EngineDB

PREFIX = "/api/v1"
#: How many requests run at once, each in a thread of its own: the others wait their turn in order. More threads than
#: connections only makes them wait for one, and lets a request's thread wait behind a dozen others for the GIL,
#: which is where the slowest requests' time went.
REQUEST_THREADS = 5
#: The Engine DB connections those threads hold at most: one each (a request's read transaction), and one more
#: while a request reading in its transaction writes its token's last use (once a minute) on a second one; with
#: one spare, some thread always gets its second. etl-craft server's pool keeps this many for its API
#: (Orchestration.Db_pool_size has a minimum for it).
REQUEST_CONNECTIONS = REQUEST_THREADS + 1


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    anyio.to_thread.current_default_thread_limiter().total_tokens = REQUEST_THREADS
    # What the process holds once it serves (modules, the app, its routes) is kept out of the garbage collector's
    # generations, so a full collection walks only what requests made: shorter pauses under load.
    gc.collect()
    gc.freeze()
    yield


def create_app(engine_db: EngineDB, config: ProjectConfig) -> FastAPI:
    app = FastAPI(title="etl-craft", version=__version__, default_response_class=Document,
                  description="The HTTP API of etl-craft: every endpoint calls the service the matching command "
                              "calls and returns the JSON document the command prints with --format json.",
                  openapi_url=f"{PREFIX}/openapi.json", docs_url=None, redoc_url=None,
                  responses=errors.RESPONSES, lifespan=_lifespan)
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
