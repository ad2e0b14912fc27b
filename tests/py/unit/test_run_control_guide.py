"""docs/guides/run-control.md shows what its commands print: each etl-craft command of the guide runs in order in a
new directory, exits as the guide says (0, or the code of its `# exits N` comment), and prints the text block that
follows its ```sh block."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.py.support.cli import etl_craft

ROOT = Path(__file__).resolve().parents[3]
GUIDE = ROOT / "docs" / "guides" / "run-control.md"
#: What differs between two runs of the same commands, replaced in the printed output and in the guide alike.
VOLATILE = (
    (re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d+)?(\+00:00| UTC)"), "<time>"),
    (re.compile(r"supervised by \S+"), "supervised by <owner>"),
)
EXITS = re.compile(r"\s+#\s*exits\s+(\d+)\s*$")


def steady(text: str) -> str:
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text.strip()


def guide_steps(text: str) -> list[tuple[list[str], str | None]]:
    """Each ```sh block's command lines, with the ```text block that follows it (None when another follows)."""
    blocks = list(re.finditer(r"^```(\w+)\n(.*?)^```", text, flags=re.S | re.M))
    steps = []
    for index, block in enumerate(blocks):
        if block.group(1) != "sh":
            continue
        following = blocks[index + 1] if index + 1 < len(blocks) else None
        shown = following.group(2) if following and following.group(1) == "text" else None
        steps.append((block.group(2).strip().splitlines(), shown))
    return steps


def test_guide_steps__pair_commands_with_the_output_shown_after_them() -> None:
    text = "```sh\netl-craft a  # exits 2\n```\n\n```text\nA\n```\n```sh\ncd x\n```\n```sql\nSELECT 1;\n```\n"
    assert guide_steps(text) == [(["etl-craft a  # exits 2"], "A\n"), (["cd x"], None)]
    assert EXITS.search("etl-craft a  # exits 2") is not None and EXITS.search("etl-craft a") is None


@pytest.mark.process
def test_run_control_guide_shows_what_the_commands_print(tmp_path: Path) -> None:
    cwd, checked, commands = tmp_path, 0, set()
    for lines, shown in guide_steps(GUIDE.read_text(encoding="utf-8")):
        outputs = []
        for line in lines:
            if line.startswith("cd "):
                cwd = cwd / line[3:].strip()
                continue
            exits = EXITS.search(line)
            command = shlex.split(EXITS.sub("", line))
            assert command[0] == "etl-craft", line
            done = etl_craft(*command[1:], cwd=cwd, env={"ETL_CRAFT_ACTOR": "alice@laptop"})
            assert done.code == (int(exits.group(1)) if exits else 0), (line, done.out, done.err)
            outputs.append(done.out + done.err)
            commands.add(command[1])
        if shown is not None:
            printed = "".join(outputs).replace(str(tmp_path), "...")
            assert steady(printed) == steady(shown), lines
            checked += 1
    assert {"mark", "cancel", "reopen", "pause", "resume"} <= commands, "the guide runs every operation"
    assert checked >= 10
