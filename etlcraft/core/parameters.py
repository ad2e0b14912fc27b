"""Every task parameter (CFG_TASK_PARAMETERS): the one table validate, the handlers and the reference page use.

A parameter applies to a scope: every task (`*`), a handler (`PYTHON`), or one SQL action (`SQL:SCD1_MERGE`).
Values are text in the Engine DB; `Parameter.check` says what is wrong with one and `Parameter.parse` gives the
typed value. docs/reference/task-parameters.md is generated from PARAMETERS (scripts/gen_reference_docs.py).
"""

from __future__ import annotations

import difflib
import json
import math
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

#: A plain SQL name: needs no quotes on any warehouse etl-craft supports.
PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Codes (pipelines, tasks, pools, parameters): a letter, then letters, digits or _, at most 128 (B47, B64).
CODE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")
#: What CODE accepts, in words.
IDENTIFIER_EXPECTED = "a name made of letters, digits and _, starting with a letter, at most 128 characters"
_ORDER_ITEM = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\s+(ASC|DESC))?(\s+NULLS\s+(FIRST|LAST))?$", re.IGNORECASE)
_EMAIL = re.compile(r"^[^@\s,;<>\"']+@[^@\s,;<>\"']+\.[^@\s,;<>\"']+$")
_WHOLE = re.compile(r"^[+-]?\d+$")
#: No retry waits longer than this, whatever RETRY_DELAY_SECONDS and RETRY_BACKOFF say.
MAX_RETRY_DELAY_SECONDS = 3600


class Kind(StrEnum):
    IDENTIFIERS = "identifier list"
    ORDER_BY = "SQL order-by list"
    FLAG = "Y/N"
    WHOLE = "whole number"
    NUMBER = "number"
    CHOICE = "choice"
    IDENTIFIER = "identifier"
    EMAILS = "e-mail address list"
    TEXT = "text"
    JSON_OBJECT = "JSON object"


_EXPECTED = {
    Kind.IDENTIFIERS: "a comma-separated list of column names (letters, digits and _, not starting with a digit)",
    Kind.ORDER_BY: "a comma-separated list of column names, each optionally followed by ASC or DESC and by "
                   "NULLS FIRST or NULLS LAST",
    Kind.FLAG: "Y or N",
    Kind.IDENTIFIER: IDENTIFIER_EXPECTED,
    Kind.EMAILS: "a comma-separated list of e-mail addresses (name@example.com)",
    Kind.TEXT: "a non-empty text",
    Kind.JSON_OBJECT: 'a JSON object, for example {"since": "2026-01-01"}',
}


@dataclass(frozen=True)
class Parameter:
    name: str
    kind: Kind
    applies_to: tuple[str, ...]  # "*", a handler ("PYTHON") or "SQL:<ACTION>"
    meaning: str
    default: str | None = None  # the value a task without the parameter gets, in the parameter's own form
    default_text: str | None = None  # the default in words, when it is not a fixed value
    required_for: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()

    def applies(self, handler: str, action: str | None) -> bool:
        return _in_scope(self.applies_to, handler, action)

    def required(self, handler: str, action: str | None) -> bool:
        return _in_scope(self.required_for, handler, action)

    @property
    def default_description(self) -> str:
        """The default as the reference shows it: `value`, words, "required" or "none"."""
        if self.required_for:
            return "required on " + _scope_text(self.required_for)
        if self.default is not None:
            return f"`{self.default}`"
        return self.default_text or "none"

    @property
    def scope(self) -> str:
        """Who the parameter applies to, in words."""
        return _scope_text(self.applies_to)

    @property
    def expected(self) -> str:
        """What a valid value looks like, in words."""
        if self.kind is Kind.CHOICE:
            return " or ".join(self.choices)
        if self.kind in (Kind.WHOLE, Kind.NUMBER):
            noun = "a whole number" if self.kind is Kind.WHOLE else "a number"
            bounds = []
            if self.minimum is not None:
                bounds.append(f"at least {_number(self.minimum)}")
            if self.maximum is not None:
                bounds.append(f"at most {_number(self.maximum)}")
            return f"{noun} of {' and '.join(bounds)}" if bounds else noun
        return _EXPECTED[self.kind]

    def check(self, value: str | None) -> str | None:
        """None when `value` is valid, else the reason it is not (the caller adds what is expected)."""
        if value is None or not value.strip():
            return "has no value"
        try:
            self.parse(value)
        except ValueError as exc:
            return str(exc)
        return None

    def parse(self, value: str) -> Any:
        """The typed value: list[str], bool, int, float, str or dict; ValueError says what is wrong."""
        text = value.strip()
        if self.kind in (Kind.IDENTIFIERS, Kind.ORDER_BY, Kind.EMAILS):
            return _parse_list(self.kind, text)
        if self.kind is Kind.FLAG:
            if text not in ("Y", "N"):
                raise ValueError(f"is {value!r}")
            return text == "Y"
        if self.kind in (Kind.WHOLE, Kind.NUMBER):
            return self._parse_number(text)
        if self.kind is Kind.CHOICE:
            choice = {c.lower(): c for c in self.choices}.get(text.lower())
            if choice is None:
                raise ValueError(f"is {value!r}")
            return choice
        if self.kind is Kind.IDENTIFIER:
            if not CODE.match(text):
                raise ValueError(f"is {value!r}")
            return text
        if self.kind is Kind.JSON_OBJECT:
            return _parse_json_object(text)
        return text

    def resolve(self, value: str | None) -> Any:
        """The typed value of a task that has `value` (None: the task lacks the parameter): the parsed value,
        else the parsed default, else None (no fixed default: the handler decides)."""
        if value is not None:
            return self.parse(value)
        return None if self.default is None else self.parse(self.default)

    def _parse_number(self, text: str) -> int | float:
        number: int | float
        if self.kind is Kind.WHOLE:
            if not _WHOLE.match(text):
                raise ValueError(f"is {text!r}, not a whole number")
            number = int(text)
        else:
            try:
                number = float(text)
            except ValueError:
                raise ValueError(f"is {text!r}, not a number") from None
            if not math.isfinite(number):
                raise ValueError(f"is {text!r}, not a finite number")
        if (self.minimum is not None and number < self.minimum) or (
            self.maximum is not None and number > self.maximum
        ):
            raise ValueError(f"is {text}, out of range")
        return number


