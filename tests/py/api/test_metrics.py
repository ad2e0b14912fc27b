"""GET /metrics (etlcraft/api/metrics.py) on both dialects: the text parses with Prometheus' own parser, the
counters and histograms move as a run is created, admitted, dispatched, ended, marked, lost and retried, they never
go back, and no secret reaches the output."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml
from prometheus_client.parser import text_string_to_metric_families

from etlcraft.api.metrics import render_metrics
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.support.attempts import OWNER, T0
from tests.py.support.scenario import Project

SECRET = "s3cr3t-Pl4nted-9f27"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(db: EngineDB) -> Samples:
    """Every sample of a scrape, by sample name and sorted labels, parsed by prometheus_client's parser."""
    body, content_type = render_metrics(db)
    assert content_type.startswith("text/plain; version=0.0.4")
    text = body.decode("utf-8")
    assert SECRET not in text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def at(db: EngineDB, seconds: float) -> None:
    db.clock.pin(T0 + timedelta(seconds=seconds))


@pytest.fixture
def project(engine_db: EngineDB) -> Project:
    """Pipeline orders with tasks load and ingest; a secret in a task parameter, a pipeline description and a
    pool's description, where no metric may show it."""
    at(engine_db, 0)
    project = Project(engine_db)
    project.pipeline("orders", DESCRIPTION=f"password {SECRET}")
    project.task("orders", "load")
    project.task("orders", "ingest", handler="PYTHON")
    with engine_db.write() as conn:
        conn.execute(sa.text(f"INSERT INTO {engine_db.qualify('CFG_TASK_PARAMETERS')} (TASK_ID, PARAMETER_NAME,"
                             " PARAMETER_VALUE) VALUES (:t, 'API_TOKEN', :v), (:t, 'RETRIES', '1')"),
                     {"t": project.tasks["load"], "v": SECRET})
        conn.execute(sa.text(f"INSERT INTO {engine_db.qualify('CFG_POOLS')} (POOL_NAME, DESCRIPTION)"
                             " VALUES ('etl_pool', :d)"), {"d": SECRET})
    return project


def attempt_of(db: EngineDB, run_id: int, task_id: int, *, claim_at: float, start_at: float | None) -> int:
    """Queue the (warehouse) task's attempt, claim it at claim_at and (unless None) start it at start_at."""
    queued = call(db, "queue_attempt", run_id=run_id, task_id=task_id)[0]
    at(db, claim_at)
    claimed = call(db, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id=OWNER)
    assert [c.attempt_id for c in claimed] == [queued.attempt_id]
    if start_at is not None:
        at(db, start_at)
        call(db, "start_attempt", attempt_id=queued.attempt_id, owner_id=OWNER, host="h", pid=1, process_start="1")
    return int(queued.attempt_id)


