"""Task commands of the real `etl-craft run`: --task-code, --rerun (with and without --with-downstream),
--ignore-dependencies, --force, --init-only and --finalize-only. The scenarios that race or end runs run on a SQLite
and a PostgreSQL Engine DB; the option logic, which lives in the same database functions, on SQLite."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.py.support.cli import etl_craft, start_etl_craft
from tests.py.support.project import Task, release, wait_for, write_project

pytestmark = pytest.mark.process

# load fails until migration 0002 fixes its parameters; report depends on load; audit runs on its own.
FLOW = {"flow": [Task("load", {"fail": True}), Task("report"), Task("audit")]}
EDGES = [("report", "load", "SUCCESS")]
FIX_LOAD = ("UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = '{}' WHERE PARAMETER_NAME = 'INPUT_PARAMS'"
            " AND TASK_ID = (SELECT TASK_ID FROM CFG_TASKS WHERE TASK_CODE = 'load');\n")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def engine_url(request: pytest.FixtureRequest) -> str | None:
    return None if request.param == "sqlite" else request.getfixturevalue("empty_pg_url")


def _status(project: Path, run_id: int) -> dict[str, object]:
    done = etl_craft("status", "--pipeline-code", "flow", "--run-id", str(run_id), "--format", "json", cwd=project)
    assert done.code == 0, done.err
    return json.loads(done.out)


def _run_status(project: Path, run_id: int) -> str:
    return str(_status(project, run_id)["run"]["status"])  # type: ignore[index]


def _tasks(project: Path, run_id: int) -> dict[str, tuple[str, int]]:
    """task code -> (status, attempt count) in the run."""
    tasks = _status(project, run_id)["tasks"]
    return {t["task_code"]: (t["status"], t["attempts"]) for t in tasks}  # type: ignore[union-attr]


def _failed_run(tmp_path: Path, engine_url: str | None) -> Path:
    """Run 1 of flow ended FAILED: load FAILED, report SKIPPED, audit SUCCESS; then load's metadata is fixed."""
    project = write_project(tmp_path / "p", engine_url, FLOW, EDGES)
    assert etl_craft("migrate", cwd=project).code == 0
    assert etl_craft("run", "--pipeline-code", "flow", cwd=project).code == 9
    (project / "migrations" / "0002_fix_load.sql").write_text(FIX_LOAD)
    assert etl_craft("migrate", cwd=project).code == 0
    return project


def test_b25_rerun_of_a_failed_task__the_tasks_its_failure_skipped_run_before_the_run_ends(
        tmp_path: Path, engine_url: str | None) -> None:
    project = _failed_run(tmp_path, engine_url)
    rerun = etl_craft("run", "--pipeline-code", "flow", "--run-id", "1", "--rerun", "load", cwd=project)
    assert rerun.code == 0, rerun.err
    assert "run 1 stays IN-PROGRESS: 1 task(s) have not run yet (report)" in rerun.out
    assert _run_status(project, 1) == "IN-PROGRESS", "report never ran: the run must not end SUCCESS"
    assert _tasks(project, 1)["load"] == ("SUCCESS", 2)

    resumed = etl_craft("run", "--pipeline-code", "flow", "--run-id", "1", cwd=project)
    assert resumed.code == 0, resumed.err
    assert _run_status(project, 1) == "SUCCESS"
    assert _tasks(project, 1) == {"audit": ("SUCCESS", 1), "load": ("SUCCESS", 2), "report": ("SUCCESS", 1)}


def test_rerun_with_downstream__runs_the_skipped_dependents_and_ends_the_run(tmp_path: Path) -> None:
    project = _failed_run(tmp_path, None)
    done = etl_craft("run", "--pipeline-code", "flow", "--run-id", "1", "--rerun", "load", "--with-downstream",
                     "--reason", "load fixed", "--format", "json", cwd=project)
    assert done.code == 0, done.err
    outcome = json.loads(done.out)
    assert (outcome["status"], [a["task_code"] for a in outcome["attempts"]]) == ("SUCCESS", ["load", "report"])
    assert _tasks(project, 1) == {"audit": ("SUCCESS", 1), "load": ("SUCCESS", 2), "report": ("SUCCESS", 1)}


