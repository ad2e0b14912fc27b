"""One renderer for every command: text for people, `--format json` documents for scripts."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

format_option = click.option(
    "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True,
    help="Text for people, or one JSON document for scripts.",
)


def document(kind: str, version: int, body: dict[str, Any]) -> dict[str, Any]:
    """A JSON document with its schema name: {"schema": "etl-craft/<kind>/<n>", ...}."""
    return {"schema": f"etl-craft/{kind}/{version}", **body}


def emit(output_format: str, doc: dict[str, Any], text: Callable[[], str]) -> None:
    if output_format == "json":
        click.echo(json.dumps(doc, indent=2, sort_keys=False, default=str))
    else:
        click.echo(text())


def emit_document(output_format: str, doc: dict[str, Any], render: Callable[[dict[str, Any]], str]) -> None:
    """Print `doc`, or its text by `render`. The renderer is given the document as JSON carries it (times and dates
    as text), whether it was built here or received from the HTTP API (--server), so both print the same text."""
    emit(output_format, doc, lambda: render(json.loads(json.dumps(doc, default=str))))
