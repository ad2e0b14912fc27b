"""generate-yml's documents built from metadata in memory: commands, control steps, trigger rules, retries and
timeouts, gates, refusals, and a property test over random DAGs."""

from __future__ import annotations

import re
import shlex
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from etlcraft.core.errors import EtlCraftError, RefusedByPolicyError, UsageError
from etlcraft.services.generate_yml import (
    FINALIZE,
    INIT,
    YmlOptions,
    check_dag,
    parse_airflow_version,
    pipeline_dag,
    schema,
)
from tests.py.export.graphs import edge, metadata, pipeline, pipeline_edge, task

OPTIONS = YmlOptions(executable="/opt/etl craft/bin/etl-craft", project_dir="/srv/my project")


def _steps(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["task_id"]: s for s in doc["steps"]}


def _diamond(kind: str = "SUCCESS", condition: str = "ALL") -> dict[str, Any]:
    p = pipeline("sales")
    a, b, c, d = (task(p, i, code, condition if code == "d" else "ALL") for i, code in enumerate("abcd", 1))
    return pipeline_dag(p, metadata([p], [a, b, c, d], [edge(1, b, a), edge(2, c, a), edge(3, d, b, kind),
                                                          edge(4, d, c, kind)]), OPTIONS)


def test_commands__argument_lists_joined_with_shlex__split_back_to_the_run_of_one_step() -> None:
    steps = _steps(_diamond())
    base = ["/opt/etl craft/bin/etl-craft", "--project", "/srv/my project", "run", "--pipeline-code", "sales",
            "--run-key", "orchestrator:{{ run_id }}", "--run-date", "{{ data_interval_end | ds }}"]
    assert shlex.split(steps[INIT]["command"]) == [*base, "--init-only"]
    assert shlex.split(steps["b"]["command"]) == [*base, "--task-code", "b"]
    assert shlex.split(steps[FINALIZE]["command"]) == [*base, "--finalize-only"]


def test_steps__one_init_and_one_finalize__around_the_task_graph() -> None:
    doc = _diamond()
    steps = _steps(doc)
    assert [s["task_id"] for s in doc["steps"]].count(INIT) == 1
    assert [s["task_id"] for s in doc["steps"]].count(FINALIZE) == 1
    assert {k: v["upstream"] for k, v in steps.items()} == {
        INIT: [], "a": [INIT], "b": ["a"], "c": ["a"], "d": ["b", "c"], FINALIZE: ["d"]}
    assert steps[FINALIZE]["trigger_rule"] == "all_done"
    jsonschema.validate(doc, schema())


@pytest.mark.parametrize(("kind", "condition", "rule"), [
    ("SUCCESS", "ALL", "all_success"), ("HAS_DATA", "ALL", "all_success"), ("FAILURE", "ALL", "all_failed"),
    ("ALWAYS", "ALL", "all_done"), ("SUCCESS", "ANY", "one_success"), ("HAS_DATA", "ANY", "one_success"),
    ("FAILURE", "ANY", "one_failed"), ("ALWAYS", "ANY", "one_done")])
def test_trigger_rule__edge_type_and_run_condition__mapped(kind: str, condition: str, rule: str) -> None:
    options = YmlOptions(airflow_version=(2, 5, 0))
    p = pipeline("sales")
    a, b, c = task(p, 1, "a"), task(p, 2, "b"), task(p, 3, "c", condition)
    doc = pipeline_dag(p, metadata([p], [a, b, c], [edge(1, c, a, kind), edge(2, c, b, kind)]), options)
    assert _steps(doc)["c"]["trigger_rule"] == rule
    assert _steps(doc)["a"]["trigger_rule"] == "all_success"


def test_trigger_rule__success_and_has_data_mixed__all_success() -> None:
    p = pipeline("sales")
    a, b, c = task(p, 1, "a"), task(p, 2, "b"), task(p, 3, "c")
    doc = pipeline_dag(p, metadata([p], [a, b, c], [edge(1, c, a, "SUCCESS"), edge(2, c, b, "HAS_DATA")]), OPTIONS)
    assert _steps(doc)["c"]["trigger_rule"] == "all_success"