def test_a_skipped_task_that_later_succeeds__status_and_explain_no_longer_show_the_skip_reason(
        tmp_path: Path) -> None:
    project = _failed_run(tmp_path, None)
    reason = "load ended FAILED; its SUCCESS dependency can never be met"
    before = etl_craft("status", "--pipeline-code", "flow", "--run-id", "1", cwd=project)
    assert before.code == 0 and reason in before.out, before.out
    done = etl_craft("run", "--pipeline-code", "flow", "--run-id", "1", "--rerun", "load", "--with-downstream",
                     "--reason", "load fixed", cwd=project)
    assert done.code == 0, done.err
    shown = etl_craft("status", "--pipeline-code", "flow", "--run-id", "1", cwd=project)
    [report] = [line for line in shown.out.splitlines() if line.strip().startswith("report ")]
    assert "SUCCESS" in report and reason not in shown.out, shown.out
    [line] = [t for t in _status(project, 1)["tasks"] if t["task_code"] == "report"]  # type: ignore[union-attr]
    assert (line["status"], line["note"]) == ("SUCCESS", "")
    explained = etl_craft("explain", "--pipeline-code", "flow", "--run-id", "1", "--task-code", "report", cwd=project)
    assert explained.code == 0 and reason not in explained.out, explained.out


def test_b31_a_refused_rerun_changes_nothing(tmp_path: Path) -> None:
    project = _failed_run(tmp_path, None)
    before = _status(project, 1)
    refused = etl_craft("run", "--pipeline-code", "flow", "--run-id", "1", "--rerun", "audit", cwd=project)
    assert refused.code == 24
    assert ("task audit in run 1 of flow is SUCCESS: --rerun runs again a task that FAILED or was CANCELLED"
            in refused.err)
    assert _status(project, 1) == before, "the run was not reopened and nothing was queued"


def test_task_code__unmet_dependencies_wait_and_record_nothing__ignore_dependencies_runs_it(
        tmp_path: Path, engine_url: str | None) -> None:
    project = write_project(tmp_path / "p", engine_url, {"flow": [Task("load"), Task("report"), Task("audit")]},
                            EDGES)
    assert etl_craft("migrate", cwd=project).code == 0
    init = etl_craft("run", "--pipeline-code", "flow", "--run-key", "ext:1", "--init-only", "--format", "json",
                     cwd=project)
    assert init.code == 0, init.err
    run_id = json.loads(init.out)["pipeline_run_id"]

    waiting = etl_craft("run", "--pipeline-code", "flow", "--run-key", "ext:1", "--task-code", "report", cwd=project)
    assert waiting.code == 26
    assert "task report in run 1 of flow waits for its dependencies: load (SUCCESS needed, not run)" in waiting.err
    assert _tasks(project, run_id)["report"] == ("NOT RUN", 0), "nothing was recorded for report"

    forced = etl_craft("run", "--pipeline-code", "flow", "--run-key", "ext:1", "--task-code", "report",
                       "--ignore-dependencies", cwd=project)
    assert forced.code == 0, forced.err
    assert "2 task(s) have not run yet (audit, load)" in forced.out
    refused = etl_craft("run", "--pipeline-code", "flow", "--run-key", "ext:1", "--finalize-only", cwd=project)
    assert refused.code == 24, refused.err
    assert "run 1 cannot be finalized: task(s) audit (never ran), load (never ran) have not settled" in refused.err

    for task in ("load", "audit"):
        assert etl_craft("run", "--pipeline-code", "flow", "--run-key", "ext:1", "--task-code", task,
                         cwd=project).code == 0
    assert _run_status(project, run_id) == "SUCCESS", "the last task command ended the settled run"


