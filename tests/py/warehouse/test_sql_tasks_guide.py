"""docs/guides/sql-tasks.md against the code, so the guide cannot drift: its golden digests are what each warehouse
computes from its golden rows, its worked example hashes to its digest, its table of the columns each action
writes is what the actions do, and it names every action, engine-managed column and SQL task parameter."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest

from etlcraft.core import parameters as params
from etlcraft.handlers.sql.spec import ACTIONS
from etlcraft.handlers.sql.target import ALL_ENGINE_COLUMNS, CREATES
from tests.py.warehouse import test_change_hash
from tests.py.warehouse.conftest import Wh

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guides" / "sql-tasks.md"
KEYED = ("SCD1_MERGE", "SCD2_MERGE", "DELETE_ROWS")


def _guide() -> str:
    return GUIDE.read_text(encoding="utf-8")


def _fenced(language: str, containing: str) -> str:
    """The one fenced block of `language` whose text contains `containing`."""
    blocks = [b for b in re.findall(rf"```{language}\n(.*?)```", _guide(), re.DOTALL) if containing in b]
    assert len(blocks) == 1, f"the guide has {len(blocks)} ```{language} blocks containing {containing!r}; expected 1"
    return blocks[0]


def _table(header: str) -> list[list[str]]:
    """The cells of the Markdown table whose header row starts with `header`, without the header rows."""
    lines = _guide().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(header)), None)
    assert start is not None, f"the guide has no table starting {header!r}"
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows


def _documented_digests() -> dict[int, str]:
    return {int(row[0]): row[2].strip("`") for row in _table("| id | What it shows | HASH_KEY |")}


def test_guide__golden_digests__the_ones_the_change_hash_test_asserts() -> None:
    assert _documented_digests() == test_change_hash.GOLDEN


def test_guide__golden_rows__hash_to_the_documented_digests_on_every_warehouse(wh: Wh) -> None:
    script = re.sub(r"\b(TABLE|INTO) golden\b", r"\1 {s}.golden", _fenced("sql", "CREATE TABLE golden"))
    wh.execute(*(statement for statement in script.split(";") if statement.strip()))
    columns = [c for c, _ in wh.columns("golden")]
    documented = re.search(r"The compare\s+columns are `([^`]*)`", _guide())
    assert documented is not None and documented.group(1).split(", ") == sorted(c for c in columns if c != "id"), \
        "the guide names the compare columns in hashing order: every column but the key, alphabetically"
    wh.run("SCD1_MERGE", "SELECT * FROM {s}.golden", MERGE_KEY="id")
    assert {r["id"]: r["hash_key"] for r in wh.contents()} == _documented_digests()


def test_guide__worked_example__hashes_to_the_documented_digest_of_its_row() -> None:
    text = _fenced("text", "V10:2026-03-01").strip()
    assert hashlib.md5(text.encode("utf-8")).hexdigest() == _documented_digests()[3]
    assert f"and the md5 of that text is `{_documented_digests()[3]}`" in " ".join(_guide().split())


def test_guide__names_every_action_engine_column_and_sql_parameter() -> None:
    guide = _guide()
    missing = [a for a in ACTIONS if f"**`{a}`**" not in guide]
    assert not missing, f"the guide has no paragraph for {missing}"
    described = [row[0].strip("`") for row in _table("| Column | Type | Value |")]
    assert described == list(ALL_ENGINE_COLUMNS)
    sql_parameters = [p.name for p in params.PARAMETERS if any(p.applies("SQL", a) for a in ACTIONS)]
    absent = [name for name in sql_parameters if f"`{name}`" not in guide]
    assert not absent, f"the guide does not name the parameters {absent}"
    assert "exit code 21" in guide and "etl-craft rehash --target" in guide


def _marks() -> dict[str, dict[str, set[str]]]:
    """The guide's table of which action writes which column: column -> action -> {c, i, u}."""
    rows = _table("| Column | CREATE_TABLE |")
    header = [h.strip() for h in _guide().split("| Column | CREATE_TABLE |")[1].splitlines()[0].split("|")]
    actions = ["CREATE_TABLE", *(h for h in header if h)]
    assert actions == list(ACTIONS), "one column per action, in the order the code lists them"
    return {row[0].strip("`"): {a: set() if cell == "–" else set(cell.split()) for a, cell in zip(actions, row[1:],
                                                                                                     strict=True)}
            for row in rows}


def _marked(letter: str, action: str) -> set[str]:
    return {column for column, by_action in _marks().items() if letter in by_action[action]}


def test_guide__columns_a_created_target_gets__the_code_creates() -> None:
    marks = _marks()
    assert list(marks) == list(ALL_ENGINE_COLUMNS)
    for action in ACTIONS:
        assert _marked("c", action) == set(CREATES.get(action, ())), action


def _engine_values(row: dict[str, Any]) -> set[str]:
    """The engine-managed columns of a row that hold a value."""
    return {name.upper() for name, value in row.items() if name.upper() in ALL_ENGINE_COLUMNS and value is not None}


def _clear_engine_columns(wh: Wh, table: str) -> None:
    """NULL in every engine-managed column but ROW_ID (which identifies the rows) and ACTIVE_FLAG (kept 'Y' so the
    rows stay current): whatever holds a value after the next attempt, that attempt wrote."""
    cleared = [c for c in ALL_ENGINE_COLUMNS if c not in ("ROW_ID", "ACTIVE_FLAG")]
    wh.execute(f"UPDATE {{s}}.{table} SET {', '.join(f'{c} = NULL' for c in cleared)}")


def _written_by_update(wh: Wh, before: list[dict[str, Any]]) -> set[str]:
    """The engine columns the last attempt wrote on the rows that existed before it (ROW_ID names them): those
    that hold a value again, and ACTIVE_FLAG when it no longer says 'Y'."""
    ids = {r["row_id"] for r in before}
    changed = [r for r in wh.contents(order="row_id") if r["row_id"] in ids]
    assert len(changed) == len(before)
    written = set.intersection(*(_engine_values(r) for r in changed)) - {"ROW_ID", "ACTIVE_FLAG"}
    return written | ({"ACTIVE_FLAG"} if all(r["active_flag"] == "N" for r in changed) else set())


@pytest.mark.parametrize("action", ACTIONS)
def test_guide__columns_each_action_inserts_and_changes__what_the_action_writes(wh: Wh, action: str) -> None:
    """On a target SETUP_TABLE prepared (it has every engine-managed column): the columns the action's inserted
    rows hold a value in, and, once every engine column but ROW_ID and ACTIVE_FLAG is cleared, the columns the
    next attempt writes on the existing rows, are the guide's i and u marks."""
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20))", "INSERT INTO {s}.src VALUES (1, 'a'), (2, 'b')")
    select, keyed = "SELECT id, name FROM {s}.src", {"MERGE_KEY": "id"} if action in KEYED else {}
    wh.run("SETUP_TABLE", select)
    if action == "DELETE_ROWS":
        wh.run("APPEND_TABLE", select)
    wh.run(action, select, **keyed)
    new = wh.contents(order="row_id") if action not in ("SETUP_TABLE", "DELETE_ROWS") else []
    assert len(new) == (2 if new else 0)
    inserted = set.intersection(*(_engine_values(r) for r in new)) if new else set()
    assert inserted == _marked("i", action), "columns set on inserted rows"
    updated: set[str] = set()
    if action in KEYED:
        before = wh.contents(order="row_id")
        _clear_engine_columns(wh, "target")
        wh.run(action, select, **keyed)
        updated = _written_by_update(wh, before)
    assert updated == _marked("u", action), "columns set on changed rows (none for the actions that never update)"
