"""The PYTHON handler: load the task's ingestion script as a real module, call its run(task), check the whole
result, and hand back counts and the offset for the task process to record with finish_attempt.

Nothing is stored here: the offset goes back in HandlerResult.offset and is written by finish_attempt with the
attempt's SUCCESS, in one transaction (B6). The warehouse connection the script used is committed only after
its result passed every check, and rolled back otherwise.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any

from etlcraft.core.errors import ScriptError
from etlcraft.core.parameters import BY_NAME
from etlcraft.handlers.context import Counts, HandlerResult, Offset, TaskContext
from etlcraft.scripting import OffsetValue, ScriptResult, ScriptTask, Warehouse, stored_offset, typed_offset

SCRIPTS_DIR = "ingestion_scripts"
MODULE_PREFIX = "etl_craft_script_"
#: Libraries that log request URLs (with their query keys) at INFO or DEBUG: kept at WARNING while a script
#: runs, unless etl-craft itself logs at DEBUG (B49).
SECRET_BEARING_LOGGERS = ("urllib3", "httpx", "httpcore", "requests", "botocore", "boto3", "s3transfer")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def run_python_task(ctx: TaskContext) -> HandlerResult:
    """Run the task's script once and return its checked result. A ScriptError names the script, what it found,
    what was expected and the remedy; an exception the script raises is passed on unchanged."""
    label, path = script_location(ctx)
    warehouse = Warehouse(ctx.config)
    with script_logging():
        run = _entry_point(load_script(path, label), label)
        task = _script_task(ctx, warehouse, label)
        try:
            row_count, offset, variables = checked_result(run(task), label)
            message = _summary(label, row_count, offset, variables)
        except BaseException:
            warehouse._end(commit=False)
            raise
        warehouse._end(commit=True)
    return HandlerResult(counts=Counts(source=row_count, rows_written=row_count), offset=offset, message=message)


def _summary(label: str, row_count: int, offset: Offset | None, variables: Mapping[str, Any] | None) -> str:
    """The line the attempt's log gets: rows, the new offset and the variables (long values cut)."""
    message = f"{label}: {row_count} row(s) written" + (
        f"; offset {_cut(offset.value, 200)} ({offset.type})" if offset else "; no new offset")
    if variables:
        try:
            shown = json.dumps(variables, default=str, sort_keys=True)
        except (TypeError, ValueError):  # a value JSON can't show even as text (a circular list): show its repr
            shown = repr(dict(variables))
        message += f"; variables {_cut(shown, 2000)}"
    return message


def _cut(text: str, size: int) -> str:
    return text if len(text) <= size else text[:size - 3] + "..."


# ------------------------------------------------------------------------------------------------ loading


def script_location(ctx: TaskContext) -> tuple[str, Path]:
    """The script's label (ingestion_scripts/<SCRIPT_FILE>) and absolute path; refuses a missing or escaping one."""
    if not ctx.script_file or not ctx.script_file.strip():
        raise ScriptError(
            f"task {ctx.task_code} has HANDLER PYTHON but no SCRIPT_FILE; set CFG_TASKS.SCRIPT_FILE to a file under "
            f"{SCRIPTS_DIR}/ in a project migration"
        )
    relative = PurePosixPath(ctx.script_file.strip())
    label = f"{SCRIPTS_DIR}/{relative.as_posix()}"
    if relative.is_absolute() or ".." in relative.parts or relative.suffix != ".py":
        raise ScriptError(
            f"task {ctx.task_code}: SCRIPT_FILE {ctx.script_file!r} is not a .py file inside {SCRIPTS_DIR}/; name "
            f"the script by its path relative to {SCRIPTS_DIR}/, for example load_orders.py"
        )
    path = ctx.project_dir / SCRIPTS_DIR / relative
    if not path.is_file():
        raise ScriptError(
            f"task {ctx.task_code}: the script {label} does not exist (looked for {path}); create it, or fix "
            "CFG_TASKS.SCRIPT_FILE in a project migration"
        )
    return label, path


def module_name(label: str) -> str:
    """etl_craft_script_<path under ingestion_scripts with / and . as _>: load_orders.py -> ..._load_orders_py."""
    relative = label.removeprefix(f"{SCRIPTS_DIR}/")
    return MODULE_PREFIX + relative.replace("/", "_").replace(".", "_")


def load_script(path: Path, label: str) -> ModuleType:
    """The script as a real module (B19): compiled without etl-craft's own __future__ flags, registered in
    sys.modules under its name before it runs (removed again if it fails), with a __spec__ like any import."""
    name = module_name(label)
    try:
        code = compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise ScriptError(
            f"{label}, line {exc.lineno}: {exc.msg}; fix the script's syntax (python3 -m py_compile {path})"
        ) from exc
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None, f"no module spec for {path}"
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException as exc:
        sys.modules.pop(name, None)
        if isinstance(exc, Exception):
            raise ScriptError(
                f"{label} raised {type(exc).__name__} while it was loaded, before run() was called: {exc}; fix the "
                "script, or install what it imports into etl-craft's Python environment"
            ) from exc
        raise
    return module


