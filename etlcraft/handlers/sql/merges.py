"""The keyed actions: SCD1_MERGE, SCD2_MERGE and DELETE_ROWS.

Merges hash the deduplicated stage once (hash version 2), then change the target with one set-based
`UPDATE ... FROM` joined to that stage and one `INSERT ... WHERE NOT EXISTS` (S3.G.2, B36): never a subquery per
column or per row. On DuckDB, SCD1 replaces its changed rows (one DELETE, one INSERT) instead of updating them. A
soft-deleted key sent again is revived (B17): SCD1 updates it and clears DELETE_FLAG; SCD2 closes the deleted
version and opens a new one. A soft DELETE_ROWS never flags a row twice (B46).

On a full-snapshot source (FULL_SNAPSHOT = Y), SCD2_MISSING_KEYS says what happens to a key whose current version
the SELECT no longer returns: KEEP leaves it current; CLOSE closes it in one UPDATE anti-joined to the hashed
stage; MARK_DELETED finds those live current versions with the same anti-join once, into a scratch table as small
as the keys that went missing, then inserts a current deletion marker (DELETE_FLAG = 'Y') for each and closes them
with an UPDATE joined to that scratch table. Both run in the merge's transaction, under its target lock; a key the
SELECT returns again closes its marker and opens a live version through the soft-delete revival above, so its
history stays contiguous.
"""

from __future__ import annotations

from etlcraft.handlers.sql import guards, hashing
from etlcraft.handlers.sql.spec import SqlTask
from etlcraft.handlers.sql.staging import HASH_COLUMN, Stage, derive_scratch, drop
from etlcraft.handlers.sql.tables import Outcome, counts
from etlcraft.handlers.sql.target import (
    ALL_ENGINE_COLUMNS,
    CREATES,
    REQUIRES,
    Target,
    add_columns,
    check_format,
    ensure_schema,
    inspect,
    new_columns,
    require,
)
from etlcraft.handlers.sql.writes import (
    count_rows,
    create_as_select,
    insert_rows,
    insert_values,
    read_target,
    update_stamps,
)
from etlcraft.warehouse.connection import Session
from etlcraft.warehouse.dialects import Column

_REPLACED_ROW = "etl_craft_replaced_row"  # the scratch column naming the target row a new version replaces


def merge(session: Session, task: SqlTask, stage: Stage, version: int | None) -> Outcome:
    """SCD1_MERGE or SCD2_MERGE: every guard first, then the changes."""
    guards.check_parameter_columns(task, stage)
    repeated = guards.check_keys(session, task, stage)
    deduplicated, duplicates = guards.one_row_per_key(session, task, stage, repeated)
    compare = hashing.compare_columns(task, deduplicated)
    hashing.refuse_floats(task, [(c, c) for c in compare])
    target = inspect(session, task)
    check_format(task, target, session.dialect.name)
    if not target.exists:
        inserted = _create_merged(session, task, target, deduplicated, compare)
        return Outcome(counts(stage, inserted, insert=inserted, duplicate=duplicates), record_version=True)
    require(task, target, REQUIRES[task.action])
    added = new_columns(task, target, deduplicated)
    if task.action == "SCD2_MERGE" and task.missing_keys == "MARK_DELETED":
        require(task, target, ("DELETE_FLAG",))
    hashing.refuse_floats(task, [(c, target.columns.get(c.key, c)) for c in compare])
    record = hashing.refuse_old_hashes(task, session, target, version)
    add_columns(session, target, added)
    before = read_target(session, task, target)
    hashed = _hashed(session, task, deduplicated, target, hashing.target_pairs(task, target, compare))
    write = _scd1 if task.action == "SCD1_MERGE" else _scd2
    inserted, updated = write(session, task, target, hashed, deduplicated, before.max_row_id)
    closed, markers = 0, 0
    if task.action == "SCD2_MERGE":
        closed, markers = _missing_keys(session, task, target, hashed, deduplicated, before.max_row_id + inserted)
    drop(session, hashed)
    return Outcome(counts(stage, before.count + inserted + markers, insert=inserted + markers, update=updated,
                          delete=closed, duplicate=duplicates),
                   record_version=record, absent_closed=closed, markers=markers)


