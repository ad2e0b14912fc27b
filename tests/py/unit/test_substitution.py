"""$$name substitution (S2.K.10): tokens become SQL literals; $$ inside literals, quoted names and comments is
left alone; a token without a value is refused naming it and the known names."""

from __future__ import annotations

from datetime import date

import pytest

from etlcraft.core.errors import ConfigurationError
from etlcraft.core.sqltext import RUN_VALUES, UnknownTokenError, find_tokens, sql_literal, substitute

DIALECTS = ["duckdb", "postgresql"]  # the warehouse dialects
RUN = {"pipeline_id": 7, "pipeline_run_id": 42, "task_run_id": 99, "run_date": date(2026, 3, 1)}


def test_the_run_values_are_the_seed_names() -> None:
    assert RUN_VALUES == ("pipeline_id", "pipeline_run_id", "task_run_id", "run_date")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_tokens_become_literals(dialect: str) -> None:
    sql = "SELECT * FROM t WHERE run_id = $$pipeline_run_id AND d = $$run_date AND task = $$task_run_id"
    assert substitute(sql, RUN, dialect) == (
        "SELECT * FROM t WHERE run_id = 42 AND d = CAST('2026-03-01' AS DATE) AND task = 99")


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("sql", [
    "SELECT '$$pipeline_id' AS literal",
    "SELECT 'it''s $$run_date' AS literal",
    'SELECT "$$pipeline_id" FROM t',
    "SELECT 1 AS a -- $$pipeline_id in a comment",
    "SELECT 1 AS a /* $$pipeline_id\n $$nothing */",
    "SELECT 1 AS a -- $$unknown_is_fine_here",
])
def test_dollar_tokens_inside_literals_quoted_names_and_comments_are_left_alone(dialect: str, sql: str) -> None:
    assert find_tokens(sql, dialect) == []
    assert substitute(sql, RUN, dialect) == sql


@pytest.mark.parametrize("dialect", DIALECTS)
def test_dollar_quoted_strings_keep_their_text(dialect: str) -> None:
    sql = "SELECT $tag$ keep $$pipeline_id $tag$ AS s, $$pipeline_id AS p"
    assert substitute(sql, RUN, dialect) == "SELECT $tag$ keep $$pipeline_id $tag$ AS s, 7 AS p"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_only_whole_words_are_tokens(dialect: str) -> None:
    assert substitute("SELECT a$$pipeline_id, $$pipeline_idx, $$pipeline_id::INT AS p", {**RUN, "pipeline_idx": 8},
                      dialect) == "SELECT a$$pipeline_id, 8, 7::INT AS p"


def test_literals_are_safe() -> None:
    values = {"name": "O'Brien", "minus": -5, "flag": True, "nothing": None, "ratio": 2.5}
    sql = "SELECT $$name AS n, 1-$$minus AS m, $$flag AS f, $$nothing AS x, $$ratio AS r"
    assert substitute(sql, values, "duckdb") == \
        "SELECT 'O''Brien' AS n, 1-(-5) AS m, TRUE AS f, NULL AS x, 2.5 AS r"
    assert sql_literal(date(2026, 1, 2), "postgresql") == "CAST('2026-01-02' AS DATE)"


def test_names_match_in_any_case_and_parameters_are_values_too() -> None:
    assert substitute("SELECT $$RUN_DATE AS d, $$Retries AS r", {**RUN, "RETRIES": "3"}, "duckdb") == \
        "SELECT CAST('2026-03-01' AS DATE) AS d, '3' AS r"


def test_a_token_without_a_value_is_refused_naming_it_and_the_known_names() -> None:
    sql = "SELECT 1 AS a\n FROM t\n WHERE d = $$run_dat OR x = $$mystery"
    with pytest.raises(UnknownTokenError) as caught:
        substitute(sql, RUN, "duckdb", source="sql_files/load.sql")
    assert str(caught.value) == (
        "sql_files/load.sql uses $$run_dat on line 3 (did you mean $$run_date?), $$mystery on line 3, which have "
        "no value; write one of $$pipeline_id, $$pipeline_run_id, $$run_date, $$task_run_id, or keep $$ text "
        "inside a string literal or a comment")
    assert [u.name for u in caught.value.unknown] == ["run_dat", "mystery"]
    assert isinstance(caught.value, ConfigurationError)


def test_find_tokens_gives_names_positions_and_lines() -> None:
    sql = "SELECT $$pipeline_id,\n  '$$x',\n  $$run_date"
    uses = find_tokens(sql, "postgresql")
    assert [(u.name, u.line, sql[u.start:u.end]) for u in uses] == [
        ("pipeline_id", 1, "$$pipeline_id"), ("run_date", 3, "$$run_date")]


def test_text_that_cannot_be_read_is_refused_naming_the_source() -> None:
    with pytest.raises(ValueError, match=r"^x\.sql: cannot read the SQL"):
        substitute("SELECT $$pipeline_id, 'open", RUN, "duckdb", source="x.sql")


def test_text_without_tokens_is_returned_as_is() -> None:
    sql = "SELECT 'no tokens; -- here' AS a"
    assert substitute(sql, {}, "postgresql") is sql