def _entry_point(module: ModuleType, label: str) -> Callable[[ScriptTask], object]:
    run = getattr(module, "run", None)
    if not callable(run):
        found = "defines no run" if run is None else f"has run = {type(run).__name__}, not a function"
        raise ScriptError(
            f"{label} {found}; expected a function run(task: ScriptTask) -> ScriptResult; add it "
            "(from etlcraft.scripting import ScriptResult, ScriptTask)"
        )
    return run


def _script_task(ctx: TaskContext, warehouse: Warehouse, label: str) -> ScriptTask:
    last_offset: OffsetValue | None = None
    if ctx.last_offset is not None:
        try:
            last_offset = typed_offset(ctx.last_offset.value, ctx.last_offset.type)
        except ValueError as exc:
            raise ScriptError(
                f"task {ctx.task_code}: the stored offset {ctx.last_offset.value!r} ({ctx.last_offset.type}) can't "
                f"be read for {label}: {exc}; store a valid one with a successful attempt, or clear it"
            ) from exc
    raw_inputs = ctx.parameters.get("INPUT_PARAMS")
    try:
        inputs = BY_NAME["INPUT_PARAMS"].resolve(raw_inputs)
    except ValueError as exc:
        raise ScriptError(
            f"task {ctx.task_code}: INPUT_PARAMS {exc}; expected {BY_NAME['INPUT_PARAMS'].expected}; fix it in "
            "CFG_TASK_PARAMETERS with a project migration (etl-craft validate checks it)"
        ) from exc
    return ScriptTask(
        pipeline_id=ctx.pipeline_id, pipeline_code=ctx.pipeline_code, pipeline_run_id=ctx.pipeline_run_id,
        task_run_id=ctx.task_run_id, attempt_id=ctx.attempt_id, task_code=ctx.task_code, run_date=ctx.run_date,
        parameters=ctx.parameters, input_params=inputs, last_offset=last_offset, warehouse=warehouse,
        logger=logging.getLogger(f"etlcraft.script.{ctx.task_code}"), project_dir=ctx.config.project_dir,
    )


# ----------------------------------------------------------------------------------------------- checking


def checked_result(result: object, label: str) -> tuple[int, Offset | None, Mapping[str, Any] | None]:
    """Every check on what run() returned, all before anything is committed or stored: the row count, the
    offset (converted to its stored text and type) and the variables."""
    if not isinstance(result, ScriptResult):
        raise ScriptError(
            f"{label}: run() returned {_shown(result)}; expected a ScriptResult; end run() with "
            "return ScriptResult(row_count=..., offset=...)"
        )
    row_count = result.row_count
    if isinstance(row_count, bool) or not isinstance(row_count, int) or row_count < 0:
        raise ScriptError(
            f"{label}: ScriptResult.row_count is {_shown(row_count)}; expected a whole number of 0 or more (an int: "
            "the rows the script wrote); return int(count)"
        )
    offset = None
    if result.offset is not None:
        try:
            offset = Offset(*stored_offset(result.offset))
        except ValueError as exc:
            raise ScriptError(f"{label}: {exc}") from exc
    variables = result.variables
    if variables is not None:
        if not isinstance(variables, Mapping):
            raise ScriptError(
                f"{label}: ScriptResult.variables is {_shown(variables)}; expected a mapping of names (str) to "
                "values, or None; return a dict"
            )
        bad = [key for key in variables if not isinstance(key, str)]
        if bad:
            raise ScriptError(
                f"{label}: ScriptResult.variables has the key {_shown(bad[0])}; expected names (str) as keys; "
                "convert the keys with str()"
            )
    return int(row_count), offset, variables


def _shown(value: object) -> str:
    text = _cut(repr(value), 80)
    kind = type(value)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    return f"{text} ({'an' if name[0].lower() in 'aeiou' else 'a'} {name})"


# ---------------------------------------------------------------------------------------------- logging


@contextmanager
def script_logging() -> Iterator[None]:
    """While a script runs, INFO records reach the attempt's log (stderr gets a handler when nothing else
    handles the root logger), and the SECRET_BEARING_LOGGERS stay at WARNING unless etl-craft logs at DEBUG
    (B49). Every level and handler is restored afterwards."""
    root = logging.getLogger()
    engine_debug = logging.getLogger("etlcraft").getEffectiveLevel() <= logging.DEBUG
    saved_root, saved = root.level, {name: logging.getLogger(name).level for name in SECRET_BEARING_LOGGERS}
    handler = None
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(handler)
    if root.level > logging.INFO:
        root.setLevel(logging.INFO)
    if not engine_debug:
        for name in SECRET_BEARING_LOGGERS:
            library = logging.getLogger(name)
            if library.level < logging.WARNING:  # NOTSET or below: a level the team set higher is kept
                library.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)
        root.setLevel(saved_root)
        if handler is not None:
            root.removeHandler(handler)
            handler.flush()
