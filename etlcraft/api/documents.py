"""The response of every endpoint: a JSON document written exactly as the CLI prints it with --format json (by
json.dumps, values JSON cannot hold, such as a time read straight from the Engine DB, as their text), returned
as is rather than re-encoded by FastAPI, so the CLI's JSON and the API's are equal."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute

from etlcraft.api.auth import Unverified
from etlcraft.services.redaction import Scrubber, scrubber


class Document(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json.dumps(content, default=str).encode("utf-8")


def scrubbing(request: Request) -> Scrubber:
    """What masks the secrets in what this request answers (etlcraft.services.redaction)."""
    return scrubber(request.app.state.db, request.app.state.config)


class DocumentRoute(APIRoute):
    """A route whose endpoint returns a document (a dict): it is sent as a Document, not re-encoded, with every
    secret in it masked. Each endpoint takes the request as its argument `request`.

    The route authenticates the request's token (an Unverified argument, from etlcraft.api.auth) into the Principal
    the endpoint receives. A GET that needs a token runs whole, authentication included, in one read transaction of
    the Engine DB (EngineDB.shared_read); health, which must answer when the Engine DB does not, is not one."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        reads_only = set(kwargs.get("methods") or ()) <= {"GET", "HEAD"}

        def answer(request: Request, args: Any, values: dict[str, Any]) -> Any:
            result = endpoint(*args, **values)
            if isinstance(result, Response):
                return result
            return Document(scrubbing(request).document(result))

        @functools.wraps(endpoint)
        def send(*args: Any, **values: Any) -> Any:
            request: Request = values["request"]
            db = request.app.state.db
            tokens = [name for name, value in values.items() if isinstance(value, Unverified)]
            if not (reads_only and tokens):
                for name in tokens:
                    values[name] = values[name].verify(db)
                return answer(request, args, values)
            with db.shared_read():
                for name in tokens:
                    values[name] = values[name].verify(db)
                if not any(values[name].touched for name in tokens):
                    return answer(request, args, values)
            # Authentication wrote the token's last use (once a minute): read from a snapshot that holds it.
            with db.shared_read():
                return answer(request, args, values)

        super().__init__(path, send, **kwargs)