def test_an_external_orchestrators_run__keyed_orchestrator_id__is_recorded_orchestrator_and_runs_task_by_task(
        tmp_path: Path) -> None:
    """The orchestrator's steps (docs/guides/running-pipelines.md) on a run keyed orchestrator:<its run id>: the
    run is recorded with trigger kind ORCHESTRATOR (MANUAL for any other key), and its tasks run to its end."""
    project = write_project(tmp_path / "p", None, {"flow": [Task("load"), Task("report"), Task("audit")]}, EDGES)
    assert etl_craft("migrate", cwd=project).code == 0
    key = ("--run-key", "orchestrator:manual__2026-03-14T06:00:00+00:00")
    init = etl_craft("run", "--pipeline-code", "flow", *key, "--init-only", "--format", "json", cwd=project)
    assert init.code == 0, init.err
    for task in ("load", "report", "audit"):
        ran = etl_craft("run", "--pipeline-code", "flow", *key, "--task-code", task, cwd=project)
        assert ran.code == 0, ran.err
    shown = etl_craft("status", "--pipeline-code", "flow", *key, "--format", "json", cwd=project)
    run = json.loads(shown.out)["run"]
    assert (run["trigger_kind"], run["status"]) == ("ORCHESTRATOR", "SUCCESS")
    assert etl_craft("run", "--pipeline-code", "flow", "--run-key", "ops-1", cwd=project).code == 0
    assert json.loads(etl_craft("status", "--pipeline-code", "flow", "--run-key", "ops-1", "--format", "json",
                                cwd=project).out)["run"]["trigger_kind"] == "MANUAL"