def _parse_list(kind: Kind, text: str) -> list[str]:
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise ValueError(f"is {text!r}, which has an empty item")
    pattern = {Kind.IDENTIFIERS: PLAIN_NAME, Kind.ORDER_BY: _ORDER_ITEM, Kind.EMAILS: _EMAIL}[kind]
    for item in items:
        if not pattern.match(item):
            raise ValueError(f"is {text!r}" if len(items) == 1 else
                             f"is {text!r}, in which {' '.join(item.split())!r} is not valid")
    if kind is Kind.IDENTIFIERS:
        seen = [i.lower() for i in items]
        twice = sorted({i for i in items if seen.count(i.lower()) > 1})
        if twice:
            raise ValueError(f"is {text!r}, which names {', '.join(twice)} twice")
    return [" ".join(item.split()) for item in items]


def _parse_json_object(text: str) -> dict[str, Any]:
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"is not valid JSON ({exc.msg} at character {exc.pos + 1})") from None
    if not isinstance(parsed, dict):
        raise ValueError(f"is JSON {type(parsed).__name__}, not an object")
    return parsed


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _in_scope(scope: tuple[str, ...], handler: str, action: str | None) -> bool:
    return "*" in scope or handler in scope or (action is not None and f"{handler}:{action}" in scope)


def _scope_text(scope: tuple[str, ...]) -> str:
    if "*" in scope:
        return "every task"
    actions = [s.split(":", 1)[1] for s in scope if s.startswith("SQL:")]
    handlers = [s for s in scope if ":" not in s]
    parts = [f"{h} tasks" for h in handlers]
    if actions:
        parts.insert(0, f"SQL tasks with ACTION {', '.join(actions[:-1]) + ' or ' if len(actions) > 1 else ''}"
                        f"{actions[-1]}")
    return "; ".join(parts)


_MERGES = ("SQL:SCD1_MERGE", "SQL:SCD2_MERGE")
_WRITERS = ("SQL:SETUP_TABLE", "SQL:OVERWRITE_TABLE", "SQL:APPEND_TABLE", *_MERGES)

