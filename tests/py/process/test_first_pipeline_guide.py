"""docs/guides/your-first-pipeline.md, done as a reader would: every file it asks to save is saved, every command of
its ```sh blocks runs in order in a new folder, and each block's output is what the ```text block after it shows
(the folder as ..., and the parts that differ between runs replaced in both)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.py.support.cli import etl_craft
from tests.py.unit.test_guides import steady

pytestmark = pytest.mark.process
GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guides" / "your-first-pipeline.md"
ACTOR = {"ETL_CRAFT_ACTOR": "alice@laptop"}
#: What differs between runs besides test_guides.VOLATILE: explain's times to the second, a log record's time.
MORE_VOLATILE = (
    (re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC"), "<time> UTC"),
    (re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} ", flags=re.M), "<time> "),
)
#: A block is a file to save when the text just before it ends "`relative/path`:".
SAVE_AS = re.compile(r"`([\w./-]+)`:\s*$")


@dataclass(frozen=True)
class Step:
    kind: str  # "file" or "sh"
    body: str
    path: str | None = None  # the file's path, for "file"
    shown: str | None = None  # the ```text block after an "sh" block


def guide_steps(text: str) -> list[Step]:
    """The guide's fenced blocks as steps, in order (test_guides._guide_steps, for files of any kind)."""
    blocks = list(re.finditer(r"^```(\w+)\n(.*?)^```", text, flags=re.S | re.M))
    steps = []
    for index, block in enumerate(blocks):
        kind, body = block.group(1), block.group(2)
        saved_as = SAVE_AS.search(text[max(0, block.start() - 200):block.start()])
        if kind == "sh":
            following = blocks[index + 1] if index + 1 < len(blocks) else None
            shown = following.group(2) if following and following.group(1) == "text" else None
            steps.append(Step("sh", body, shown=shown))
        elif kind != "text" and saved_as:
            steps.append(Step("file", body, path=saved_as.group(1)))
    return steps


def commands(body: str) -> list[str]:
    """The commands of a ```sh block: one a line, or several lines where a quoted argument spans them."""
    found, pending = [], ""
    for line in body.splitlines():
        pending = f"{pending}\n{line}" if pending else line
        try:
            shlex.split(pending)
        except ValueError:  # an open quote: the command goes on on the next line
            continue
        if pending.strip():
            found.append(pending.strip())
        pending = ""
    assert not pending, f"unbalanced quotes in {body!r}"
    return found


def normal(text: str) -> str:
    for pattern, replacement in MORE_VOLATILE:
        text = pattern.sub(replacement, text)
    return steady(text)


def test_the_guide_has_the_steps_it_promises() -> None:
    steps = guide_steps(GUIDE.read_text(encoding="utf-8"))
    files = [s.path for s in steps if s.kind == "file"]
    assert files == ["landing/orders.csv", "migrations/0001_orders_daily.sql", "ingestion_scripts/ingest_orders.py",
                     "sql_files/daily_revenue.sql", "landing/orders.csv"]
    ran = [c.split()[1] for s in steps if s.kind == "sh" for c in commands(s.body) if c.startswith("etl-craft ")]
    assert ran[0] == "init" and {"init-db", "migrate", "validate", "run", "status", "explain"} <= set(ran), ran
    assert "init shop --blank" in GUIDE.read_text(encoding="utf-8")


def test_your_first_pipeline_guide_does_what_it_says(tmp_path: Path) -> None:
    cwd, checked, ran = tmp_path, 0, 0
    # Commands other than etl-craft's (python3 reading the warehouse) run in bash with this interpreter first on PATH.
    shell_env = {**os.environ, **ACTOR, "PATH": os.pathsep.join([str(Path(sys.executable).parent),
                                                                  os.environ.get("PATH", "")])}
    for step in guide_steps(GUIDE.read_text(encoding="utf-8")):
        if step.kind == "file":
            assert step.path is not None
            (cwd / step.path).parent.mkdir(parents=True, exist_ok=True)
            (cwd / step.path).write_text(step.body, encoding="utf-8")
            continue
        outputs = []
        for command in commands(step.body):
            if command.startswith("cd "):
                cwd = cwd / command[3:].strip()
                continue
            if command.startswith("etl-craft "):
                done = etl_craft(*shlex.split(command)[1:], cwd=cwd, env=ACTOR)
                code, out, err = done.code, done.out, done.err
            else:
                shell = subprocess.run(["bash", "-c", command], cwd=cwd, env=shell_env, capture_output=True,
                                       text=True, timeout=120, check=False)
                code, out, err = shell.returncode, shell.stdout, shell.stderr
            assert code == 0, (command, out, err)
            outputs.append(out + err)
            ran += 1
        if step.shown is not None:
            printed = "".join(outputs).replace(str(tmp_path), "...")
            assert normal(printed) == normal(step.shown), step.body
            checked += 1
    assert (ran, checked) >= (14, 10), (ran, checked)
    assert sorted(p.name for p in (tmp_path / "shop" / "migrations").iterdir()) == [".gitkeep",
                                                                                   "0001_orders_daily.sql"]
