"""release/defects.toml accounts for every seed defect and weakness: each id (B1..B65, W1..W15) is either mapped,
to tests that exist or to a reason, or named as waiting for a feature not built yet. Building a feature means moving
its ids out of [not_built], and a defect marked as proven is proven by something real."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
SEED_IDS = [f"B{n}" for n in range(1, 66)] + [f"W{n}" for n in range(1, 16)]


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def _load() -> tuple[dict[str, Any], dict[str, Any]]:
    """The mapped entries and the [not_built] table (id -> the feature it waits for)."""
    document = tomllib.loads((ROOT / "release" / "defects.toml").read_text(encoding="utf-8"))
    not_built = document.pop("not_built", {})
    return document, not_built


def test_every_seed_id_is_mapped_or_named_as_not_built__once() -> None:
    entries, not_built = _load()
    assert not [i for i in [*entries, *not_built] if i not in SEED_IDS], "only seed ids B1..B65 and W1..W15"
    assert sorted(set(entries) & set(not_built)) == [], "an id is either mapped or not built, never both"
    unaccounted = [i for i in SEED_IDS if i not in entries and i not in not_built]
    assert unaccounted == [], "map these ids in release/defects.toml, or name the feature they wait for in [not_built]"


def test_not_built_ids_name_their_feature() -> None:
    _, not_built = _load()
    assert not_built, "[not_built] is a table of id = feature"
    blank = [i for i, feature in not_built.items() if not isinstance(feature, str) or not feature.strip()]
    assert blank == []


def test_every_entry_has_a_summary_and_either_tests_or_a_reason() -> None:
    entries, _ = _load()
    wrong = []
    for defect, entry in entries.items():
        assert isinstance(entry, dict), f"{defect} is a table with a summary, and tests or a reason"
        unknown = set(entry) - {"summary", "tests", "reason"}
        summary, tests, reason = entry.get("summary"), entry.get("tests"), entry.get("reason")
        has_tests = isinstance(tests, list) and bool(tests) and all(isinstance(t, str) and t for t in tests)
        has_reason = isinstance(reason, str) and bool(reason.strip())
        if unknown or not (isinstance(summary, str) and summary.strip()) or has_tests == has_reason \
                or (tests is not None and not has_tests) or (reason is not None and not has_reason):
            wrong.append(defect)
    assert wrong == [], "each needs a summary and either non-empty tests or a one-line reason, not both"


def test_every_listed_test_exists() -> None:
    entries, _ = _load()
    missing = []
    for defect, entry in entries.items():
        for test in entry.get("tests", []):
            file, _, function = test.partition("::")
            path = ROOT / file
            if not path.is_file() or (function and function not in _functions(path)):
                missing.append(f"{defect}: {test}")
    assert missing == []


def test_defect_regression_tests_are_listed() -> None:
    """A test named after defects (test_b12_..., test_b22_b35_...) appears under each of them in defects.toml."""
    entries, _ = _load()
    unlisted = []
    for path in (ROOT / "tests" / "py").rglob("test_*.py"):
        for name in _functions(path):
            named = re.match(r"test_((?:[bw]\d+_)+)", name)
            if named:
                node = f"{path.relative_to(ROOT).as_posix()}::{name}"
                for defect in re.findall(r"[bw]\d+", named.group(1)):
                    if node not in entries.get(defect.upper(), {}).get("tests", []):
                        unlisted.append(f"{defect.upper()}: {node}")
    assert unlisted == []
