"""Serving the API with uvicorn: in the foreground (`etl-craft api`) or in a thread of `etl-craft server`."""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterator

import uvicorn

from etlcraft.api.app import create_app
from etlcraft.config.loader import ProjectConfig
from etlcraft.core.errors import UsageError
from etlcraft.engine.db import EngineDB

_ADDRESS = re.compile(r"^\[?(?P<host>[A-Za-z0-9_.:-]+?)\]?:(?P<port>\d{1,5})$")
#: How long a stopping server waits for the API's open requests.
STOP_SECONDS = 10.0


def parse_address(text: str) -> tuple[str, int]:
    """HOST:PORT (an IPv6 host in brackets) as (host, port)."""
    found = _ADDRESS.match(text.strip())
    if not found or not 0 < int(found.group("port")) < 65536:
        raise UsageError(f"the API address {text!r} is not HOST:PORT with a port from 1 to 65535, such as "
                         "127.0.0.1:8730")
    return found.group("host"), int(found.group("port"))


def api_server(db: EngineDB, config: ProjectConfig, address: str) -> uvicorn.Server:
    host, port = parse_address(address)
    return uvicorn.Server(uvicorn.Config(create_app(db, config), host=host, port=port, log_level="warning",
                                         access_log=False, timeout_graceful_shutdown=int(STOP_SECONDS)))


def serve_api(db: EngineDB, config: ProjectConfig, address: str) -> None:
    """Serve the API in the foreground until SIGINT or SIGTERM."""
    api_server(db, config, address).run()


@contextlib.contextmanager
def api_in_thread(db: EngineDB, config: ProjectConfig, address: str,
                  on_problem: Callable[[str], None]) -> Iterator[uvicorn.Server | None]:
    """Serve the API in a daemon thread while the block runs; stop it (open requests get STOP_SECONDS) after.
    An API that cannot listen (the address in use, say by the server that leads already) is reported through
    on_problem and the block runs without it (None), so the server still says who leads. uvicorn installs no
    signal handlers outside the main thread: the process's own handle its signals."""
    server = api_server(db, config, address)
    thread = threading.Thread(target=server.run, name="etl-craft-api", daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        thread.join(0.05)
    if not server.started:
        on_problem(f"the HTTP API could not listen on {address} (in use, or not an address of this host): going on "
                   "without it; set Orchestration: Api_address to a free HOST:PORT")
        yield None
        return
    try:
        yield server
    finally:
        server.should_exit = True
        thread.join(STOP_SECONDS + 5)
