"""etl-craft --server URL: the operator commands asked of an etl-craft HTTP API instead of the Engine DB, so an
operator needs no Engine DB credentials and no craft-connector.yml. The API returns the documents the commands print
with --format json; its error documents (etl-craft/error/1) become the error the command would raise locally."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from etlcraft.core.errors import (
    EtlCraftError,
    NotFoundError,
    ServerUnreachableError,
    TokenUnknownError,
    UsageError,
    error_classes,
)
from etlcraft.services.runs import not_a_run_of

if TYPE_CHECKING:
    import httpx

#: The commands that work with --server: each is one or two requests of the HTTP API v1.
COMMANDS = frozenset({"alerts", "audit", "cancel", "explain", "history", "list", "logs", "mark", "pause", "resume",
                      "run", "show", "status", "token", "workers"})
PREFIX = "/api/v1"
TIMEOUT = 60.0
ERROR_SCHEMA = "etl-craft/error/1"


def refuse(command: str) -> UsageError:
    """The refusal of a command that needs the Engine DB itself."""
    return UsageError(f"etl-craft {command} works on the Engine DB and cannot be used with --server (or "
                      f"ETL_CRAFT_SERVER); run it where the Engine DB is reachable, without --server. With --server: "
                      f"{', '.join(sorted(COMMANDS - {'run'}))} and run --init-only")


def segment(value: str | int) -> str:
    """One path segment of a URL (a pipeline or task code may hold any character)."""
    return quote(str(value), safe="")


@dataclass(frozen=True)
class Remote:
    """The HTTP API at `url` (http://host:port, with or without /api/v1), asked with bearer `token`."""

    url: str
    token: str | None
    #: --project-code: sent as ?project= with every request, so pipeline-scoped routes act on that project.
    project_code: str | None = None

    @classmethod
    def create(cls, url: str, token: str | None, project_code: str | None = None) -> Remote:
        base = url.strip().rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise UsageError(f"--server {url!r} is not an HTTP address; give the address etl-craft server serves "
                             "its API at, such as http://127.0.0.1:8730")
        base = base.removesuffix(PREFIX)
        return cls(base, token or None, project_code or None)

    def get(self, path: str, **params: Any) -> dict[str, Any]:
        return self._request("GET", path, params={k: v for k, v in params.items() if v is not None})

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._request("POST", path, json={k: v for k, v in body.items() if v is not None})

    def _request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        if not self.token:
            raise TokenUnknownError(f"no API token for --server {self.url}: set ETL_CRAFT_TOKEN to a token from "
                                    "etl-craft token create (an admin runs it where the Engine DB is)")
        import httpx  # here, not above: only a --server command pays for importing it

        where = f"{self.url}{PREFIX}{path}"
        if self.project_code:
            kwargs["params"] = {**kwargs.get("params", {}), "project": self.project_code}
        try:
            answer = httpx.request(method, where, headers={"Authorization": f"Bearer {self.token}"},
                                   timeout=TIMEOUT, **kwargs)
        except httpx.TimeoutException:
            raise ServerUnreachableError(f"the etl-craft server at {self.url} did not answer {method} {PREFIX}{path} "
                                         f"within {TIMEOUT:g} s; check that it is up and not overloaded, then try "
                                         "again") from None
        except httpx.HTTPError as exc:
            raise ServerUnreachableError(f"cannot reach the etl-craft server at {self.url} ({exc}); check that "
                                         "etl-craft server (or etl-craft api) runs there and that --server or "
                                         "ETL_CRAFT_SERVER is its address, such as http://127.0.0.1:8730") from None
        return _document(answer, self.url)


def _document(answer: httpx.Response, url: str) -> dict[str, Any]:
    """The document of a 2xx answer; the error of an etl-craft/error/1 answer, raised as the class of its code."""
    try:
        doc = answer.json()
    except ValueError:
        doc = None
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if not isinstance(schema, str) or not schema.startswith("etl-craft/"):
        raise ServerUnreachableError(f"{url} answered {answer.request.method} {answer.request.url.path} with HTTP "
                                     f"{answer.status_code} and no etl-craft document; check that --server or "
                                     "ETL_CRAFT_SERVER is the address of etl-craft server (or etl-craft api)")
    if schema == ERROR_SCHEMA or not answer.is_success:
        error = error_classes().get(str(doc.get("code")), EtlCraftError)
        raise error(str(doc.get("message")))
    assert isinstance(doc, dict)
    return doc


def run_id_of(remote: Remote, pipeline_code: str, run_id: int | None, run_key: str | None, what: str) -> int:
    """The run a request about pipeline `pipeline_code` addresses: the HTTP API names runs by id, so --run-id is
    needed, and the run must be the pipeline's (as locally)."""
    if run_id is None or run_key is not None:
        raise UsageError(f"with --server, {what} names the run by --run-id N, as the HTTP API does (not by --run-key "
                         f"or by the pipeline's one active run); etl-craft --server URL history --pipeline-code "
                         f"{pipeline_code} lists its runs")
    remote.get(f"/pipelines/{segment(pipeline_code)}/runs", limit=1)  # no such pipeline: refused as locally
    try:
        found: str | None = remote.get(f"/runs/{run_id}")["run"]["pipeline_code"]
    except NotFoundError:
        found = None
    if found != pipeline_code:
        raise not_a_run_of(pipeline_code, run_id, found)
    return run_id
