"""The task-parameter table: well-formed, every value form checked with a precise reason, typed values."""

from __future__ import annotations

import pytest

from etlcraft.core import parameters as params
from etlcraft.core.parameters import BY_NAME, PARAMETERS, Kind
from etlcraft.core.states import state_machine

ENUMS = state_machine().enums


def test_every_parameter_is_well_formed() -> None:
    scopes = {"*", *ENUMS["Handler"], *(f"SQL:{a}" for a in ENUMS["SqlAction"])}
    assert len(BY_NAME) == len(PARAMETERS)
    for spec in PARAMETERS:
        assert params.CODE.match(spec.name) and spec.name == spec.name.upper(), spec.name
        assert spec.meaning.endswith(".") and len(spec.meaning) > 30, spec.name
        assert set(spec.applies_to) <= scopes and set(spec.required_for) <= set(spec.applies_to), spec.name
        assert (spec.kind is Kind.CHOICE) == bool(spec.choices), spec.name
        assert not (spec.default is not None and spec.default_text is not None), spec.name
        assert spec.required_for or spec.default is None or spec.check(spec.default) is None, spec.name


def test_the_parameters_the_seed_names_are_all_there() -> None:
    assert {"MERGE_KEY", "MERGE_COMPARE_COLUMNS", "MERGE_DEDUPE_ORDER", "SCHEMA_EVOLUTION", "TABLE_FORMAT",
            "DELETE_MODE", "TASK_TIMEOUT_SECONDS", "RETRIES", "RETRY_DELAY_SECONDS", "RETRY_BACKOFF", "POOL",
            "RECIPIENTS", "SUBJECT", "INPUT_PARAMS"} <= set(BY_NAME)


@pytest.mark.parametrize(("handler", "action", "applies", "required"), [
    ("SQL", "SCD1_MERGE", {"MERGE_KEY", "MERGE_COMPARE_COLUMNS", "MERGE_DEDUPE_ORDER", "SCHEMA_EVOLUTION",
                           "TABLE_FORMAT"}, {"MERGE_KEY"}),
    ("SQL", "SCD2_MERGE", {"MERGE_KEY", "MERGE_COMPARE_COLUMNS", "MERGE_DEDUPE_ORDER", "SCHEMA_EVOLUTION",
                           "TABLE_FORMAT", "FULL_SNAPSHOT", "SCD2_MISSING_KEYS"}, {"MERGE_KEY"}),
    ("SQL", "DELETE_ROWS", {"MERGE_KEY", "DELETE_MODE"}, {"MERGE_KEY"}),
    ("SQL", "CREATE_TABLE", {"TABLE_FORMAT"}, set()),
    ("SQL", "OVERWRITE_TABLE", {"SCHEMA_EVOLUTION", "TABLE_FORMAT"}, set()),
    ("PYTHON", None, {"INPUT_PARAMS"}, set()),
    ("EMAIL_ALERT", None, {"RECIPIENTS", "SUBJECT", "BODY"}, {"RECIPIENTS"}),
    ("BUSINESS_RULES", None, set(), set()),
])
def test_which_parameters_a_task_takes(handler: str, action: str | None, applies: set[str], required: set[str]
                                       ) -> None:
    common = {"TASK_TIMEOUT_SECONDS", "RETRIES", "RETRY_DELAY_SECONDS", "RETRY_BACKOFF", "POOL"}
    assert {p.name for p in params.applicable(handler, action)} == applies | common
    assert {p.name for p in PARAMETERS if p.required(handler, action)} == required