def _create_merged(session: Session, task: SqlTask, target: Target, stage: Stage, compare: list[Column]) -> int:
    """A merge into a missing target: every key is new, so there is nothing to compare, update or close. The target
    is created with the action's engine-managed columns and every deduplicated row at once (CREATE TABLE AS), each
    with its version-2 hash and ROW_ID in key order from 1: the rows the general path would insert into a target
    created empty. The rows written."""
    ensure_schema(session, task, target)
    keys = [(k, k) for k in guards.stage_keys(task, stage)]
    return create_as_select(session, task, target, stage.ref, stage.columns, CREATES[task.action],
                            order=_order(session, keys), hash_sql=hashing.hash_sql(session.dialect,
                                                                                   [(c, c) for c in compare]))


def _hashed(session: Session, task: SqlTask, stage: Stage, target: Target,
            pairs: list[tuple[Column, Column]]) -> Stage:
    """The deduplicated stage with its version-2 hash, indexed on the key where that helps."""
    dialect = session.dialect
    query = f"SELECT s.*, {hashing.hash_sql(dialect, pairs)} AS {dialect.quote(HASH_COLUMN)} FROM {stage.ref} s"
    hashed = derive_scratch(session, task, "merge", query,
                            (*stage.columns, dialect.column(HASH_COLUMN, "VARCHAR")))
    for statement in dialect.prepare_stage(hashed.name, guards.stage_keys(task, stage)):
        session.run(statement)
    return hashed


def _keys(task: SqlTask, target: Target, stage: Stage) -> list[tuple[str, str]]:
    """(target column, stage column) of each MERGE_KEY column."""
    return [(target.name_of(k), k) for k in guards.stage_keys(task, stage)]


def _match(session: Session, keys: list[tuple[str, str]]) -> str:
    q = session.dialect.quote
    return " AND ".join(f"t.{q(a)} = s.{q(b)}" for a, b in keys)


def _order(session: Session, keys: list[tuple[str, str]]) -> str:
    return "ORDER BY " + ", ".join(f"s.{session.dialect.quote(b)}" for _, b in keys)


def _col(session: Session, target: Target, name: str) -> str:
    return f"t.{session.dialect.quote(target.name_of(name))}"


def _scd1(session: Session, task: SqlTask, target: Target, hashed: Stage, stage: Stage,
          row_base: int) -> tuple[int, int]:
    """Update the rows whose hash changed or that were soft-deleted; insert the new keys, numbered after
    row_base. (inserted, updated)"""
    q = session.dialect.quote
    keys = _keys(task, target, stage)
    key_names = {b.lower() for _, b in keys}
    changed = f"{_col(session, target, 'HASH_KEY')} IS DISTINCT FROM s.{q(HASH_COLUMN)}"
    assignments = [(target.name_of(c.name), f"s.{q(c.name)}") for c in stage.columns if c.key not in key_names]
    assignments.append((target.name_of("HASH_KEY"), f"s.{q(HASH_COLUMN)}"))
    if target.has("DELETE_FLAG"):
        changed += f" OR {_col(session, target, 'DELETE_FLAG')} = 'Y'"
        assignments.append((target.name_of("DELETE_FLAG"), "'N'"))
    assignments += update_stamps(session.dialect, task, target)
    if session.dialect.replaces_changed_rows and not target.has("rowid"):
        updated = _replace(session, task, target, hashed, keys, assignments, changed)
    else:
        updated = session.run(session.dialect.update_from_stage(target.ref, hashed.ref, keys, assignments, changed))
    inserted = insert_rows(session, task, target, hashed.ref, stage.columns, row_base=row_base,
                           order=_order(session, keys),
                           where=f"NOT EXISTS (SELECT 1 FROM {target.ref} t WHERE {_match(session, keys)})",
                           hash_sql=f"s.{q(HASH_COLUMN)}")
    return inserted, updated


