"""The generated reference pages match the code they describe; every command has help and a docs entry."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import click
import pytest

from etlcraft.cli import COMMANDS, cli

ROOT = Path(__file__).resolve().parents[3]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_reference_docs", ROOT / "scripts" / "gen_reference_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", ["transitions.md", "exit-codes.md", "cli.md", "sql-functions.md", "configuration.md",
                                  "task-parameters.md", "views.md", "openapi.json", "http-api.md"])
def test_generated_reference_page_is_current(page: str) -> None:
    pages = {path.name: text for path, text in _generator().pages().items()}
    checked_in = (ROOT / "docs" / "reference" / page).read_text(encoding="utf-8")
    assert checked_in == pages[page], f"docs/reference/{page} is stale: run make docs"


def test_every_command_has_help_text() -> None:
    context = click.Context(cli, **cli.context_settings)
    names = cli.list_commands(context)
    assert names == sorted(COMMANDS) and len(names) >= 20, names
    for name in names:
        command = cli.get_command(context, name)
        assert command is not None, f"etl-craft {name} is listed but cannot be loaded"
        assert command.help and len(command.help) > 40, f"etl-craft {name} needs help text"
