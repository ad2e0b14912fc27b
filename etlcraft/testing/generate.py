"""etl-craft test --generate PIPELINE.TASK: a starting manifest for a SQL task, written from its SELECT: one
relation (and fixture path) per table the SELECT reads, and the SELECT's output columns listed for the expected
rows. The author fills in the fixtures and expectations. An existing manifest is never overwritten.
"""

from __future__ import annotations

import os
from pathlib import Path

import sqlglot
from sqlglot import exp

from etlcraft.core.sqltext import SQLGLOT_DIALECTS
from etlcraft.testing.errors import InvalidTest, SafetyViolation
from etlcraft.testing.files import read_confined
from etlcraft.testing.runner import MAX_SQL_BYTES, load_project


def generate_manifest(root: Path, name: str) -> str:
    """Write tests/<pipeline>_<task>.test.yaml for task `name` (PIPELINE.TASK); its project-relative path."""
    pipeline_code, _, task_code = name.partition(".")
    project = load_project(root)
    task = next((t for t in project.metadata.tasks if t.pipeline_code == pipeline_code and t.code == task_code), None)
    if task is None or task.handler != "SQL" or task.sql_file is None:
        raise InvalidTest("task_unknown", f"{name} is not an active SQL task of the project; name it PIPELINE.TASK "
                                          "(etl-craft list shows them)")
    file = read_confined(root, f"sql_files/{task.sql_file}", max_bytes=MAX_SQL_BYTES)
    try:
        query = sqlglot.parse_one(file.data.decode("utf-8-sig"), read=SQLGLOT_DIALECTS[project.dialect])
    except (UnicodeDecodeError, sqlglot.errors.ParseError):
        raise InvalidTest("task_invalid", f"{file.path} cannot be read as {project.dialect} SQL; fix it first"
                          ) from None
    ctes = {c.alias_or_name.lower() for c in query.find_all(exp.CTE)}
    tables = sorted({".".join(p for p in (t.db, t.name) if p) for t in query.find_all(exp.Table)
                     if t.name.lower() not in ctes})
    columns = [c.alias_or_name for c in query.selects if isinstance(query, exp.Select)] if isinstance(
        query, exp.Select) else []
    lines = ["kind: etl-craft.test.v1", f"pipeline: {pipeline_code}", f"task: {task_code}", "relations:"]
    for table in tables:
        fixture = f"fixtures/{pipeline_code}_{task_code}.{table.replace('.', '_')}.jsonl"
        lines += [f"  {table}:", f"    fixture: {fixture}  # one JSON object per line; declare types below",
                  "    # columns: {some_date: DATE, amount: \"DECIMAL(10,2)\"}"]
    lines += ["expect:", "  rows: 0  # the rows in the target after the task",
              f"  # output: fixtures/{pipeline_code}_{task_code}.expected.jsonl",
              f"  # the SELECT returns: {', '.join(columns) or 'see the SQL file'}", ""]
    relative = f"tests/{pipeline_code}_{task_code}.test.yaml"
    (root / "tests").mkdir(exist_ok=True)
    try:
        fd = os.open(root / relative, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except FileExistsError:
        raise SafetyViolation("output_exists", f"{relative} exists; it is never overwritten: edit it, or remove "
                                               "it first") from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write("\n".join(lines))
    return relative
