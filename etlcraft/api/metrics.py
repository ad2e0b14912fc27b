"""GET /metrics: the Engine DB's runs, attempts, queues, latencies, leases, gate waits and server heartbeat in the
Prometheus text format (docs/reference/metrics.md).

A custom collector reads the Engine DB at each scrape, in one read transaction (the named queries of
etlcraft/engine/queries/metrics.sql), so every process that serves /metrics reports the same values and nothing is
lost when one restarts. Counters are computed from rows that never change once written, so they only grow (see the
reference for each). Labels carry project and pipeline codes, statuses, pool names, slot kinds and outcomes only:
never a parameter, a connection or a message. The Engine DB statement latency is the one in-process metric
(etlcraft.engine.latency). render_metrics needs no web framework: the route calls it, and so do the tests.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from etlcraft.core.enums import ATTEMPT_TERMINAL, RUN_TERMINAL, AttemptStatus, GateWaitOutcome, RunStatus, SlotKind
from etlcraft.core.errors import EngineDbError
from etlcraft.engine.db import EngineDB, format_timestamp
from etlcraft.engine.latency import STATEMENT_LATENCY, HistogramCounts
from etlcraft.engine.queries import fetch_all, fetch_one
from etlcraft.services.values import required_time

log = logging.getLogger(__name__)

#: Upper bounds (seconds) of the admission and dispatch latency buckets: the :le_1 ... :le_12 of metrics.sql.
LATENCY_BUCKETS: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
_LIVE_RUNS = (RunStatus.QUEUED, RunStatus.IN_PROGRESS)
_LIVE_ATTEMPTS = (AttemptStatus.QUEUED, AttemptStatus.CLAIMED, AttemptStatus.RUNNING)
_POOL = ["pool", "slot_kind"]
_PIPELINE = ["project", "pipeline"]


def render_metrics(engine_db: EngineDB) -> tuple[bytes, str]:
    """The body of a scrape of `engine_db` in the Prometheus text format, and its content type: version 0.0.4,
    which every Prometheus reads (the names here need nothing newer)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(EngineCollector(engine_db))
    return generate_latest(registry), CONTENT_TYPE_PLAIN_0_0_4


class EngineCollector(Collector):
    """The etl_craft_ metrics of one Engine DB, read at each collect()."""

    def __init__(self, db: EngineDB) -> None:
        self.db = db

    def collect(self) -> Iterable[Metric]:
        started = time.perf_counter()
        try:
            reads = read_engine(self.db)
        except EngineDbError as exc:  # the scrape still answers: the Engine DB is down, and says so
            log.warning("GET /metrics could not read the Engine DB: %s", exc)
            reads = None
        yield _gauge("etl_craft_engine_db_up", "1 when this scrape read the Engine DB, 0 when it could not.",
                     [], [([], 0 if reads is None else 1)])
        if reads is not None:
            yield from _run_metrics(reads)
            yield from _attempt_metrics(reads)
            yield from _latency_metrics(reads)
            yield from _health_metrics(reads)
        yield _histogram("etl_craft_engine_db_statement_duration_seconds",
                         "Seconds each Engine DB statement of this process took, from cursor execute to its return.",
                         [], [([], STATEMENT_LATENCY.snapshot())])
        yield _gauge("etl_craft_scrape_duration_seconds", "Seconds this scrape spent reading the Engine DB.",
                     [], [([], time.perf_counter() - started)])


def read_engine(db: EngineDB) -> dict[str, Any]:
    """Every row the metrics are made from, read in one transaction at the Engine DB's clock."""
    now = db.clock.now()
    at = now if db.is_postgres else format_timestamp(now)
    bounds = {f"le_{i}": bound for i, bound in enumerate(LATENCY_BUCKETS, start=1)}
    with db.read() as conn:
        reads: dict[str, Any] = {name: fetch_all(db, conn, f"metrics_{name}") for name in (
            "runs", "run_departures", "attempts", "retries", "pools", "gate_waits")}
        reads["queue"] = fetch_all(db, conn, "metrics_queue", now=at)
        reads["expired"] = fetch_one(db, conn, "metrics_expired_leases", now=at)
        reads["latencies"] = fetch_all(db, conn, f"metrics_latencies_{db.dialect}", **bounds)
        reads["server"] = fetch_one(db, conn, "overseer_open")
    reads["now"] = now
    return reads