def _replace(session: Session, task: SqlTask, target: Target, hashed: Stage, keys: list[tuple[str, str]],
             assignments: list[tuple[str, str]], changed: str) -> int:
    """What SCD1's UPDATE does, as a delete and an insert (Dialect.replaces_changed_rows): the changed rows' new
    versions (the assignments, every other column as it was, ROW_ID and the creation stamps included) go to a
    scratch table with the row they replace, those rows are deleted, then the new versions inserted. Deleting
    first lets a key the target declares unique be written again in the same transaction. The rows replaced."""
    q = session.dialect.quote
    values = dict(assignments)
    names = [c.name for c in target.columns.values()]
    select = ", ".join(f"{values.get(name, f't.{q(name)}')} AS {q(name)}" for name in names)
    replaced = derive_scratch(session, task, "replace",
                              f"SELECT t.rowid AS {q(_REPLACED_ROW)}, {select} FROM {target.ref} AS t "
                              f"JOIN {hashed.ref} AS s ON {_match(session, keys)} WHERE {changed}", ())
    if replaced.rows:  # no changed row: nothing to delete or insert
        session.run(f"DELETE FROM {target.ref} WHERE rowid IN (SELECT {q(_REPLACED_ROW)} FROM {replaced.ref})")
        columns = ", ".join(q(name) for name in names)
        session.run(f"INSERT INTO {target.ref} ({columns}) SELECT {columns} FROM {replaced.ref}")
    drop(session, replaced)
    return replaced.rows or 0


def _scd2(session: Session, task: SqlTask, target: Target, hashed: Stage, stage: Stage,
          row_base: int) -> tuple[int, int]:
    """Close the active versions whose hash changed or that were soft-deleted; open a version for every key
    without an active one, numbered after row_base. (inserted, closed)"""
    q, lit = session.dialect.quote, session.dialect.literal
    keys = _keys(task, target, stage)
    active = f"{_col(session, target, 'ACTIVE_FLAG')} = 'Y'"
    changed = f"{_col(session, target, 'HASH_KEY')} IS DISTINCT FROM s.{q(HASH_COLUMN)}"
    if target.has("DELETE_FLAG"):
        changed += f" OR {_col(session, target, 'DELETE_FLAG')} = 'Y'"
    assignments = [(target.name_of("ACTIVE_FLAG"), "'N'"), (target.name_of("VALID_TO"), lit(task.stamp.now)),
                   *update_stamps(session.dialect, task, target)]
    closed = session.run(session.dialect.update_from_stage(target.ref, hashed.ref, keys, assignments,
                                                           f"{active} AND ({changed})"))
    inserted = insert_rows(session, task, target, hashed.ref, stage.columns, row_base=row_base,
                           order=_order(session, keys),
                           where=f"NOT EXISTS (SELECT 1 FROM {target.ref} t WHERE {_match(session, keys)} AND "
                                 f"{active})", hash_sql=f"s.{q(HASH_COLUMN)}")
    return inserted, closed


def _missing_keys(session: Session, task: SqlTask, target: Target, hashed: Stage, stage: Stage,
                  row_base: int) -> tuple[int, int]:
    """SCD2_MISSING_KEYS on the keys with a current version that the SELECT (the hashed stage) does not return:
    (current versions closed, deletion markers opened), markers numbered after row_base. KEEP changes nothing; a
    key whose current row is already a deletion marker (DELETE_FLAG = 'Y') is left as it is by MARK_DELETED."""
    if task.missing_keys == "KEEP":
        return 0, 0
    dialect = session.dialect
    keys = _keys(task, target, stage)
    current = f"{_col(session, target, 'ACTIVE_FLAG')} = 'Y'"
    closing = dialect.literal(task.stamp.now)
    assignments = [(target.name_of("ACTIVE_FLAG"), "'N'"), (target.name_of("VALID_TO"), closing),
                   *update_stamps(dialect, task, target)]
    if task.missing_keys == "CLOSE":
        return session.run(dialect.update_absent_from_stage(target.ref, hashed.ref, keys, assignments, current)), 0
    flag = _col(session, target, "DELETE_FLAG")
    current += f" AND ({flag} IS NULL OR {flag} <> 'Y')"
    absent = derive_scratch(session, task, "absent",
                            f"SELECT t.* FROM {target.ref} t WHERE {current} AND NOT EXISTS "
                            f"(SELECT 1 FROM {hashed.ref} s WHERE {_match(session, keys)})",
                            tuple(target.columns.values()))
    markers = _insert_markers(session, task, target, keys, absent, row_base) if absent.rows else 0
    closed = session.run(dialect.update_from_stage(target.ref, absent.ref, [(a, a) for a, _ in keys], assignments,
                                                   current)) if absent.rows else 0
    drop(session, absent)
    return closed, markers


