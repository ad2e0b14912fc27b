"""docs/reference/test-manifest.md is generated from the manifest's JSON Schema (make docs) and names every key."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from etlcraft.testing.manifest import schema

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "reference" / "test-manifest.md"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_reference_docs", ROOT / "scripts" / "gen_reference_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_manifest_reference__checked_in_page__equals_the_generated_one() -> None:
    assert PAGE.read_text(encoding="utf-8") == _generator().manifest_page(), \
        "docs/reference/test-manifest.md is stale: run make docs"


def test_manifest_reference__every_key_of_the_schema__documented_with_its_meaning() -> None:
    document = schema()
    sections = [document, *(d for d in document["$defs"].values() if "properties" in d)]
    page = PAGE.read_text(encoding="utf-8")
    for section in sections:
        for key, spec in section["properties"].items():
            assert spec.get("description"), f"manifest.schema.json: {key} has no description"
            assert f"| `{key}` |" in page, f"docs/reference/test-manifest.md lacks {key}"


def test_manifest_reference__linked_from_the_index_and_the_guide() -> None:
    for doc in ("docs/index.md", "docs/guides/testing-pipelines.md"):
        assert "reference/test-manifest.md" in (ROOT / doc).read_text(encoding="utf-8"), doc