def test_trigger_rule__success_and_failure_mixed__refused_with_the_reason() -> None:
    p = pipeline("sales")
    a, b, c = task(p, 1, "a"), task(p, 2, "b"), task(p, 3, "c")
    with pytest.raises(RefusedByPolicyError, match=r"task sales\.c waits for a \(SUCCESS\), b \(FAILURE\): Airflow "
                                                   "gives a task one trigger rule"):
        pipeline_dag(p, metadata([p], [a, b, c], [edge(1, c, a, "SUCCESS"), edge(2, c, b, "FAILURE")]), OPTIONS)


def test_one_done__airflow_older_than_2_5__refused_and_newer_accepted() -> None:
    p = pipeline("sales")
    a, b = task(p, 1, "a"), task(p, 2, "b", "ANY")
    found = metadata([p], [a, b], [edge(1, b, a, "ALWAYS")])
    with pytest.raises(RefusedByPolicyError, match="one_done trigger rule .*--airflow-version 2.2.0"):
        pipeline_dag(p, found, OPTIONS)
    assert _steps(pipeline_dag(p, found, YmlOptions(airflow_version=(3, 0))))["b"]["trigger_rule"] == "one_done"


def test_retries_and_timeouts__from_the_task__else_the_project_defaults() -> None:
    p = pipeline("sales")
    a = task(p, 1, "a", RETRIES="3", RETRY_DELAY_SECONDS="10", RETRY_BACKOFF="1.5", TASK_TIMEOUT_SECONDS="900")
    b = task(p, 2, "b")
    options = YmlOptions(retries=2, retry_delay_seconds=30, retry_backoff=3.0)
    steps = _steps(pipeline_dag(p, metadata([p], [a, b]), options))
    assert {k: steps["a"][k] for k in ("retries", "retry_delay_seconds", "retry_backoff", "timeout_seconds")} == {
        "retries": 3, "retry_delay_seconds": 10, "retry_backoff": 1.5, "timeout_seconds": 900}
    assert {k: steps["b"][k] for k in ("retries", "retry_delay_seconds", "retry_backoff", "timeout_seconds")} == {
        "retries": 2, "retry_delay_seconds": 30, "retry_backoff": 3.0, "timeout_seconds": 0}


def test_gates__pipeline_and_cross_pipeline_task_dependencies__sensors_before_init() -> None:
    up, down = pipeline("ingest", 1), pipeline("report", 2)
    load, other, build = task(up, 1, "load"), task(up, 2, "other"), task(down, 3, "build")
    found = metadata([up, down], [load, other, build], [edge(1, build, load, "FAILURE")],
                     [pipeline_edge(1, down, up, "SUCCESS")])
    doc = pipeline_dag(down, found, OPTIONS)
    steps = _steps(doc)
    assert steps[INIT]["upstream"] == ["__gate__ingest", "__gate__ingest__load"]
    assert steps["__gate__ingest"]["gate"] == {
        "pipeline": "ingest", "task": None, "type": "SUCCESS", "allowed_states": ["success"],
        "failed_states": ["failed"], "timeout_seconds": OPTIONS.gate_timeout_seconds, "poke_interval_seconds": 60}
    assert steps["__gate__ingest__load"]["gate"]["allowed_states"] == ["failed"]
    assert steps["build"]["upstream"] == [INIT]
    jsonschema.validate(doc, schema())


@pytest.mark.parametrize("code", ["load$(touch x)", "a;b", "__init__", "__finalize__", "x y", "1st"])
def test_b47_b64_generate_yml_refuses_a_code_that_is_not_an_identifier(code: str) -> None:
    """Even on an Engine DB that lets such a code in (one migrated without the check), no command is built."""
    p = pipeline("sales")
    with pytest.raises(RefusedByPolicyError, match=re.escape(f"task code {code!r} cannot be exported")):
        pipeline_dag(p, metadata([p], [task(p, 1, code)]), OPTIONS)
    bad = pipeline(code)
    with pytest.raises(RefusedByPolicyError, match="pipeline code .* cannot be exported to Airflow"):
        pipeline_dag(bad, metadata([bad], [task(bad, 1, "a")]), OPTIONS)


