"""GET /metrics: the Prometheus text of etlcraft.api.metrics, for a viewer token (Prometheus sends it with
`authorization: {credentials: ...}` in its scrape config)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from etlcraft.api.auth import VIEWER
from etlcraft.api.documents import DocumentRoute
from etlcraft.api.metrics import render_metrics
from etlcraft.services.tokens import Principal

router = APIRouter(route_class=DocumentRoute)


@router.get("/metrics", summary="Prometheus metrics of the Engine DB and this process (text format 0.0.4)",
            response_class=Response)
def metrics(request: Request, _p: Principal = VIEWER) -> Response:
    body, content_type = render_metrics(request.app.state.db)
    return Response(content=body, media_type=content_type)
