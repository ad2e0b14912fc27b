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

from etlcraft.services.redaction import Scrubber, scrubber


class Document(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json.dumps(content, default=str).encode("utf-8")


def scrubbing(request: Request) -> Scrubber:
    """What masks the secrets in what this request answers (etlcraft.services.redaction)."""
    return scrubber(request.app.state.db, request.app.state.config)


class DocumentRoute(APIRoute):
    """A route whose endpoint returns a document (a dict): it is sent as a Document, not re-encoded, with every
    secret in it masked. Each endpoint takes the request as its argument `request`."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        @functools.wraps(endpoint)
        def send(*args: Any, **values: Any) -> Any:
            result = endpoint(*args, **values)
            if isinstance(result, Response):
                return result
            return Document(scrubbing(values["request"]).document(result))

        super().__init__(path, send, **kwargs)
