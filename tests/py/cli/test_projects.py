"""Projects in one Engine DB (seed S5.G): two project folders whose craft-connector.yml name the same Engine DB, each
migrating its own metadata, with the same pipeline code; --project-code, Orchestration: Project and ?project= choose
which one a command acts on."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from etlcraft.api.serve import api_in_thread
from etlcraft.config.loader import load_config
from etlcraft.engine.db import EngineDB
from tests.py.support.cli import Result, etl_craft
from tests.py.support.project import WORK_SCRIPT

pytestmark = pytest.mark.process


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def engine_url(request: pytest.FixtureRequest) -> str | None:
    return None if request.param == "sqlite" else request.getfixturevalue("empty_pg_url")


def _metadata(code: str, pipelines: tuple[str, ...] = ("orders",)) -> str:
    """Project `code` with `pipelines`, each one PYTHON task `load`; every row found through the project's code."""
    sql = [f"INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('{code}');"]
    for pipeline in pipelines:
        sql.append(f"INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, '{pipeline}' FROM "
                   f"CFG_PROJECTS WHERE PROJECT_CODE = '{code}';")
        sql.append(f"INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, SCRIPT_FILE) SELECT p.PIPELINE_ID, "
                   f"'load', 'PYTHON', 'work.py' FROM CFG_PIPELINES p JOIN CFG_PROJECTS pr ON pr.PROJECT_ID = "
                   f"p.PROJECT_ID WHERE pr.PROJECT_CODE = '{code}' AND p.PIPELINE_CODE = '{pipeline}';")
    return "\n".join(sql) + "\n"


def _project(root: Path, code: str, engine_url: str | None, *, name_it: bool = True,
             pipelines: tuple[str, ...] = ("orders",)) -> Path:
    """A project folder for project `code` whose Engine DB is the shared one (engine_url, else ../engine.db)."""
    folder = root / code
    (folder / "ingestion_scripts").mkdir(parents=True)
    (folder / "migrations").mkdir()
    engine = (f"Engine:\n  dialect: postgresql\n  url: {engine_url}\n" if engine_url
              else "Engine:\n  dialect: sqlite\n  path: ../engine.db\n")
    orchestration = f"Orchestration:\n  Project: {code}\n" if name_it else ""
    (folder / "craft-connector.yml").write_text(
        engine + "Warehouse:\n  dialect: duckdb\n  path: warehouse.duckdb\n" + orchestration)
    (folder / "ingestion_scripts" / "work.py").write_text(WORK_SCRIPT)
    (folder / "migrations" / "0001_metadata.sql").write_text(_metadata(code, pipelines))
    return folder


def _two_projects(tmp_path: Path, engine_url: str | None, *, name_them: bool = True) -> tuple[Path, Path]:
    """Projects a and b; folders that do not name their project in Orchestration: Project migrate with
    --project-code, which names the ledger of their metadata migrations."""
    a, b = (_project(tmp_path, c, engine_url, name_it=name_them) for c in ("a", "b"))
    for folder in (a, b):
        done = etl_craft(*(() if name_them else ("--project-code", folder.name)), "migrate", cwd=folder)
        assert done.code == 0, done.err
    return a, b


def _db(folder: Path) -> EngineDB:
    engine = load_config(folder).engine
    return EngineDB(engine.url, schema=engine.schema or "etl_craft")


def _runs_by_project(folder: Path) -> list[tuple[str, str, str]]:
    """(project, pipeline, run key) of every run in the shared Engine DB, in run order."""
    db = _db(folder)
    try:
        with db.read() as conn:
            rows = conn.execute(sa.text(
                f"SELECT pr.PROJECT_CODE, p.PIPELINE_CODE, r.RUN_KEY FROM {db.qualify('AUD_PIPELINES_RUN_LOG')} r"
                f" JOIN {db.qualify('CFG_PIPELINES')} p ON p.PIPELINE_ID = r.PIPELINE_ID"
                f" JOIN {db.qualify('CFG_PROJECTS')} pr ON pr.PROJECT_ID = p.PROJECT_ID ORDER BY r.PIPELINE_RUN_ID"))
            return [(str(x), str(y), str(z)) for x, y, z in rows]
    finally:
        db.dispose()