def test_metrics__a_run_from_creation_to_its_end__counters_and_histograms_move(project: Project) -> None:
    db = project.db
    pipe = {"project": "proj", "pipeline": "orders"}
    before = scrape(db)
    assert value(before, "etl_craft_engine_db_up") == 1
    assert value(before, "etl_craft_runs_created_total", **pipe) == 0

    run_id = project.run("orders", key="manual:1", status="QUEUED")
    queued = scrape(db)
    assert value(queued, "etl_craft_runs_created_total", **pipe) == 1
    assert value(queued, "etl_craft_runs", **pipe, status="QUEUED") == 1
    assert value(queued, "etl_craft_runs_ended_total", **pipe, status="SUCCESS") == 0

    at(db, 2)
    call(db, "admit_run", run_id=run_id, owner_id=OWNER)
    at(db, 3)
    pending = call(db, "queue_attempt", run_id=run_id, task_id=project.tasks["load"])[0]
    at(db, 10)
    waiting = scrape(db)
    pool = {"pool": "default", "slot_kind": "warehouse"}
    assert value(waiting, "etl_craft_runs", **pipe, status="IN-PROGRESS") == 1
    assert value(waiting, "etl_craft_run_admission_latency_seconds_count") == 1
    assert value(waiting, "etl_craft_run_admission_latency_seconds_sum") == pytest.approx(2, abs=0.01)
    assert value(waiting, "etl_craft_run_admission_latency_seconds_bucket", le="1.0") == 0
    assert value(waiting, "etl_craft_run_admission_latency_seconds_bucket", le="2.5") == 1
    assert value(waiting, "etl_craft_queue_depth", **pool) == 1
    assert value(waiting, "etl_craft_queue_oldest_age_seconds", **pool) == pytest.approx(7, abs=0.01)
    assert value(waiting, "etl_craft_attempts", **pool, status="QUEUED") == 1

    call(db, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id=OWNER)
    at(db, 12)
    call(db, "start_attempt", attempt_id=pending.attempt_id, owner_id=OWNER, host="h", pid=1, process_start="1")
    call(db, "finish_attempt", attempt_id=pending.attempt_id, owner_id=OWNER, status="SUCCESS",
         error_message=f"never shown {SECRET}")
    call(db, "skip_task_run", run_id=run_id, task_id=project.tasks["ingest"], reason="not today")
    call(db, "finalize_run", run_id=run_id, owner_id=OWNER)
    ended = scrape(db)
    assert value(ended, "etl_craft_runs_ended_total", **pipe, status="SUCCESS") == 1
    assert value(ended, "etl_craft_runs", **pipe, status="IN-PROGRESS") == 0
    assert value(ended, "etl_craft_attempts_ended_total", **pool, status="SUCCESS") == 1
    assert value(ended, "etl_craft_queue_depth", **pool) == 0
    assert value(ended, "etl_craft_attempt_dispatch_latency_seconds_count", **pool) == 1
    assert value(ended, "etl_craft_attempt_dispatch_latency_seconds_sum", **pool) == pytest.approx(9, abs=0.01)
    assert value(ended, "etl_craft_attempt_dispatch_latency_seconds_bucket", **pool, le="5.0") == 0
    assert value(ended, "etl_craft_attempt_dispatch_latency_seconds_bucket", **pool, le="10.0") == 1
    assert (value(ended, "etl_craft_engine_db_statement_duration_seconds_count")
            > value(before, "etl_craft_engine_db_statement_duration_seconds_count"))

    # An operator marks the run FAILED: the SUCCESS it reached stays counted, the FAILED ending is one more.
    call(db, "mark_run", run_id=run_id, status="FAILED", reason="bad data found later")
    marked = scrape(db)
    assert value(marked, "etl_craft_runs_ended_total", **pipe, status="SUCCESS") == 1
    assert value(marked, "etl_craft_runs_ended_total", **pipe, status="FAILED") == 1
    assert value(marked, "etl_craft_runs_created_total", **pipe) == 1


def test_metrics__an_expired_lease__counted_expired_then_lost_and_retried(project: Project) -> None:
    db = project.db
    run_id = project.run("orders", key="manual:2")
    attempt_id = attempt_of(db, run_id, project.tasks["load"], claim_at=1, start_at=2)
    pool = {"pool": "default", "slot_kind": "warehouse"}
    at(db, 2 + 61)  # start_attempt leased it for 60 seconds
    expired = scrape(db)
    assert value(expired, "etl_craft_run_admission_latency_seconds_count") == 0  # created IN-PROGRESS: not admitted
    assert value(expired, "etl_craft_leases_expired", kind="attempt") == 1
    assert value(expired, "etl_craft_attempts", **pool, status="RUNNING") == 1
    assert value(expired, "etl_craft_attempts_lost_total", **pool) == 0

    lost = [r.attempt_id for r in call(db, "reconcile_expired")]
    assert lost == [attempt_id]
    settled = scrape(db)
    assert value(settled, "etl_craft_leases_expired", kind="attempt") == 0
    assert value(settled, "etl_craft_attempts_lost_total", **pool) == 1
    assert value(settled, "etl_craft_attempts_ended_total", **pool, status="LOST") == 1
    assert value(settled, "etl_craft_retries_total", **pool) == 1  # RETRIES = 1 on the task
    assert value(settled, "etl_craft_attempts", **pool, status="QUEUED") == 1
    # the other pools are reported too, with 0, so a first increase is seen by rate() and increase()
    assert ("etl_craft_attempts_lost_total", (("pool", "etl_pool"), ("slot_kind", "warehouse"))) in settled


