"""The checks a SQL task passes before its target is touched. Each refusal names the object, the value found, what
was expected and the remedy (SqlGuardError, exit code 21).

- output names: none twice (read from the SELECT before staging), none of the columns etl-craft writes itself
  (B12), none that needs quotes (B45);
- the columns MERGE_KEY, MERGE_COMPARE_COLUMNS and MERGE_DEDUPE_ORDER name exist in the SELECT;
- no NULL in a merge key (B5);
- one row per key: without MERGE_DEDUPE_ORDER a repeated key is refused; with it, a key whose first rows in that
  order differ is refused (B41), with up to five examples and a count.
"""

from __future__ import annotations

from etlcraft.core.selects import SCD2_COLUMNS, engine_managed_columns
from etlcraft.handlers.sql import staging
from etlcraft.handlers.sql.spec import SqlTask
from etlcraft.handlers.sql.staging import Stage
from etlcraft.warehouse.connection import Session
from etlcraft.warehouse.names import needs_quotes, snake_case


def reserved_names(action: str) -> tuple[str, ...]:
    """The output names an action refuses: SETUP_TABLE creates the SCD2 columns too."""
    names = engine_managed_columns(action)
    return names + SCD2_COLUMNS if action == "SETUP_TABLE" else names


def check_output_names(task: SqlTask, stage: Stage, dialect: str) -> None:
    reserved = reserved_names(task.action)
    engine = [c.name for c in stage.columns if c.name.upper() in reserved]
    if engine:
        raise task.refuse(f"the SELECT returns {', '.join(engine)}, which etl-craft writes itself; list the columns "
                          "you need instead of *, or alias them")
    for column in stage.columns:
        if needs_quotes(column.name, dialect):
            raise task.refuse(f'the SELECT returns a column named "{column.name}", which needs quoting; alias it, '
                              f"for example AS {snake_case(column.name)}")


def check_repeated_names(session: Session, task: SqlTask) -> None:
    """No output name twice, in any case (run before staging: the scratch table would rename or refuse it)."""
    names = staging.output_names(session, task)
    keys = [n.lower() for n in names]
    repeated = list(dict.fromkeys(n for n in names if keys.count(n.lower()) > 1))
    if repeated:
        shown = ", ".join(f"{n} ({keys.count(n.lower())} times)" for n in repeated)
        raise task.refuse(f"the SELECT returns {shown}; give each column a name of its own (for example "
                          f"AS {repeated[0].lower()}_2), or list only the columns you need instead of *")


def check_parameter_columns(task: SqlTask, stage: Stage) -> None:
    """MERGE_KEY, MERGE_COMPARE_COLUMNS and MERGE_DEDUPE_ORDER name columns the SELECT returns."""
    named = {"MERGE_KEY": list(task.keys), "MERGE_COMPARE_COLUMNS": list(task.compare or ()),
             "MERGE_DEDUPE_ORDER": [item.split()[0] for item in task.order]}
    returned = ", ".join(c.name for c in stage.columns)
    for parameter, columns in named.items():
        missing = [c for c in columns if stage.column(c) is None]
        if missing:
            raise task.refuse(f"{parameter} names {', '.join(missing)}, which the SELECT does not return (it "
                              f"returns {returned}); correct {parameter} with a project migration, or return the "
                              "column")


def stage_keys(task: SqlTask, stage: Stage) -> list[str]:
    """MERGE_KEY as the stage spells its columns."""
    return [_name(stage, k) for k in task.keys]


def _name(stage: Stage, name: str) -> str:
    column = stage.column(name)
    assert column is not None, name
    return column.name


def check_null_keys(session: Session, task: SqlTask, stage: Stage) -> None:
    keys = stage_keys(task, stage)
    _refuse_nulls(task, keys, staging.null_key_rows(session, stage, keys))


def _refuse_nulls(task: SqlTask, keys: list[str], nulls: int) -> None:
    if nulls:
        raise task.refuse(f"the SELECT returns {nulls} row(s) with a NULL in MERGE_KEY ({', '.join(keys)}); a merge "
                          "needs every key column set: filter those rows out or COALESCE the key")


def check_keys(session: Session, task: SqlTask, stage: Stage) -> int:
    """check_null_keys, and how many key values the stage returns more than once (for one_row_per_key), read in
    one query."""
    keys = stage_keys(task, stage)
    nulls, repeated = staging.null_and_repeated_keys(session, stage, keys)
    _refuse_nulls(task, keys, nulls)
    return repeated


def dedupe_order(session: Session, task: SqlTask, stage: Stage) -> str:
    """MERGE_DEDUPE_ORDER as SQL, names quoted as the stage spells them; NULLS LAST unless the item says, so a
    NULL never wins and both warehouses order alike."""
    items = []
    for item in task.order:
        name, *rest = item.split()
        words = " ".join(rest).upper()
        if "NULLS" not in words:
            words = f"{words} NULLS LAST".strip()
        items.append(f"{session.dialect.quote(_name(stage, name))} {words}")
    return ", ".join(items)


def one_row_per_key(session: Session, task: SqlTask, stage: Stage, repeated: int) -> tuple[Stage, int]:
    """The stage with one row per key, and how many rows deduplication removed; `repeated`: how many key values
    the stage returns more than once (check_keys)."""
    keys = stage_keys(task, stage)
    if not repeated:
        return stage, 0
    if not task.order:
        examples = staging.repeated_examples(session, stage, keys)
        raise task.refuse(f"the SELECT returns {repeated} key(s) more than once, for example {examples}; set "
                          "MERGE_DEDUPE_ORDER to keep the first row of each key (for example updated_at DESC), or "
                          "return each key once")
    ranked, ties, examples = staging.ranked_ties(session, task, stage, keys, dedupe_order(session, task, stage))
    if ties:
        raise task.refuse(f"MERGE_DEDUPE_ORDER ({', '.join(task.order)}) leaves ties for {ties} key(s), for example "
                          f"{examples}; add a column that breaks the tie")
    deduplicated = staging.first_of_each_key(session, task, stage, ranked)
    staging.drop(session, ranked)
    assert stage.rows is not None and deduplicated.rows is not None
    return deduplicated, stage.rows - deduplicated.rows