def _paused(folder: Path) -> dict[str, bool]:
    """project.pipeline -> whether it is paused (etl-craft list, which lists every project)."""
    done = etl_craft("list", "--format", "json", cwd=folder)
    assert done.code == 0, done.err
    return {f"{p['project']}.{p['code']}": p["paused"] for p in json.loads(done.out)["pipelines"]}


def test_two_projects__the_same_pipeline_code__each_run_is_recorded_on_its_own_pipeline(
        tmp_path: Path, engine_url: str | None) -> None:
    a, b = _two_projects(tmp_path, engine_url, name_them=False)
    for code in ("a", "b"):
        done = etl_craft("--project-code", code, "run", "--pipeline-code", "orders", "--run-key", f"k-{code}", cwd=a)
        assert done.code == 0, done.err
    assert _runs_by_project(a) == [("a", "orders", "k-a"), ("b", "orders", "k-b")]
    history = etl_craft("history", "--pipeline-code", "orders", "--format", "json", cwd=b,
                        env={"ETL_CRAFT_PROJECT_CODE": "b"})
    assert history.code == 0, history.err
    assert [r["run_key"] for r in json.loads(history.out)["runs"]] == ["k-b"]


def test_two_projects__no_project_chosen__the_command_is_refused_listing_them(
        tmp_path: Path, engine_url: str | None) -> None:
    a, _ = _two_projects(tmp_path, engine_url, name_them=False)
    done = etl_craft("run", "--pipeline-code", "orders", cwd=a)
    assert done.code == 23, done.err
    assert done.err == ("error: this Engine DB serves 2 projects (a, b) and no project was chosen; expected one: give "
                        "--project-code P (ETL_CRAFT_PROJECT_CODE), set Orchestration: Project in "
                        "craft-connector.yml, or add ?project=P to the API request\n")
    assert _runs_by_project(a) == [], "nothing was recorded"
    unknown = etl_craft("--project-code", "c", "status", "--pipeline-code", "orders", cwd=a)
    assert unknown.code == 22
    assert "project c (from --project-code (or ?project=)) is not an active project of this Engine DB, whose " \
           "projects are a, b" in unknown.err


def test_orchestration_project_picks_the_default__and_names_the_migration_ledger(
        tmp_path: Path, engine_url: str | None) -> None:
    a, b = _two_projects(tmp_path, engine_url)  # each folder names its project: each keeps its own ledger
    for folder in (a, b):
        again = etl_craft("migrate", cwd=folder)
        assert again.code == 0 and "nothing to apply" in again.out, again.out + again.err
        assert etl_craft("run", "--pipeline-code", "orders", "--run-key", f"from-{folder.name}", cwd=folder).code == 0
    assert _runs_by_project(a) == [("a", "orders", "from-a"), ("b", "orders", "from-b")]
    chosen = etl_craft("--project-code", "a", "history", "--pipeline-code", "orders", "--format", "json", cwd=b)
    assert [r["run_key"] for r in json.loads(chosen.out)["runs"]] == ["from-a"], "--project-code wins"


