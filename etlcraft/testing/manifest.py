"""The manifest of a hermetic test, `kind: etl-craft.test.v1`: read confined, parsed as YAML without duplicate keys
or anchors, and checked against manifest.schema.json, which ships with the package and is the one definition of
what a manifest may say (unknown keys, nulls and wrong types are refused by the schema itself, so the parser cannot
accept more than the schema). docs/reference/test-manifest.md is generated from the schema.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from etlcraft.testing.errors import InvalidTest
from etlcraft.testing.files import MAX_MANIFEST_BYTES, Limits, ReadFile, parse_yaml, project_path, read_confined

KIND = "etl-craft.test.v1"
DEFAULT_RUN_DATE = "2000-01-01"


@cache
def schema() -> dict[str, Any]:
    """The manifest's JSON Schema (etlcraft/testing/manifest.schema.json)."""
    text = resources.files("etlcraft.testing").joinpath("manifest.schema.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@dataclass(frozen=True)
class Table:
    fixture: str  # project-relative path
    columns: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Expect:
    rows: int | None = None
    schema: dict[str, str] = field(default_factory=dict)
    output: str | None = None  # project-relative path
    history: str | None = None
    rule_flags: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    task: str
    initial_target: Table | None
    expect: Expect


@dataclass(frozen=True)
class Manifest:
    path: str  # project-relative
    sha256: str
    name: str
    pipeline: str
    steps: tuple[Step, ...]
    dialect: str | None
    run_date: date
    parameters: dict[str, str]
    relations: dict[str, Table]
    limits: Limits
    document: dict[str, Any]  # as written, for the test id


def read_manifest(root: Path, relative: str) -> Manifest:
    """The manifest at project path `relative`, validated and with every file reference resolved (not read)."""
    file = read_confined(root, relative, max_bytes=MAX_MANIFEST_BYTES)
    return parse_manifest(file)


def parse_manifest(file: ReadFile) -> Manifest:
    document = parse_yaml(file)
    validate(document, file.path)
    base = posixpath.dirname(file.path)
    stem = posixpath.basename(file.path)
    for suffix in (".test.yaml", ".test.yml"):
        stem = stem.removesuffix(suffix)

    def table(raw: dict[str, Any], what: str) -> Table:
        return Table(project_path(base, raw["fixture"], what=what), dict(raw.get("columns", {})))

    def expect(raw: dict[str, Any], where: str) -> Expect:
        return Expect(raw.get("rows"), dict(raw.get("schema", {})),
                      project_path(base, raw["output"], what=f"{where}.output") if "output" in raw else None,
                      project_path(base, raw["history"], what=f"{where}.history") if "history" in raw else None,
                      dict(raw.get("rule_flags", {})))

    raw_steps = document.get("steps") or [{k: document[k] for k in ("task", "initial_target", "expect")
                                           if k in document}]
    steps = tuple(
        Step(s["task"], table(s["initial_target"], f"steps[{i}].initial_target.fixture")
             if "initial_target" in s else None, expect(s.get("expect", {}), f"steps[{i}].expect"))
        for i, s in enumerate(raw_steps))
    try:
        run_date = date.fromisoformat(document.get("run_date", DEFAULT_RUN_DATE))
    except ValueError:
        raise InvalidTest("manifest_invalid", f"{file.path}: run_date is not a calendar date; write YYYY-MM-DD"
                          ) from None
    limits = Limits(**{**Limits().__dict__, **document.get("limits", {})})
    return Manifest(file.path, file.sha256, document.get("name", stem), document["pipeline"], steps,
                    document.get("warehouse_dialect"), run_date, dict(document.get("parameters", {})),
                    {name: table(raw, f"relations.{name}.fixture")
                     for name, raw in document.get("relations", {}).items()},
                    limits, document)


@cache
def _validator() -> jsonschema.Draft202012Validator:
    """The manifest's validator, built once per process: building it (the schema's references resolved) costs more
    than checking a small manifest with it."""
    return jsonschema.Draft202012Validator(schema())


def prepare() -> None:
    """Build the validator now (before a suite's workers are forked: they inherit it)."""
    _validator()


def validate(document: Any, path: str) -> None:
    """Refuse a document the schema refuses, naming the place and the rule, never the value found."""
    errors = sorted(_validator().iter_errors(document), key=lambda e: (list(e.absolute_path), e.validator))
    if not errors:
        return
    error = errors[0]
    where = "/".join(str(p) for p in error.absolute_path) or "the document"
    found = _json_type(error.instance)
    rule = {
        "additionalProperties": lambda: "unknown key(s) " + ", ".join(
            sorted(k for k in error.instance if k not in error.schema.get("properties", {}))
            if isinstance(error.instance, dict) else []) + "; remove them or correct their spelling",
        "required": lambda: f"a required key is missing ({error.message.split(' is a required')[0]})",
        "type": lambda: f"expected {error.validator_value}, found {found}",
        "const": lambda: f"expected kind: {KIND}",
        "enum": lambda: f"expected one of {', '.join(map(str, error.validator_value))}",
        "oneOf": lambda: "give either task (with initial_target and expect) or steps, not both",
    }.get(str(error.validator), lambda: f"breaks the schema rule {error.validator} ({found})")()
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    raise InvalidTest("manifest_invalid", f"{path}: at {where}: {rule}{more}; see manifest.schema.json")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"
