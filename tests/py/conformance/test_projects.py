"""Projects in one Engine DB (seed S5.G), the same on SQLite and PostgreSQL: pause_project and resume_project, the
pipeline lookup by (project, code), and one ledger of metadata migrations per project (0021_project_ledgers)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from etlcraft.core.actor import acting_as
from etlcraft.core.errors import AmbiguousError, MigrationError, NotFoundError, RefusedByPolicyError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.engine.migrations import PROJECT, Migration, migrate
from etlcraft.services.projects import ProjectChoice, choosing
from etlcraft.services.runs import find_pipeline
from tests.py.conftest import TEST_ACTOR
from tests.py.support.gates import T0
from tests.py.support.scenario import Project


@pytest.fixture
def two(engine_db: EngineDB) -> Project:
    """Project proj (pipelines orders, stock) and project other (pipeline orders), in one Engine DB."""
    engine_db.clock.pin(T0)
    project = Project(engine_db)
    project.pipeline("orders")
    project.pipeline("stock")
    with engine_db.write() as conn:
        other = project._insert(conn, "CFG_PROJECTS", "PROJECT_ID", PROJECT_CODE="other")
        project.pipelines["other.orders"] = project._insert(conn, "CFG_PIPELINES", "PIPELINE_ID", PROJECT_ID=other,
                                                            PIPELINE_CODE="orders")
    return project


def open_pauses(project: Project) -> list[int]:
    return [int(r[0]) for r in project.rows("SELECT PIPELINE_ID FROM {AUD_PIPELINE_PAUSES} WHERE RESUMED_AT IS NULL"
                                            " ORDER BY PIPELINE_ID")]


def test_pause_project__pauses_each_active_pipeline_of_the_project_only__once(two: Project) -> None:
    call(two.db, "pause_pipeline", pipeline_id=two.pipelines["stock"], reason="earlier")
    paused = call(two.db, "pause_project", project_code="proj", reason="warehouse move")
    assert [(r.pipeline_code, r.paused_at) for r in paused] == [("orders", T0)], "stock keeps its own pause"
    assert open_pauses(two) == sorted([two.pipelines["orders"], two.pipelines["stock"]])
    with pytest.raises(RefusedByPolicyError, match="project proj has no active pipeline that is not paused"):
        call(two.db, "pause_project", project_code="proj", reason="again")
    with pytest.raises(NotFoundError, match="project nope is not an active project of this Engine DB"):
        call(two.db, "pause_project", project_code="nope", reason="x")


def test_resume_project__closes_the_open_pauses_of_the_project_only(two: Project) -> None:
    call(two.db, "pause_project", project_code="proj", reason="move")
    call(two.db, "pause_project", project_code="other", reason="move")
    resumed = call(two.db, "resume_project", project_code="proj", reason="moved")
    assert sorted(r.pipeline_code for r in resumed) == ["orders", "stock"]
    assert open_pauses(two) == [two.pipelines["other.orders"]]
    assert two.rows("SELECT DISTINCT RESUME_REASON FROM {AUD_PIPELINE_PAUSES} WHERE RESUMED_AT IS NOT NULL") == [
        ("moved",)]
    with pytest.raises(RefusedByPolicyError, match="project proj has no paused active pipeline"):
        call(two.db, "resume_project", project_code="proj", reason="again")


def test_find_pipeline__the_same_code_in_two_projects__found_in_the_chosen_one(two: Project) -> None:
    with choosing(ProjectChoice("other")):
        assert find_pipeline(two.db, "orders").pipeline_id == two.pipelines["other.orders"]
    with choosing(ProjectChoice(None, configured="proj")):
        assert find_pipeline(two.db, "orders").pipeline_id == two.pipelines["orders"]
    with pytest.raises(AmbiguousError, match=r"serves 2 projects \(other, proj\) and no project was chosen"):
        find_pipeline(two.db, "orders")
    with choosing(ProjectChoice("other")), pytest.raises(NotFoundError, match="stock does not exist or is switched "
                                                                              "off in project other"):
        find_pipeline(two.db, "stock")


def _folder(code: str, pipeline: str) -> list[Migration]:
    sql = (f"INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('{code}');\n"
           f"INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, '{pipeline}' FROM CFG_PROJECTS"
           f" WHERE PROJECT_CODE = '{code}';\n")
    return [Migration(PROJECT, "0001", "0001_metadata.sql", "VERSIONED", sql, "migrations/0001_metadata.sql")]


def _ledger(db: EngineDB) -> list[tuple[str, str]]:
    with db.read() as conn:
        rows = conn.execute(sa.text(f"SELECT PROJECT_CODE, VERSION FROM {db.qualify('SCHEMA_MIGRATIONS')}"
                                    " WHERE STREAM = 'PROJECT' ORDER BY PROJECT_CODE"))
        return [(str(c), str(v)) for c, v in rows]


def test_each_project_keeps_its_own_ledger_of_metadata_migrations(engine_db: EngineDB) -> None:
    first = migrate(engine_db, project=_folder("a", "orders"))
    assert [m.version for m, _ in first.project] == ["0001"]
    assert _ledger(engine_db) == [("a", "0001")], "the folder named no project: its ledger is the only project's"
    second = migrate(engine_db, project=_folder("b", "orders"), project_code="b")
    assert [m.version for m, _ in second.project] == ["0001"], "b's 0001 is not taken for a's"
    assert _ledger(engine_db) == [("a", "0001"), ("b", "0001")]
    assert migrate(engine_db, project=_folder("a", "orders"), project_code="a").project == []
    with pytest.raises(MigrationError, match=r"holds the metadata migrations of 2 projects \(a, b\) and no project "
                                             "was named"):
        migrate(engine_db, project=_folder("a", "orders"))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def empty_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EngineDB]:
    url = request.getfixturevalue("empty_pg_url") if request.param == "postgresql" else \
        f"sqlite:///{tmp_path / 'upgrade.db'}"
    db = EngineDB(url)
    with acting_as(TEST_ACTOR):
        yield db
    db.dispose()


def test_0021__the_metadata_migrations_applied_before_go_to_the_only_project(empty_db: EngineDB) -> None:
    migrate(empty_db, up_to="0018", project=_folder("a", "orders"))
    migrate(empty_db)
    assert _ledger(empty_db) == [("a", "0001")]
    assert migrate(empty_db, project=_folder("a", "orders")).project == [], "nothing is applied twice"