def test_a_cross_project_dependency_gates_the_run__and_validate_reports_it_dangling(
        tmp_path: Path, engine_url: str | None) -> None:
    a, b = _two_projects(tmp_path, engine_url)
    (a / "migrations" / "0002_depends_on_b.sql").write_text(
        "INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE)"
        " SELECT d.PIPELINE_ID, u.PIPELINE_ID, 'SUCCESS' FROM CFG_PIPELINES d, CFG_PIPELINES u, CFG_PROJECTS dp,"
        " CFG_PROJECTS up WHERE dp.PROJECT_ID = d.PROJECT_ID AND up.PROJECT_ID = u.PROJECT_ID AND"
        " dp.PROJECT_CODE = 'a' AND up.PROJECT_CODE = 'b' AND d.PIPELINE_CODE = 'orders'"
        " AND u.PIPELINE_CODE = 'orders';\n")
    assert etl_craft("migrate", cwd=a).code == 0
    waiting = etl_craft("run", "--pipeline-code", "orders", cwd=a)
    assert waiting.code == 26, waiting.err
    assert "pipeline gate not met: orders has no SUCCESS run" in waiting.err
    assert etl_craft("run", "--pipeline-code", "orders", cwd=b).code == 0
    admitted = etl_craft("run", "--pipeline-code", "orders", cwd=a)
    assert admitted.code == 0, admitted.err
    assert validated(a).code == 0
    (b / "migrations" / "0002_switch_off.sql").write_text(
        "UPDATE CFG_PIPELINES SET ACTIVE_FLAG = 'N' WHERE PIPELINE_CODE = 'orders'"
        " AND PROJECT_ID = (SELECT PROJECT_ID FROM CFG_PROJECTS WHERE PROJECT_CODE = 'b');\n")
    assert etl_craft("migrate", cwd=b).code == 0
    dangling = validated(a)
    assert dangling.code != 0
    problems = json.loads(dangling.out)["problems"]
    assert [(p["check"], p["object"]) for p in problems] == [("dependency-inactive", "pipeline orders")]
    assert problems[0]["message"].startswith(
        "pipeline orders: it depends on pipeline orders of project b (a dependency of project a on another project), "
        "which is switched off (ACTIVE_FLAG = 'N'); expected dependencies on active "
        "pipelines only"), problems[0]["message"]
    assert validated(b).code == 0, "project b's own check knows nothing of a's dependency"


def validated(folder: Path) -> Result:
    return etl_craft("validate", "--format", "json", cwd=folder)


def test_pause_project_code__pauses_every_pipeline_of_it_and_none_of_the_other(
        tmp_path: Path, engine_url: str | None) -> None:
    a = _project(tmp_path, "a", engine_url, pipelines=("orders", "stock"))
    b = _project(tmp_path, "b", engine_url, pipelines=("orders",))
    for folder in (a, b):
        assert etl_craft("migrate", cwd=folder).code == 0
    paused = etl_craft("pause", "--project-code", "a", "--reason", "warehouse move", "--format", "json", cwd=b)
    assert paused.code == 0, paused.err
    doc = json.loads(paused.out)
    assert (doc["schema"], [p["pipeline_code"] for p in doc["pipelines"]]) == (
        "etl-craft/project-pause/1", ["orders", "stock"])
    assert _paused(a) == {"a.orders": True, "a.stock": True, "b.orders": False}
    refused = etl_craft("run", "--pipeline-code", "orders", cwd=a)
    assert refused.code != 0 and "paused" in refused.err
    assert etl_craft("run", "--pipeline-code", "orders", cwd=b).code == 0, "project b runs on"
    again = etl_craft("pause", "--project-code", "a", "--reason", "twice", cwd=a)
    assert again.code == 24 and "project a has no active pipeline that is not paused" in again.err
    resumed = etl_craft("resume", "--project-code", "a", cwd=a)
    assert resumed.code == 0, resumed.err
    assert _paused(a) == {"a.orders": False, "a.stock": False, "b.orders": False}
    one = etl_craft("pause", "--project-code", "b", "--pipeline-code", "orders", "--reason", "one", cwd=a)
    assert one.code == 0, one.err
    assert _paused(a) == {"a.orders": False, "a.stock": False, "b.orders": True}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path, engine_url: str | None) -> Iterator[tuple[str, dict[str, str]]]:
    """The API over an Engine DB of projects a and b (each with pipeline orders, run once with key k-<code>),
    served with project a's configuration, which does not name a project; the operator token's header."""
    a, b = _two_projects(tmp_path, engine_url, name_them=False)
    for folder in (a, b):
        done = etl_craft("run", "--pipeline-code", "orders", "--run-key", f"k-{folder.name}", cwd=folder,
                         env={"ETL_CRAFT_PROJECT_CODE": folder.name})
        assert done.code == 0, done.err
    token = etl_craft("token", "create", "--name", "ops", "--role", "operator", "--format", "json", cwd=a)
    assert token.code == 0, token.err
    db = _db(a)
    address = f"127.0.0.1:{_free_port()}"
    problems: list[str] = []
    with api_in_thread(db, load_config(a), address, problems.append) as server:
        assert server is not None, problems
        yield f"http://{address}/api/v1", {"Authorization": f"Bearer {json.loads(token.out)['token']}"}
    db.dispose()