PARAMETERS: tuple[Parameter, ...] = (
    Parameter("MERGE_KEY", Kind.IDENTIFIERS, (*_MERGES, "SQL:DELETE_ROWS"), required_for=(*_MERGES, "SQL:DELETE_ROWS"),
              meaning="The columns that identify a row. A SELECT row updates (SCD1_MERGE), versions (SCD2_MERGE) or "
                      "deletes (DELETE_ROWS) the target row with the same key. A row with a NULL key column fails "
                      "the task."),
    Parameter("MERGE_COMPARE_COLUMNS", Kind.IDENTIFIERS, _MERGES,
              default_text="every column the SELECT returns except MERGE_KEY",
              meaning="The columns whose change makes a merge update the row (SCD1_MERGE) or open a new version "
                      "(SCD2_MERGE). Other columns are written too, but a change to them alone is ignored."),
    Parameter("MERGE_DEDUPE_ORDER", Kind.ORDER_BY, _MERGES,
              meaning="When the SELECT returns several rows for one key, keep the first row in this order (for "
                      "example updated_at DESC). A tie between rows that differ fails the task. Without it, a key "
                      "that appears twice fails the task."),
    Parameter("SCHEMA_EVOLUTION", Kind.FLAG, _WRITERS, default="N",
              meaning="Y: columns the SELECT returns that the target lacks are added to it (nullable) before the "
                      "write; a changed column type is still refused. N: such a SELECT fails the task."),
    Parameter("TABLE_FORMAT", Kind.CHOICE, ("SQL:CREATE_TABLE", *_WRITERS), default="native",
              choices=("native", "iceberg"),
              meaning="The format of the table the task creates: native (the warehouse's own tables) or iceberg "
                      "(where the warehouse supports it). Every task writing one TARGET_OBJECT must resolve to the "
                      "same format."),
    Parameter("DELETE_MODE", Kind.CHOICE, ("SQL:DELETE_ROWS",), default="soft", choices=("soft", "hard"),
              meaning="soft: the target rows whose key the SELECT returns are kept with DELETE_FLAG = 'Y' (a merge "
                      "that sends the key again revives them); hard: they are deleted."),
    Parameter("FULL_SNAPSHOT", Kind.FLAG, ("SQL:SCD2_MERGE",), default="N",
              meaning="Y declares that the SELECT returns the whole source on every run (a full snapshot, not an "
                      "incremental extract), so a key it does not return is gone from the source. Required for "
                      "SCD2_MISSING_KEYS CLOSE or MARK_DELETED."),
    Parameter("SCD2_MISSING_KEYS", Kind.CHOICE, ("SQL:SCD2_MERGE",), default="KEEP",
              choices=("KEEP", "CLOSE", "MARK_DELETED"),
              meaning="What SCD2_MERGE does with a key whose current version is in the target but that the SELECT "
                      "no longer returns. KEEP: nothing, the version stays current. CLOSE: the current version is "
                      "closed (ACTIVE_FLAG = 'N', VALID_TO = the run's time), so the key has no current row until "
                      "it returns with a new version. MARK_DELETED: the current version is closed and a current "
                      "deletion marker is opened with the last values and DELETE_FLAG = 'Y'; a later run without "
                      "the key adds nothing, and a run that returns it closes the marker and opens a live version, "
                      "so the key's history has no gap. CLOSE and MARK_DELETED need FULL_SNAPSHOT = Y."),
    Parameter("TASK_TIMEOUT_SECONDS", Kind.WHOLE, ("*",), default="0", minimum=0,
              meaning="An attempt still running after this many seconds is stopped and ends TIMED_OUT. 0 means no "
                      "limit."),
    Parameter("RETRIES", Kind.WHOLE, ("*",), default="0", minimum=0,
              meaning="How many more attempts a task run gets after a FAILED, TIMED_OUT or LOST attempt. A "
                      "CANCELLED attempt, and an error that cannot succeed on retry (configuration, metadata, the "
                      "SQL guards), are never retried."),
    Parameter("RETRY_DELAY_SECONDS", Kind.WHOLE, ("*",), default="60", minimum=0,
              meaning="Seconds between a failed attempt and the first retry."),
    Parameter("RETRY_BACKOFF", Kind.NUMBER, ("*",), default="2.0", minimum=1.0,
              meaning="Each further retry waits this many times longer than the one before; no wait is longer "
                      f"than {MAX_RETRY_DELAY_SECONDS:,} seconds."),
    Parameter("POOL", Kind.IDENTIFIER, ("*",), default_text="the project's DEFAULT_POOL (CFG_PROJECTS)",
              meaning="The pool (CFG_POOLS) whose workers run the task's attempts."),
    Parameter("RECIPIENTS", Kind.EMAILS, ("EMAIL_ALERT",), required_for=("EMAIL_ALERT",),
              meaning="The addresses the alert is sent to, all in one message."),
    Parameter("SUBJECT", Kind.TEXT, ("EMAIL_ALERT",),
              default_text="the pipeline, the run and the tasks that failed so far, with the first one's error",
              meaning="The alert's subject, made one line of at most 200 characters. $$pipeline_id, "
                      "$$pipeline_code, $$pipeline_run_id, $$task_run_id, $$task_code and $$run_date are replaced "
                      "with the run's values."),
    Parameter("BODY", Kind.TEXT, ("EMAIL_ALERT",),
              default_text="the run's tasks so far, each with its status and full error",
              meaning="The alert's text, with the same $$ tokens as SUBJECT."),
    Parameter("INPUT_PARAMS", Kind.JSON_OBJECT, ("PYTHON",), default="{}",
              meaning="Inputs handed to the ingestion script with the run's identities and its stored offset."),
)

BY_NAME: dict[str, Parameter] = {p.name: p for p in PARAMETERS}


def parameter(name: str) -> Parameter | None:
    return BY_NAME.get(name)


def suggestions(name: str) -> list[str]:
    """Known parameter names close to `name` (a different case first), for "did you mean" hints."""
    same = [p.name for p in PARAMETERS if p.name.lower() == name.lower()]
    return same or difflib.get_close_matches(name.upper(), list(BY_NAME), n=3, cutoff=0.7)


def applicable(handler: str, action: str | None) -> tuple[Parameter, ...]:
    """The parameters a task with this handler and action takes."""
    return tuple(p for p in PARAMETERS if p.applies(handler, action))


def retry_delay_seconds(retry: int, delay: float, backoff: float) -> float:
    """How long retry number `retry` (1 = the first) waits after the failed attempt."""
    return float(min(MAX_RETRY_DELAY_SECONDS, delay * backoff ** max(retry - 1, 0)))