# -- families ----------------------------------------------------------------------------------------------------

Samples = list[tuple[list[str], float]]


def _gauge(name: str, doc: str, labels: list[str], samples: Samples) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=labels)
    for values, value in samples:
        family.add_metric(values, value)
    return family


def _counter(name: str, doc: str, labels: list[str], samples: Samples) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=labels)
    for values, value in samples:
        family.add_metric(values, value)
    return family


def _histogram(name: str, doc: str, labels: list[str],
               samples: list[tuple[list[str], HistogramCounts]]) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, doc, labels=labels)
    for values, counts in samples:
        family.add_metric(values, [(floatToGoString(b), n) for b, n in counts.buckets], counts.total)
    return family


def _sorted(counts: Mapping[Any, float]) -> Samples:
    return [(list(key), value) for key, value in sorted(counts.items())]


# -- runs ------------------------------------------------------------------------------------------------------


def _run_metrics(reads: dict[str, Any]) -> Iterator[Metric]:
    current: dict[tuple[str, str, str], int] = defaultdict(int)
    for row in reads["runs"]:
        current[row["project_code"], row["pipeline_code"], row["status"]] += int(row["runs"])
    pipelines = sorted({(project, pipeline) for project, pipeline, _ in current})
    live = {(*p, str(s)): current.get((*p, s), 0) for p in pipelines for s in _LIVE_RUNS}
    ended = {(*p, str(s)): current.get((*p, s), 0) for p in pipelines for s in RUN_TERMINAL}
    for row in reads["run_departures"]:
        ended[row["project_code"], row["pipeline_code"], row["status"]] += int(row["runs"])
    created: dict[tuple[str, ...], float] = defaultdict(int)
    for (project, pipeline, _), count in current.items():
        created[project, pipeline] += count
    yield _gauge("etl_craft_runs", "Runs now QUEUED or IN-PROGRESS, per project, pipeline and status.",
                 [*_PIPELINE, "status"], _sorted(live))
    yield _counter("etl_craft_runs_created", "Runs created, per project and pipeline.", _PIPELINE, _sorted(created))
    yield _counter("etl_craft_runs_ended", "Times a run reached an ending (SUCCESS, FAILED, SKIPPED, CANCELLED), "
                   "per project, pipeline and ending; a reopened run that ends again counts again.",
                   [*_PIPELINE, "status"], _sorted(ended))


# -- attempts, queues, retries -----------------------------------------------------------------------------------


def _pool_keys(reads: dict[str, Any]) -> list[tuple[str, str]]:
    """Every (pool, slot kind) to report, with 0 where nothing happened: the pools of CFG_POOLS, the projects'
    default pools and any pool an attempt names, with every slot kind."""
    pools = {row["pool"] for row in reads["pools"]} | {row["pool"] for row in reads["attempts"]}
    kinds = {str(k) for k in SlotKind} | {row["slot_kind"] for row in reads["attempts"]}
    return sorted((pool, kind) for pool in pools for kind in kinds)