def test_cycle__refused_naming_it() -> None:
    p = pipeline("sales")
    a, b = task(p, 1, "a"), task(p, 2, "b")
    with pytest.raises(RefusedByPolicyError, match="dependency cycle"):
        pipeline_dag(p, metadata([p], [a, b], [edge(1, a, b), edge(2, b, a)]), OPTIONS)


def test_check_dag__self_dependency_or_second_init__refused() -> None:
    doc = _diamond()
    _steps(doc)["b"]["upstream"] = ["b"]
    with pytest.raises(EtlCraftError, match="step b has upstream"):
        check_dag(doc)
    doc = _diamond()
    doc["steps"].append(dict(_steps(doc)[INIT]))
    with pytest.raises(EtlCraftError, match="2 __init__ steps, expected exactly one"):
        check_dag(doc)


@pytest.mark.parametrize(("text", "expected"), [("2.2.0", (2, 2, 0)), ("3.0", (3, 0)), ("2.10.5", (2, 10, 5))])
def test_airflow_version__numeric_releases__accepted(text: str, expected: tuple[int, ...]) -> None:
    assert parse_airflow_version(text) == expected


@pytest.mark.parametrize(("text", "reason"), [("2.1.4", "older than 2.2.0"), ("3.0.0rc1", "not a numeric"),
                                              ("latest", "not a numeric")])
def test_airflow_version__older_or_not_numeric__refused(text: str, reason: str) -> None:
    with pytest.raises(UsageError, match=reason):
        parse_airflow_version(text)


@st.composite
def random_dags(draw: st.DrawFn) -> tuple[Any, Any]:
    """A pipeline of 1 to 12 tasks with random acyclic edges (each to an earlier task), one edge type and run
    condition per task, and random gates on other pipelines."""
    p = pipeline("main", 1)
    names = draw(st.lists(st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,8}", fullmatch=True), min_size=1, max_size=12,
                          unique_by=str.lower))
    tasks = [task(p, i + 10, name, draw(st.sampled_from(["ALL", "ANY"]))) for i, name in enumerate(names)]
    edges = []
    for i, t in enumerate(tasks):
        kind = draw(st.sampled_from(["SUCCESS", "HAS_DATA", "FAILURE", "ALWAYS"]))
        for up in draw(st.lists(st.sampled_from(tasks[:i]), unique=True)) if i else []:
            edges.append(edge(len(edges) + 1, t, up, kind))
    others = [pipeline(f"other{i}", 100 + i) for i in range(draw(st.integers(0, 3)))]
    return p, metadata([p, *others], tasks, edges, [pipeline_edge(i, p, o) for i, o in enumerate(others)])


@settings(max_examples=150, deadline=None)
@given(random_dags())
def test_property__random_dags__no_self_dependency_and_one_of_each_control_step(found: tuple[Any, Any]) -> None:
    p, meta = found
    doc = pipeline_dag(p, meta, YmlOptions(airflow_version=(3, 0)))
    ids = [s["task_id"] for s in doc["steps"]]
    assert ids.count(INIT) == 1 and ids.count(FINALIZE) == 1
    assert len(ids) == len(set(ids))
    for s in doc["steps"]:
        assert s["task_id"] not in s["upstream"]
        assert set(s["upstream"]) <= set(ids)
    edges = {(e.task_code, e.upstream_task_code) for e in meta.task_edges}
    for t in meta.tasks:
        expected = sorted(up for down, up in edges if down == t.code) or [INIT]
        assert _steps(doc)[t.code]["upstream"] == expected
    jsonschema.validate(doc, schema())
