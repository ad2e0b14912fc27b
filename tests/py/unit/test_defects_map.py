"""release/defects.toml names tests that exist: a defect marked as proven is proven by something real."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_listed_test_exists() -> None:
    defects = tomllib.loads((ROOT / "release" / "defects.toml").read_text(encoding="utf-8"))
    missing = []
    for defect, entry in defects.items():
        assert re.fullmatch(r"[BW]\d{1,2}", defect), f"{defect} is not a seed defect id"
        assert entry["summary"], f"{defect} needs a summary"
        assert bool(entry.get("tests")) != bool(entry.get("reason")), (
            f"{defect} needs either tests that prove it never happens or a one-line reason it does not apply")
        for test in entry.get("tests", []):
            file, _, function = test.partition("::")
            path = ROOT / file
            if not path.is_file() or (function and function not in _functions(path)):
                missing.append(f"{defect}: {test}")
    assert missing == []


def test_defect_regression_tests_are_listed() -> None:
    """A test named after a defect (test_b12_..., test_w15_...) appears under that defect in defects.toml."""
    defects = tomllib.loads((ROOT / "release" / "defects.toml").read_text(encoding="utf-8"))
    listed = {test for entry in defects.values() for test in entry.get("tests", [])}
    unlisted = []
    for path in (ROOT / "tests" / "py").rglob("test_*.py"):
        for name in _functions(path):
            if re.match(r"test_[bw]\d+_", name):
                node = f"{path.relative_to(ROOT).as_posix()}::{name}"
                if node not in listed:
                    unlisted.append(node)
    assert unlisted == []
