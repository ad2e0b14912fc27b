"""etlcraft/core/enums.py is what scripts/gen_enums.py writes from sql/state_machine.yaml, member for member."""

from __future__ import annotations

import importlib.util
from enum import StrEnum
from pathlib import Path

import pytest

from etlcraft.core import enums
from etlcraft.core.states import state_machine

ROOT = Path(__file__).resolve().parents[3]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_enums", ROOT / "scripts" / "gen_enums.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_enums_module_is_what_the_generator_writes() -> None:
    committed = (ROOT / "etlcraft" / "core" / "enums.py").read_text(encoding="utf-8")
    assert committed == _generator().module_text(state_machine()), (
        "etlcraft/core/enums.py differs from sql/state_machine.yaml: run make enums and commit the result")


def test_every_yaml_value_set_is_an_enum_with_its_values_in_order() -> None:
    sm = state_machine()
    expected = {e.enum: list(e.statuses) for e in sm.entities} | {k: list(v) for k, v in sm.enums.items()}
    assert {name: [m.value for m in enum] for name, enum in enums.ENUMS.items()} == expected
    for name, enum in enums.ENUMS.items():
        assert getattr(enums, name) is enum and issubclass(enum, StrEnum)


def test_terminal_constants_are_the_yaml_terminal_statuses() -> None:
    for entity in state_machine().entities:
        assert list(getattr(enums, f"{entity.name}_TERMINAL")) == list(entity.terminal)


def test_a_member_is_its_value__hyphens_become_underscores_in_its_name() -> None:
    assert enums.RunStatus.IN_PROGRESS == "IN-PROGRESS"
    assert enums.SlotKind.INGESTION == "ingestion"
    assert f"{enums.AttemptStatus.TIMED_OUT}" == "TIMED_OUT"
    assert {"SUCCESS": 1}[enums.TaskRunStatus.SUCCESS] == 1


@pytest.mark.parametrize("value", ["9LIVES", "A B", "_HIDDEN", "A.B"])
def test_a_value_without_a_python_member_name_is_refused_naming_it(value: str) -> None:
    with pytest.raises(ValueError, match=f"the value '{value}' gives no Python member name"):
        _generator().member_name(value)


def test_two_values_with_one_member_name_are_refused() -> None:
    with pytest.raises(ValueError, match="two values of Odd give the same Python member name"):
        _generator().enum_class("Odd", "doc", ("IN-PROGRESS", "IN_PROGRESS"))