def _attempt_metrics(reads: dict[str, Any]) -> Iterator[Metric]:
    keys = _pool_keys(reads)
    by_status = {(r["pool"], r["slot_kind"], r["status"]): int(r["attempts"]) for r in reads["attempts"]}
    live = {(*k, str(s)): by_status.get((*k, s), 0) for k in keys for s in _LIVE_ATTEMPTS}
    ended = {(*k, str(s)): by_status.get((*k, s), 0) for k in keys for s in ATTEMPT_TERMINAL}
    lost = {k: by_status.get((*k, AttemptStatus.LOST), 0) for k in keys}
    retries = {k: 0 for k in keys} | {(r["pool"], r["slot_kind"]): int(r["retries"]) for r in reads["retries"]}
    queued = {(r["pool"], r["slot_kind"]): r for r in reads["queue"]}
    now = reads["now"]
    depth = {k: int(queued[k]["depth"]) if k in queued else 0 for k in keys}
    oldest = {k: max(0.0, (now - required_time(queued[k]["oldest"])).total_seconds()) if k in queued else 0.0
              for k in keys}
    expired = reads["expired"] or {"attempts": 0, "runs": 0}
    yield _gauge("etl_craft_attempts", "Attempts now QUEUED, CLAIMED or RUNNING, per pool, slot kind and status.",
                 [*_POOL, "status"], _sorted(live))
    yield _counter("etl_craft_attempts_ended", "Attempts ended, per pool, slot kind and final status.",
                   [*_POOL, "status"], _sorted(ended))
    yield _counter("etl_craft_attempts_lost", "Attempts ended LOST: their owner stopped renewing the lease.",
                   _POOL, _sorted(lost))
    yield _counter("etl_craft_retries", "Retries queued by the retry rule, per pool and slot kind.", _POOL,
                   _sorted(retries))
    yield _gauge("etl_craft_queue_depth", "Attempts a claim could take now (QUEUED, past any NOT_BEFORE), per pool "
                 "and slot kind.", _POOL, _sorted(depth))
    yield _gauge("etl_craft_queue_oldest_age_seconds", "Seconds the oldest claimable attempt has waited for a slot, "
                 "per pool and slot kind (0 when none waits).", _POOL, _sorted(oldest))
    yield _gauge("etl_craft_leases_expired", "Leases expired and not yet settled by reconcile (kind attempt: "
                 "CLAIMED or RUNNING attempts, kind run: IN-PROGRESS runs).", ["kind"],
                 [(["attempt"], int(expired["attempts"])), (["run"], int(expired["runs"]))])


# -- latencies -----------------------------------------------------------------------------------------------------


def _counts(row: dict[str, Any]) -> HistogramCounts:
    observed = int(row["observed"])
    buckets = tuple((b, int(row[f"le_{i}"] or 0)) for i, b in enumerate(LATENCY_BUCKETS, start=1))
    return HistogramCounts((*buckets, (float("inf"), observed)), float(row["total_seconds"] or 0), observed)


def _latency_metrics(reads: dict[str, Any]) -> Iterator[Metric]:
    admission: list[tuple[list[str], HistogramCounts]] = [
        ([], _counts(r)) for r in reads["latencies"] if r["latency"] == "admission"]
    dispatch = [([r["pool"], r["slot_kind"]], _counts(r)) for r in reads["latencies"] if r["latency"] == "dispatch"]
    dispatch.sort(key=lambda sample: sample[0])
    empty = HistogramCounts(tuple((b, 0) for b in (*LATENCY_BUCKETS, float("inf"))), 0.0, 0)
    yield _histogram("etl_craft_run_admission_latency_seconds", "Seconds from a run's creation (QUEUED_AT) to its "
                     "admission (START_DATE), over every admitted run.", [], admission or [([], empty)])
    yield _histogram("etl_craft_attempt_dispatch_latency_seconds", "Seconds from an attempt being claimable (the "
                     "later of QUEUED_AT and NOT_BEFORE) to its start (STARTED_AT), per pool and slot kind, over "
                     "every started attempt.", _POOL, dispatch)


# -- gate waits and the server -------------------------------------------------------------------------------------


def _health_metrics(reads: dict[str, Any]) -> Iterator[Metric]:
    waits = {row["outcome"]: int(row["waits"]) for row in reads["gate_waits"]}
    yield _gauge("etl_craft_gate_waits", "Gate waits open now: runs or tasks waiting for an upstream.", [],
                 [([], waits.get(None, 0))])
    yield _counter("etl_craft_gate_waits_ended", "Gate waits ended, per outcome.", ["outcome"],
                   [([str(o)], waits.get(str(o), 0)) for o in GateWaitOutcome])
    server = reads["server"]
    yield _gauge("etl_craft_server_running", "1 when a server (etl-craft server) is recorded as leading this "
                 "Engine DB (an open AUD_OVERSEERS row), else 0.", [], [([], 0 if server is None else 1)])
    if server is not None:
        age = (reads["now"] - required_time(server["heartbeat_at"])).total_seconds()
        yield _gauge("etl_craft_server_heartbeat_age_seconds", "Seconds since the leading server's last heartbeat "
                     "(AUD_OVERSEERS.HEARTBEAT_AT).", [], [([], max(0.0, age))])