def test_the_api__project_query_selects_the_pipeline_of_that_project(served: tuple[str, dict[str, str]]) -> None:
    base, headers = served
    for code in ("a", "b"):
        runs = httpx.get(f"{base}/pipelines/orders/runs", params={"project": code}, headers=headers, timeout=60)
        assert runs.status_code == 200, runs.text
        assert [r["run_key"] for r in runs.json()["runs"]] == [f"k-{code}"]
    unnamed = httpx.get(f"{base}/pipelines/orders/runs", headers=headers, timeout=60)
    assert unnamed.status_code == 409, unnamed.text
    assert "serves 2 projects (a, b) and no project was chosen" in unnamed.text
    paused = httpx.post(f"{base}/pipelines/orders/pause", params={"project": "b"}, json={"reason": "api"},
                        headers=headers, timeout=60)
    assert paused.status_code == 200, paused.text
    shown = {c: httpx.get(f"{base}/pipelines/orders", params={"project": c}, headers=headers, timeout=60).json()
             for c in ("a", "b")}
    assert {c: (d["pipeline"]["project"], d["pipeline"]["paused"]) for c, d in shown.items()} == {
        "a": ("a", False), "b": ("b", True)}


def _listed(folder: Path, *args: str, env: dict[str, str] | None = None) -> list[str]:
    done = etl_craft(*args, "list", "--format", "json", cwd=folder, env=env)
    assert done.code == 0, done.err
    return [f"{p['project']}.{p['code']}" for p in json.loads(done.out)["pipelines"]]


def test_list__project_code_lists_that_project_only__without_it_every_project(
        tmp_path: Path, engine_url: str | None) -> None:
    a = _project(tmp_path, "a", engine_url, pipelines=("orders", "stock"))
    b = _project(tmp_path, "b", engine_url, pipelines=("orders",))
    for folder in (a, b):
        assert etl_craft("migrate", cwd=folder).code == 0
    assert _listed(a) == ["a.orders", "a.stock", "b.orders"], "Orchestration: Project does not filter the list"
    assert _listed(b, "--project-code", "a") == ["a.orders", "a.stock"]
    assert _listed(a, env={"ETL_CRAFT_PROJECT_CODE": "b"}) == ["b.orders"]
    every = etl_craft("list", cwd=a)
    assert every.out.splitlines()[0].split()[:2] == ["PROJECT", "PIPELINE"], every.out
    one = etl_craft("--project-code", "a", "list", cwd=a)
    assert one.out.splitlines()[0].split()[:1] == ["PIPELINE"], one.out
    assert [line.split()[0] for line in one.out.splitlines()[1:]] == ["orders", "stock"], one.out
    unknown = etl_craft("--project-code", "c", "list", cwd=a)
    assert unknown.code == 22, unknown.err
    assert "project c (from --project-code (or ?project=)) is not an active project of this Engine DB, whose " \
           "projects are a, b" in unknown.err