def test_force__reruns_a_succeeded_task_in_an_ended_run_and_ends_the_run_again(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", None, {"flow": [Task("load"), Task("report")]}, EDGES)
    assert etl_craft("migrate", cwd=project).code == 0
    assert etl_craft("run", "--pipeline-code", "flow", cwd=project).code == 0
    plain = etl_craft("run", "--pipeline-code", "flow", "--run-id", "1", "--task-code", "load", cwd=project)
    assert plain.code == 24 and "task load in run 1 of flow already succeeded; pass --force" in plain.err

    forced = etl_craft("run", "--pipeline-code", "flow", "--run-id", "1", "--task-code", "load", "--force",
                       "--reason", "reload after a source fix", cwd=project)
    assert forced.code == 0, forced.err
    assert _run_status(project, 1) == "SUCCESS"
    assert _tasks(project, 1) == {"load": ("SUCCESS", 2), "report": ("SUCCESS", 1)}


def test_w12_a_run_without_run_date_runs_as_of_today_in_the_projects_time_zone__not_utc(tmp_path: Path) -> None:
    """Run dates are the project's dates (Orchestration: Timezone), for a pipeline run, --init-only and a task command
    that creates its run. The zone is chosen so that its date is not UTC's now: UTC+14 from 10:00 UTC, UTC-11
    before."""
    zone = ZoneInfo("Pacific/Kiritimati" if datetime.now(UTC).hour >= 10 else "Pacific/Pago_Pago")
    project = write_project(tmp_path / "p", None, {"flow": [Task("load")]}, [])
    with (project / "craft-connector.yml").open("a", encoding="utf-8") as config:
        config.write(f"  Timezone: {zone.key}\n")
    assert etl_craft("migrate", cwd=project).code == 0
    before, utc_before = datetime.now(zone).date(), datetime.now(UTC).date()
    assert before != utc_before
    commands = (("run", "--pipeline-code", "flow"),
                ("run", "--pipeline-code", "flow", "--run-key", "ext:2", "--init-only"),
                ("run", "--pipeline-code", "flow", "--run-key", "ext:2", "--task-code", "load"),
                ("run", "--pipeline-code", "flow", "--run-key", "ext:3", "--task-code", "load"))
    for command in commands:
        done = etl_craft(*command, cwd=project)
        assert done.code == 0, done.out + done.err
    today = {before, datetime.now(zone).date()}  # the same date unless the zone's midnight passed meanwhile
    for run_id in (1, 2, 3):
        run_date = str(_status(project, run_id)["run"]["run_date"])  # type: ignore[index]
        assert date.fromisoformat(run_date[:10]) in today, (run_id, run_date, zone.key)


def test_option_contradictions__refused_naming_both(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", None, {"flow": [Task("load")]}, [])
    for args, message in (
            (("--task-code", "load", "--rerun", "load"), "--task-code and --rerun both name a task"),
            (("--with-downstream",), "--with-downstream needs the task to start from"),
            (("--rerun", "load", "--force"), "--force applies to one task: give --task-code T"),
            (("--init-only", "--finalize-only"), "--init-only and --finalize-only contradict each other"),
            (("--run-id", "1", "--run-key", "k"), "--run-id and --run-key both name the run")):
        done = etl_craft("run", "--pipeline-code", "flow", *args, cwd=project)
        assert (done.code, message in done.err) == (2, True), (args, done.err)


def test_b24_two_task_commands_for_one_task_at_once__it_runs_once__a_pipeline_run_waits_its_turn(
        tmp_path: Path, engine_url: str | None) -> None:
    project = write_project(tmp_path / "p", engine_url, {"flow": [Task("slow", {"hold": "slow"})]}, [])
    assert etl_craft("migrate", cwd=project).code == 0
    assert etl_craft("run", "--pipeline-code", "flow", "--run-key", "k", "--init-only", cwd=project).code == 0
    first = start_etl_craft("run", "--pipeline-code", "flow", "--run-key", "k", "--task-code", "slow", cwd=project,
                            log=tmp_path / "first.log")
    wait_for(lambda: any((project / "marks").glob("slow.*.start")) if (project / "marks").is_dir() else False,
             what="the task to start")
    second = etl_craft("run", "--pipeline-code", "flow", "--run-key", "k", "--task-code", "slow", cwd=project)
    assert second.code == 24 and "task slow in run 1 of flow is running now" in second.err, second.err
    whole = etl_craft("run", "--pipeline-code", "flow", "--run-key", "k", cwd=project)
    assert whole.code == 24 and "run 1 is supervised by" in whole.err, whole.err
    release(project, "slow")
    assert first.wait(timeout=60) == 0
    assert _run_status(project, 1) == "SUCCESS"
    assert len(list((project / "marks").glob("slow.*.start"))) == 1, "the task ran once"


def test_b11_a_task_command_binds_to_the_run_its_key_names__never_the_newest(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", None, {"flow": [Task("load"), Task("report")]}, EDGES)
    assert etl_craft("migrate", cwd=project).code == 0
    assert etl_craft("run", "--pipeline-code", "flow", "--run-key", "day:1", cwd=project).code == 0
    assert etl_craft("run", "--pipeline-code", "flow", "--run-key", "day:2", cwd=project).code == 0
    done = etl_craft("run", "--pipeline-code", "flow", "--run-key", "day:1", "--task-code", "report", "--force",
                     cwd=project)
    assert done.code == 0, done.err
    assert _tasks(project, 1) == {"load": ("SUCCESS", 1), "report": ("SUCCESS", 2)}, "the old run, by its key"
    assert _tasks(project, 2) == {"load": ("SUCCESS", 1), "report": ("SUCCESS", 1)}, "the newest run is untouched"
    assert _run_status(project, 1) == "SUCCESS"


def test_a_run_its_gate_refused__stays_queued_and_is_judged_again_by_the_next_run(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", None, {"up": [Task("extract")], "down": [Task("report")]}, [])
    (project / "migrations" / "0002_gate.sql").write_text(
        "INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE)"
        " SELECT d.PIPELINE_ID, u.PIPELINE_ID, 'SUCCESS' FROM CFG_PIPELINES d, CFG_PIPELINES u"
        " WHERE d.PIPELINE_CODE = 'down' AND u.PIPELINE_CODE = 'up';\n")
    assert etl_craft("migrate", cwd=project).code == 0
    waiting = etl_craft("run", "--pipeline-code", "down", cwd=project)
    assert waiting.code == 26, waiting.err
    assert "run 1 (manual:" in waiting.err
    assert "of down waits: pipeline gate not met: up has no SUCCESS run" in waiting.err
    assert etl_craft("run", "--pipeline-code", "up", cwd=project).code == 0
    admitted = etl_craft("run", "--pipeline-code", "down", "--format", "json", cwd=project)
    assert admitted.code == 0, admitted.err
    assert json.loads(admitted.out)["pipeline_run_id"] == 1, "the QUEUED run was admitted, not a new one created"


def test_retries__a_failed_attempt_is_retried_after_its_delay_until_retries_run_out(
        tmp_path: Path, engine_url: str | None) -> None:
    project = write_project(tmp_path / "p", engine_url, {"flow": [
        Task("flaky", {"fail_times": 1}), Task("broken", {"fail": True}), Task("after")]},
        [("after", "broken", "SUCCESS")])
    (project / "migrations" / "0002_retries.sql").write_text("".join(
        "INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, "
        f"'{name}', '{value}' FROM CFG_TASKS WHERE TASK_CODE = '{task}';\n"
        for task, name, value in (("flaky", "RETRIES", "2"), ("flaky", "RETRY_DELAY_SECONDS", "1"),
                                  ("broken", "RETRIES", "1"), ("broken", "RETRY_DELAY_SECONDS", "0"))))
    assert etl_craft("migrate", cwd=project).code == 0
    done = etl_craft("run", "--pipeline-code", "flow", cwd=project)
    assert done.code == 9, done.err
    assert "flaky: retry 1 of 2 (attempt" in done.out and ") in 1 s" in done.out
    assert "broken: retry 1 of 1 (attempt" in done.out and "broken: retry 2" not in done.out
    assert _tasks(project, 1) == {"after": ("SKIPPED", 0), "broken": ("FAILED", 2), "flaky": ("SUCCESS", 2)}
    starts = sorted(float(p.read_text().split()[0]) for p in (project / "marks").glob("flaky.*.start"))
    ends = sorted(float(p.read_text()) for p in (project / "marks").glob("flaky.*.end"))
    assert starts[1] - ends[0] >= 1.0, "the retry waited for its delay"


def test_pause_mid_run__running_tasks_finish__no_new_task_starts__the_run_resumes_after_resume(
        tmp_path: Path, engine_url: str | None) -> None:
    project = write_project(tmp_path / "p", engine_url, {"flow": [Task("load", {"hold": "load"}), Task("report")]},
                            EDGES)
    assert etl_craft("migrate", cwd=project).code == 0
    parent = start_etl_craft("run", "--pipeline-code", "flow", cwd=project, log=tmp_path / "run.log")
    wait_for(lambda: any((project / "marks").glob("load.*.start")) if (project / "marks").is_dir() else False,
             what="load to start")
    assert etl_craft("pause", "--pipeline-code", "flow", "--reason", "maintenance", cwd=project).code == 0
    release(project, "load")
    assert parent.wait(timeout=60) == 25
    said = (tmp_path / "run.log").read_text()
    assert "pipeline flow is paused (by tester@cli: maintenance), so run 1 admits no more tasks" in said
    assert _run_status(project, 1) == "IN-PROGRESS"
    assert _tasks(project, 1) == {"load": ("SUCCESS", 1), "report": ("NOT RUN", 0)}

    assert etl_craft("resume", "--pipeline-code", "flow", cwd=project).code == 0
    resumed = etl_craft("run", "--pipeline-code", "flow", "--run-id", "1", cwd=project)
    assert resumed.code == 0, resumed.err
    assert _tasks(project, 1) == {"load": ("SUCCESS", 1), "report": ("SUCCESS", 1)}


def test_run_on_a_paused_pipeline__refused_exit_24__nothing_written(tmp_path: Path) -> None:
    """docs/adr/0004: a run, a task command or --init-only asked for while the pipeline is paused starts nothing,
    writes nothing, says who paused it and how to resume, and exits 24 (not 0, as the seed had it)."""
    project = write_project(tmp_path / "p", None, {"flow": [Task("load"), Task("report")]}, EDGES)
    assert etl_craft("migrate", cwd=project).code == 0
    assert etl_craft("pause", "--pipeline-code", "flow", "--reason", "warehouse upgrade", cwd=project).code == 0
    audit = etl_craft("audit", "--format", "json", cwd=project).out
    for extra in ((), ("--run-key", "k1", "--task-code", "load"), ("--run-key", "k2", "--init-only")):
        refused = etl_craft("run", "--pipeline-code", "flow", *extra, cwd=project)
        assert refused.code == 24, (extra, refused.out, refused.err)
        assert refused.err.startswith("error: pipeline flow is paused since "), refused.err
        assert refused.err.rstrip().endswith("by tester@cli; a paused pipeline starts no run: resume it with "
                                             "etl-craft resume --pipeline-code flow"), refused.err
    history = etl_craft("history", "--pipeline-code", "flow", "--format", "json", cwd=project)
    assert json.loads(history.out)["runs"] == [], "no run was created"
    assert etl_craft("audit", "--format", "json", cwd=project).out == audit, "no action was recorded"
    assert not (project / "marks").exists(), "no task started"


def test_skip__an_operator_skip_stands__the_run_goes_on_without_the_task__each_command_is_recorded_once(
        tmp_path: Path) -> None:
    import sqlite3

    project = write_project(tmp_path / "p", None, {"flow": [Task("load"), Task("report"), Task("audit")]}, EDGES)
    assert etl_craft("migrate", cwd=project).code == 0
    assert etl_craft("run", "--pipeline-code", "flow", "--run-key", "d1", "--init-only", cwd=project).code == 0
    unexplained = etl_craft("run", "--pipeline-code", "flow", "--run-key", "d1", "--skip", "audit", cwd=project)
    assert unexplained.code == 2 and "--skip audit needs --reason" in unexplained.err
    skipped = etl_craft("run", "--pipeline-code", "flow", "--run-key", "d1", "--skip", "audit", "--reason",
                        "audited by hand", cwd=project)
    assert skipped.code == 0, skipped.err
    assert "task audit is SKIPPED in run 1 of flow (audited by hand)" in skipped.out
    assert etl_craft("run", "--pipeline-code", "flow", "--run-key", "d1", cwd=project).code == 0
    assert _tasks(project, 1) == {"audit": ("SKIPPED", 0), "load": ("SUCCESS", 1), "report": ("SUCCESS", 1)}
    assert _run_status(project, 1) == "SUCCESS"
    with sqlite3.connect(project / ".etl-craft" / "engine.db") as conn:
        actions = conn.execute("SELECT COMMAND, ACTOR, PIPELINE_RUN_ID, ARGUMENTS FROM AUD_ACTIONS"
                               " WHERE COMMAND LIKE 'run%' ORDER BY ACTION_ID").fetchall()
    assert [(c, a, r) for c, a, r, _ in actions] == [
        ("run --init-only", "tester@cli", 1), ("run --skip", "tester@cli", 1), ("run", "tester@cli", 1)]
    assert json.loads(actions[1][3])["reason"] == "audited by hand"


def test_migrate_refuses_a_parameter_value_its_parameter_cannot_take__nothing_of_the_file_is_applied(
        tmp_path: Path, engine_url: str | None) -> None:
    """RETRIES = 'two' is refused when it is written, naming the file, the task, the parameter, the value and what
    is expected, so no run ever meets it; the file is not applied at all, and once corrected it applies."""
    project = write_project(tmp_path / "p", engine_url, {"flow": [Task("flaky")]}, [])
    assert etl_craft("migrate", cwd=project).code == 0
    bad = project / "migrations" / "0002_retries.sql"
    bad.write_text("INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, "
                   "'RETRY_DELAY_SECONDS', '5' FROM CFG_TASKS WHERE TASK_CODE = 'flaky';\n"
                   "INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, "
                   "'RETRIES', 'two' FROM CFG_TASKS WHERE TASK_CODE = 'flaky';\n")
    refused = etl_craft("migrate", cwd=project)
    assert refused.code == 5, refused.err
    assert ("0002_retries.sql: task flaky, parameter RETRIES is 'two', not a whole number; expected a whole number "
            "of at least 0; nothing of this migration was applied") in refused.err, refused.err
    shown = etl_craft("show", "--pipeline-code", "flow", "--format", "json", cwd=project)
    assert "RETRY_DELAY_SECONDS" not in shown.out, "the file's first statement was not kept either"
    bad.write_text(bad.read_text().replace("'two'", "'2'"))
    assert etl_craft("migrate", cwd=project).code == 0
    assert "RETRY_DELAY_SECONDS" in etl_craft("show", "--pipeline-code", "flow", "--format", "json", cwd=project).out
