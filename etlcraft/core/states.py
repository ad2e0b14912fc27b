"""Statuses, transitions and closed value sets, read from the one source of truth, sql/state_machine.yaml.

The same file renders the ENG_TRANSITIONS table and the transition guard triggers, and scripts/gen_enums.py
writes its StrEnums into etlcraft.core.enums; tests/py/conformance/test_state_machine_drift.py checks that the
Engine DB's CHECK constraints agree with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from etlcraft.paths import read_sql_yaml


@dataclass(frozen=True)
class Entity:
    """One row type with a STATUS column: its statuses and the changes between them."""

    name: str
    enum: str
    table: str
    key: str
    statuses: tuple[str, ...]
    terminal: tuple[str, ...]
    transitions: tuple[tuple[str | None, str], ...]
    summary: dict[str, str]

    @property
    def initial(self) -> tuple[str, ...]:
        """The statuses a new row may be inserted with."""
        return tuple(to for frm, to in self.transitions if frm is None)

    @property
    def changes(self) -> tuple[tuple[str, str], ...]:
        """Every allowed (from, to) change of an existing row."""
        return tuple((frm, to) for frm, to in self.transitions if frm is not None)

    def allowed_from(self, status: str) -> tuple[str, ...]:
        return tuple(to for frm, to in self.transitions if frm == status)

    def is_allowed(self, frm: str | None, to: str) -> bool:
        return (frm, to) in self.transitions


@dataclass(frozen=True)
class StateMachine:
    entities: tuple[Entity, ...]
    enums: dict[str, tuple[str, ...]]

    def entity(self, name: str) -> Entity:
        for entity in self.entities:
            if entity.name == name:
                return entity
        raise KeyError(name)


def _entity(name: str, spec: dict[str, Any]) -> Entity:
    statuses = tuple(spec["statuses"])
    transitions: list[tuple[str | None, str]] = []
    for row in spec["transitions"]:
        for to in row["to"]:
            transitions.append((row["from"], to))
    for frm, to in transitions:
        if (frm is not None and frm not in statuses) or to not in statuses:
            raise ValueError(f"state_machine.yaml: {name} transition {frm} -> {to} names an unknown status")
    return Entity(
        name=name,
        enum=spec["enum"],
        table=spec["table"],
        key=spec["key"],
        statuses=statuses,
        terminal=tuple(spec["terminal"]),
        transitions=tuple(transitions),
        summary=dict(spec.get("summary", {})),
    )


@cache
def state_machine() -> StateMachine:
    """The parsed sql/state_machine.yaml (read once per process)."""
    raw = read_sql_yaml("state_machine.yaml")
    entities = tuple(_entity(name, spec) for name, spec in raw["entities"].items())
    enums = {name: tuple(values) for name, values in raw["enums"].items()}
    return StateMachine(entities=entities, enums=enums)