def _insert_markers(session: Session, task: SqlTask, target: Target, keys: list[tuple[str, str]], absent: Stage,
                    row_base: int) -> int:
    """A current deletion marker for each row of `absent` (live current versions, the target's columns): its
    business columns and HASH_KEY as they are, DELETE_FLAG = 'Y', opened at the run's time, ROW_ID after row_base
    in key order."""
    dialect = session.dialect
    q = dialect.quote
    order = "ORDER BY " + ", ".join(f"t.{q(a)}" for a, _ in keys)
    values = insert_values(dialect, task, row_base=row_base, order=order,
                           hash_sql=f"t.{q(target.name_of('HASH_KEY'))}")
    values["DELETE_FLAG"] = "'Y'"
    engine = {n.upper() for n in ALL_ENGINE_COLUMNS}
    names = [c.name for c in target.columns.values() if c.name.upper() not in engine]
    selected = [f"t.{q(n)}" for n in names]
    for name, value in values.items():
        if target.has(name):
            names.append(target.name_of(name))
            selected.append(value)
    return session.run(f"INSERT INTO {target.ref} ({', '.join(q(n) for n in names)})\n"
                       f"SELECT {', '.join(selected)}\n  FROM {absent.ref} t")


def delete_rows(session: Session, task: SqlTask, stage: Stage, version: int | None) -> Outcome:
    """Flag (DELETE_MODE soft) or delete (hard) the target rows whose key the SELECT returns."""
    guards.check_parameter_columns(task, stage)
    guards.check_null_keys(session, task, stage)
    target = inspect(session, task)
    if not target.exists:
        raise task.refuse(f"{task.target} does not exist; DELETE_ROWS removes rows from an existing table: create "
                          "it first (for example with a SETUP_TABLE task)")
    missing = [k for k in task.keys if not target.has(k)]
    if missing:
        raise task.refuse(f"MERGE_KEY names {', '.join(missing)}, which {task.target} does not have; correct "
                          "MERGE_KEY with a project migration")
    if task.delete_mode == "soft":
        require(task, target, ("DELETE_FLAG",))
    key_stage = _distinct_keys(session, task, stage)
    keys = _keys(task, target, stage)
    deleted = _soft_delete(session, task, target, key_stage, keys) if task.delete_mode == "soft" else session.run(
        f"DELETE FROM {target.ref} AS t WHERE EXISTS (SELECT 1 FROM {key_stage.ref} s WHERE {_match(session, keys)})")
    drop(session, key_stage)
    return Outcome(counts(stage, count_rows(session, target), delete=deleted))


def _distinct_keys(session: Session, task: SqlTask, stage: Stage) -> Stage:
    keys = guards.stage_keys(task, stage)
    columns = ", ".join(session.dialect.quote(k) for k in keys)
    key_stage = derive_scratch(session, task, "keys", f"SELECT DISTINCT {columns} FROM {stage.ref}",
                               tuple(c for c in stage.columns if c.name in keys))
    for statement in session.dialect.prepare_stage(key_stage.name, keys):
        session.run(statement)
    return key_stage


def _soft_delete(session: Session, task: SqlTask, target: Target, key_stage: Stage,
                 keys: list[tuple[str, str]]) -> int:
    """DELETE_FLAG = 'Y' on the rows not flagged yet (B46); on a target with versions, the active ones only."""
    flag = _col(session, target, "DELETE_FLAG")
    condition = f"{flag} IS NULL OR {flag} <> 'Y'"
    if target.has("ACTIVE_FLAG"):
        condition = f"({condition}) AND {_col(session, target, 'ACTIVE_FLAG')} = 'Y'"
    assignments = [(target.name_of("DELETE_FLAG"), "'Y'"), *update_stamps(session.dialect, task, target)]
    return session.run(session.dialect.update_from_stage(target.ref, key_stage.ref, keys, assignments, condition))