def test_the_api__pipelines_project_query_lists_that_project_only(served: tuple[str, dict[str, str]],
                                                                  tmp_path: Path) -> None:
    base, headers = served

    def listed(**params: str) -> list[str]:
        answer = httpx.get(f"{base}/pipelines", params=params, headers=headers, timeout=60)
        assert answer.status_code == 200, answer.text
        return [f"{p['project']}.{p['code']}" for p in answer.json()["pipelines"]]

    assert listed() == ["a.orders", "b.orders"]
    assert listed(project="b") == ["b.orders"]
    unknown = httpx.get(f"{base}/pipelines", params={"project": "c"}, headers=headers, timeout=60)
    assert (unknown.status_code, unknown.json()["code"]) == (404, "NOT_FOUND"), unknown.text
    nowhere = tmp_path / "operator-laptop"
    nowhere.mkdir()
    env = {"ETL_CRAFT_SERVER": base, "ETL_CRAFT_TOKEN": headers["Authorization"].removeprefix("Bearer ")}
    assert _listed(nowhere, "--project-code", "a", env=env) == ["a.orders"]
    assert _listed(nowhere, env=env) == ["a.orders", "b.orders"]


def test_server__pause_project_code__pauses_that_project_only(served: tuple[str, dict[str, str]],
                                                              tmp_path: Path) -> None:
    base, headers = served
    nowhere = tmp_path / "operator-laptop"
    nowhere.mkdir()
    env = {"ETL_CRAFT_SERVER": base, "ETL_CRAFT_TOKEN": headers["Authorization"].removeprefix("Bearer ")}
    paused = etl_craft("pause", "--project-code", "b", "--reason", "move", "--format", "json", cwd=nowhere, env=env)
    assert paused.code == 0, paused.err
    assert json.loads(paused.out)["pipelines"][0]["pipeline_code"] == "orders"
    shown = httpx.get(f"{base}/pipelines", headers=headers, timeout=60).json()["pipelines"]
    assert {f"{p['project']}.{p['code']}": p["paused"] for p in shown} == {"a.orders": False, "b.orders": True}


def test_migrate__a_second_folder_without_its_project_name__the_refusal_names_the_ledger_and_the_remedy(
        tmp_path: Path, engine_url: str | None) -> None:
    a = _project(tmp_path, "a", engine_url)
    b = _project(tmp_path, "b", engine_url, name_it=False)
    assert etl_craft("migrate", cwd=a).code == 0
    unnamed = etl_craft("migrate", cwd=b)
    assert unnamed.code == 5, unnamed.err
    assert unnamed.err.startswith(f"error: PROJECT migration {b / 'migrations' / '0001_metadata.sql'} was applied "
                                  "with checksum "), unnamed.err
    assert unnamed.err.endswith(
        ", in the Engine DB's ledger of project a: this folder names no project (no Orchestration: Project in its "
        "craft-connector.yml, no --project-code), so it was checked against the only project ledger the Engine DB "
        "holds, project a's. If this folder is another project, set Orchestration: Project to its code in "
        "craft-connector.yml (or give --project-code P) and run etl-craft migrate again; if it is project a, applied "
        "migrations are immutable: restore the file as it was (for example with git checkout) and put the change in "
        "a new numbered migration; nothing was applied\n"), unnamed.err
    config = b / "craft-connector.yml"
    config.write_text(config.read_text() + "Orchestration:\n  Project: a\n")  # copied from a's folder
    misnamed = etl_craft("migrate", cwd=b)
    assert misnamed.code == 5, misnamed.err
    assert ", in the Engine DB's ledger of project a: this folder names that project (Orchestration: Project in its " \
           "craft-connector.yml, or --project-code). If this folder is another project, correct that name to its " \
           "own code and run etl-craft migrate again" in misnamed.err, misnamed.err
    assert _listed(a) == ["a.orders"], "nothing of b was applied"
    config.write_text(config.read_text().replace("Project: a", "Project: b"))
    assert etl_craft("migrate", cwd=b).code == 0
    assert _listed(a) == ["a.orders", "b.orders"]
