"""Fixtures of the Airflow contract tests: an etl-craft example project (etl-craft init) and its generated YAML.

They run in an environment with Apache Airflow, etl-craft and this package installed (`make test-airflow`). The
etl-craft command is the one beside this interpreter, unless ETL_CRAFT_EXECUTABLE names another.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ETL_CRAFT = os.environ.get("ETL_CRAFT_EXECUTABLE") or str(Path(sys.executable).with_name("etl-craft"))


def etl_craft(project: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ETL_CRAFT_", "AIRFLOW"))}
    env["ETL_CRAFT_ACTOR"] = "tester@airflow-contract"
    done = subprocess.run([ETL_CRAFT, "--project", str(project), *args], capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    if check:
        assert done.returncode == 0, f"etl-craft {' '.join(args)} exited {done.returncode}: {done.stderr}"
    return done


def new_project(root: Path) -> Path:
    """A fresh example project (the demo's two pipelines) on a SQLite Engine DB, migrated."""
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run([ETL_CRAFT, "init", str(root / "demo")], check=True, capture_output=True, timeout=300)
    project = root / "demo"
    etl_craft(project, "migrate")
    return project


@pytest.fixture(scope="session")
def example(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The example project and the folder of YAML files generate-yml wrote for it."""
    root = tmp_path_factory.mktemp("example")
    project = new_project(root)
    etl_craft(project, "generate-yml", "--output-dir", str(root / "yml"), "--executable", ETL_CRAFT)
    return project, root / "yml"


@pytest.fixture(scope="session")
def shown(example: tuple[Path, Path]) -> Callable[[str], dict[str, Any]]:
    """etl-craft show --format json of a pipeline of the example project."""
    project = example[0]

    def show(code: str) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(etl_craft(project, "show", "--pipeline-code", code, "--format",
                                                      "json").stdout)
        return loaded

    return show