def test_metrics__a_leading_server__its_heartbeat_age(project: Project) -> None:
    db = project.db
    assert value(scrape(db), "etl_craft_server_running") == 0
    call(db, "register_overseer", owner_id="h:1:a", host="h", pid=1, version="0.1")
    at(db, 45)
    samples = scrape(db)
    assert value(samples, "etl_craft_server_running") == 1
    assert value(samples, "etl_craft_server_heartbeat_age_seconds") == pytest.approx(45, abs=0.01)


def test_metrics__engine_db_unreachable__answers_down_without_the_url_or_password() -> None:
    db = EngineDB(f"postgresql://metrics:{SECRET}@127.0.0.1:9/engine", schema="etl_craft")
    body, _ = render_metrics(db)
    text = body.decode("utf-8")
    assert SECRET not in text and "127.0.0.1" not in text
    samples = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}
    assert samples["etl_craft_engine_db_up"] == 0
    assert "etl_craft_runs_created_total" not in samples
    db.dispose()


def reported_names(db: EngineDB) -> set[str]:
    """Every name a PromQL expression may use for what a scrape of `db` reports, samples or not: each family's
    name, a counter's _total, a histogram's _bucket, _count and _sum."""
    body, _ = render_metrics(db)
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}
    return {family.name + suffix for family in text_string_to_metric_families(body.decode("utf-8"))
            for suffix in ("", *suffixes.get(family.type, ()))}


def test_alert_rules__parse_as_yaml_and_name_only_reported_metrics(project: Project) -> None:
    rules_file = Path(__file__).resolve().parents[3] / "docs" / "reference" / "alert-rules.yml"
    rules = [rule for group in yaml.safe_load(rules_file.read_text(encoding="utf-8"))["groups"]
             for rule in group["rules"]]
    call(project.db, "register_overseer", owner_id="h:1:a", host="h", pid=1, version="0.1")
    reported = reported_names(project.db)
    guide = (rules_file.parents[1] / "guides" / "alerting-rules.md").read_text(encoding="utf-8")
    assert rules
    for rule in rules:
        named = set(re.findall(r"\betl_craft_[a-z_]+", rule["expr"]))
        assert named, f"alert {rule['alert']} names no etl_craft_ metric"
        assert named <= reported, f"alert {rule['alert']} names {sorted(named - reported)}, which /metrics lacks"
        assert rule["labels"]["severity"] in ("critical", "warning") and rule["annotations"]["summary"]
        assert f"`{rule['alert']}`" in guide, f"docs/guides/alerting-rules.md does not explain {rule['alert']}"


def test_metrics_reference__documents_every_reported_metric(project: Project) -> None:
    call(project.db, "register_overseer", owner_id="h:1:a", host="h", pid=1, version="0.1")
    body, _ = render_metrics(project.db)
    reference = (Path(__file__).resolve().parents[3] / "docs" / "reference" / "metrics.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(etl_craft_[a-z_]+)` \|", reference, flags=re.MULTILINE))
    families = {f.name + ("_total" if f.type == "counter" else "")
                for f in text_string_to_metric_families(body.decode("utf-8"))}
    assert families == documented


def test_metrics__a_gate_that_waits__open_then_ended_abandoned(project: Project) -> None:
    db = project.db
    project.pipeline("upstream")
    project.pipeline_depends("orders", on="upstream")
    project.run("upstream", key="manual:up")  # IN-PROGRESS: the gate may still be met, so it waits
    run_id = project.run("orders", key="manual:3", status="QUEUED")
    admitted = call(db, "admit_run", run_id=run_id, owner_id=OWNER, gate_wait_seconds=600)[0]
    assert admitted.status == "QUEUED"
    waiting = scrape(db)
    assert value(waiting, "etl_craft_gate_waits") == 1
    assert value(waiting, "etl_craft_gate_waits_ended_total", outcome="ABANDONED") == 0
    call(db, "cancel_run", run_id=run_id, reason="not needed")
    ended = scrape(db)
    assert value(ended, "etl_craft_gate_waits") == 0
    assert value(ended, "etl_craft_gate_waits_ended_total", outcome="ABANDONED") == 1
    assert value(ended, "etl_craft_runs_ended_total", project="proj", pipeline="orders", status="CANCELLED") == 1