@pytest.mark.parametrize(("name", "value", "reason"), [
    ("MERGE_KEY", "customer_id", None),
    ("MERGE_KEY", " customer_id , order_id ", None),
    ("MERGE_KEY", "customer_id,", "is 'customer_id,', which has an empty item"),
    ("MERGE_KEY", "customer id", "is 'customer id'"),
    ("MERGE_KEY", "a, 1b", "is 'a, 1b', in which '1b' is not valid"),
    ("MERGE_KEY", "id, ID", "is 'id, ID', which names ID, id twice"),
    ("MERGE_DEDUPE_ORDER", "updated_at DESC NULLS LAST, id", None),
    ("MERGE_DEDUPE_ORDER", "updated_at desc", None),
    ("MERGE_DEDUPE_ORDER", "updated_at DESC; DROP TABLE t", "is 'updated_at DESC; DROP TABLE t'"),
    ("MERGE_DEDUPE_ORDER", "COALESCE(a, b) DESC", "is 'COALESCE(a, b) DESC', in which 'COALESCE(a' is not valid"),
    ("SCHEMA_EVOLUTION", "Y", None),
    ("SCHEMA_EVOLUTION", "y", "is 'y'"),
    ("SCHEMA_EVOLUTION", "true", "is 'true'"),
    ("TABLE_FORMAT", "Iceberg", None),
    ("TABLE_FORMAT", "delta", "is 'delta'"),
    ("DELETE_MODE", "hard", None),
    ("SCD2_MISSING_KEYS", "MARK_DELETED", None),
    ("SCD2_MISSING_KEYS", "close", None),
    ("SCD2_MISSING_KEYS", "INVALIDATE", "is 'INVALIDATE'"),
    ("FULL_SNAPSHOT", "Y", None),
    ("FULL_SNAPSHOT", "yes", "is 'yes'"),
    ("TASK_TIMEOUT_SECONDS", "0", None),
    ("TASK_TIMEOUT_SECONDS", "1.5", "is '1.5', not a whole number"),
    ("TASK_TIMEOUT_SECONDS", "soon", "is 'soon', not a whole number"),
    ("RETRIES", "-1", "is -1, out of range"),
    ("RETRIES", "+3", None),
    ("RETRY_DELAY_SECONDS", "3600", None),
    ("RETRY_BACKOFF", "1", None),
    ("RETRY_BACKOFF", "0.99", "is 0.99, out of range"),
    ("RETRY_BACKOFF", "nan", "is 'nan', not a finite number"),
    ("RETRY_BACKOFF", "two", "is 'two', not a number"),
    ("POOL", "warehouse_2", None),
    ("POOL", "_hidden", "is '_hidden'"),
    ("RECIPIENTS", "a@example.com, b.c@example.org", None),
    ("RECIPIENTS", "a@example.com; b@example.com", "is 'a@example.com; b@example.com'"),
    ("SUBJECT", "Run $$pipeline_run_id failed", None),
    ("INPUT_PARAMS", '{"since": "2026-01-01"}', None),
    ("INPUT_PARAMS", "{since: 1}", "is not valid JSON (Expecting property name enclosed in double quotes at "
                                   "character 2)"),
    ("INPUT_PARAMS", "[1]", "is JSON list, not an object"),
    ("RETRIES", None, "has no value"),
    ("RETRIES", "  ", "has no value"),
])
def test_check_names_the_reason(name: str, value: str | None, reason: str | None) -> None:
    assert BY_NAME[name].check(value) == reason


@pytest.mark.parametrize(("name", "expected"), [
    ("RETRIES", "a whole number of at least 0"),
    ("RETRY_BACKOFF", "a number of at least 1"),
    ("TABLE_FORMAT", "native or iceberg"),
    ("SCHEMA_EVOLUTION", "Y or N"),
    ("SCD2_MISSING_KEYS", "KEEP or CLOSE or MARK_DELETED"),
])
def test_expected_says_what_a_valid_value_looks_like(name: str, expected: str) -> None:
    assert BY_NAME[name].expected == expected


def test_parse_and_resolve_give_typed_values() -> None:
    assert BY_NAME["MERGE_KEY"].parse(" a ,b ") == ["a", "b"]
    assert BY_NAME["MERGE_DEDUPE_ORDER"].parse("updated_at   DESC") == ["updated_at DESC"]
    assert BY_NAME["SCHEMA_EVOLUTION"].resolve(None) is False
    assert BY_NAME["SCHEMA_EVOLUTION"].resolve("Y") is True
    assert BY_NAME["TABLE_FORMAT"].resolve("ICEBERG") == "iceberg"
    assert BY_NAME["SCD2_MISSING_KEYS"].resolve(None) == "KEEP"
    assert BY_NAME["SCD2_MISSING_KEYS"].resolve("mark_deleted") == "MARK_DELETED"
    assert BY_NAME["FULL_SNAPSHOT"].resolve(None) is False
    assert BY_NAME["RETRIES"].resolve(None) == 0
    assert BY_NAME["RETRY_DELAY_SECONDS"].resolve(None) == 60
    assert BY_NAME["RETRY_BACKOFF"].resolve(None) == 2.0
    assert BY_NAME["INPUT_PARAMS"].resolve(None) == {}
    assert BY_NAME["POOL"].resolve(None) is None  # the project's DEFAULT_POOL: the caller knows it
    with pytest.raises(ValueError, match="out of range"):
        BY_NAME["RETRIES"].parse("-4")


@pytest.mark.parametrize(("name", "near"), [
    ("RETRYS", ["RETRIES"]), ("merge_key", ["MERGE_KEY"]), ("MERGE_KYE", ["MERGE_KEY"]), ("SCHEMA", []),
    ("TIMEOUT_SECONDS", ["TASK_TIMEOUT_SECONDS"]),
])
def test_suggestions_for_an_unknown_name(name: str, near: list[str]) -> None:
    assert params.parameter(name) is None
    assert params.suggestions(name) == near


def test_retry_delay_grows_by_the_backoff_and_is_capped() -> None:
    assert [params.retry_delay_seconds(n, 60, 2.0) for n in (1, 2, 3)] == [60.0, 120.0, 240.0]
    assert params.retry_delay_seconds(10, 60, 2.0) == params.MAX_RETRY_DELAY_SECONDS == 3600
    assert params.retry_delay_seconds(1, 7200, 1.0) == 3600
    assert params.retry_delay_seconds(3, 0, 5.0) == 0


def test_scope_reads_as_words() -> None:
    assert BY_NAME["MERGE_KEY"].scope == "SQL tasks with ACTION SCD1_MERGE, SCD2_MERGE or DELETE_ROWS"
    assert BY_NAME["DELETE_MODE"].scope == "SQL tasks with ACTION DELETE_ROWS"
    assert BY_NAME["RETRIES"].scope == "every task"
    assert BY_NAME["RECIPIENTS"].scope == "EMAIL_ALERT tasks"
