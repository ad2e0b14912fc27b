"""etl-craft rehash: recompute HASH_KEY of every row of a target (every version of an SCD2 target) with hash
version 2, in one UPDATE in one warehouse transaction under the target's lock, then record version 2.

The compare contract (MERGE_KEY, MERGE_COMPARE_COLUMNS) comes from the active merge tasks that write the target;
they must agree. Without MERGE_COMPARE_COLUMNS the compare columns are the target's columns other than the key and
the engine-managed ones, in alphabetical order: the same as a merge's default when the SELECT returns every column
of the target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from etlcraft.config.loader import ProjectConfig
from etlcraft.core import parameters as params
from etlcraft.core.errors import NotFoundError, SqlGuardError, UsageError
from etlcraft.engine import locks
from etlcraft.engine.db import EngineDB
from etlcraft.handlers.sql import hashing, versions
from etlcraft.handlers.sql.target import ALL_ENGINE_COLUMNS
from etlcraft.warehouse.connection import Session, open_warehouse
from etlcraft.warehouse.dialects import Column, Family
from etlcraft.warehouse.names import TableName, parse_table_name


@dataclass(frozen=True)
class MergeContract:
    """What one merge task hashes: its key and its compare columns (None: the default)."""

    task: str  # PIPELINE.TASK
    keys: tuple[str, ...]
    compare: tuple[str, ...] | None

    @classmethod
    def of(cls, task: str, merge_key: str | None, compare: str | None) -> MergeContract:
        try:
            keys = params.BY_NAME["MERGE_KEY"].parse(merge_key) if merge_key else []
            columns = params.BY_NAME["MERGE_COMPARE_COLUMNS"].parse(compare) if compare else None
        except ValueError as exc:
            raise UsageError(f"task {task}: a merge parameter {exc}; fix it (etl-craft validate lists the "
                             "problems), then rehash") from None
        return cls(task, tuple(k.lower() for k in keys), None if columns is None else tuple(c.lower() for c in columns))


@dataclass(frozen=True)
class RehashResult:
    target: str
    rows: int  # rows (versions) in the target
    changed: int  # rows whose HASH_KEY changed (with --dry-run: would change)
    compare: tuple[str, ...]
    dry_run: bool


def one_contract(target: str, contracts: Sequence[MergeContract]) -> MergeContract:
    """The contract every merge task writing the target agrees on."""
    if not contracts:
        raise NotFoundError(f"no active SCD1_MERGE or SCD2_MERGE task writes {target}; rehash takes MERGE_KEY and "
                         "MERGE_COMPARE_COLUMNS from the merge tasks of the target: check TARGET_OBJECT, or the "
                         "name given to --target")
    first = contracts[0]
    for other in contracts[1:]:
        if (other.keys, other.compare) != (first.keys, first.compare):
            raise UsageError(f"the merge tasks writing {target} disagree on MERGE_KEY or MERGE_COMPARE_COLUMNS "
                             f"({first.task} and {other.task}), so no single hash fits every row: give them the "
                             "same parameters with a project migration, then rehash")
    return first


def target_name(text: str, dialect: str) -> TableName:
    try:
        return parse_table_name(text, dialect)
    except ValueError as exc:
        raise UsageError(f"--target {exc}") from None


def rehash_target(config: ProjectConfig, engine_db: EngineDB, target: TableName, contract: MergeContract, *,
                  dry_run: bool) -> RehashResult:
    warehouse = open_warehouse(config)
    try:
        with locks.target(engine_db, target.key):
            with warehouse.transaction() as session:
                result = _rehash(session, target, contract, dry_run=dry_run)
            if not dry_run:
                versions.record_version(engine_db, target.key, hashing.HASH_VERSION, command="rehash",
                                        arguments={"target": target.key, "changed": result.changed})
    finally:
        warehouse.dispose()
    return result


def _rehash(session: Session, target: TableName, contract: MergeContract, *, dry_run: bool) -> RehashResult:
    dialect = session.dialect
    columns = {name.lower(): dialect.column(name, kind) for name, kind in session.rows(dialect.columns_sql(target))}
    if "hash_key" not in columns:
        found = "does not exist" if not columns else "has no HASH_KEY column"
        raise SqlGuardError(f"{target} {found} in the {dialect.name} warehouse; rehash recomputes the HASH_KEY of a "
                            "merge target: check --target")
    compare = _compare(target, contract, columns)
    expression = hashing.hash_sql(dialect, [(c, c) for c in compare], alias="t")
    hash_column = f"t.{dialect.quote(columns['hash_key'].name)}"
    ref = dialect.table(target)
    rows = int(session.scalar(f"SELECT COUNT(*) FROM {ref}"))
    if dry_run:
        changed = int(session.scalar(f"SELECT COUNT(*) FROM {ref} t WHERE {hash_column} IS DISTINCT FROM {expression}"))
    else:
        changed = session.run(f"UPDATE {ref} AS t SET {dialect.quote(columns['hash_key'].name)} = {expression} "
                              f"WHERE {hash_column} IS DISTINCT FROM {expression}")
    return RehashResult(str(target), rows, changed, tuple(c.name for c in compare), dry_run)


def _compare(target: TableName, contract: MergeContract, columns: dict[str, Column]) -> list[Column]:
    if contract.compare is None:
        engine = {n.lower() for n in ALL_ENGINE_COLUMNS}
        chosen = sorted((c for k, c in columns.items() if k not in engine and k not in contract.keys),
                        key=lambda c: c.key)
    else:
        missing = [n for n in contract.compare if n not in columns]
        if missing:
            raise SqlGuardError(f"MERGE_COMPARE_COLUMNS of {contract.task} names {', '.join(missing)}, which {target} "
                                "does not have; correct the parameter, or add the column")
        chosen = [columns[n] for n in contract.compare]
    for column in chosen:
        if column.family is Family.FLOAT:
            raise SqlGuardError(f"{target}.{column.name} is {column.type}, a float among the compare columns of "
                                f"{contract.task}: floats have no stable text form; change the column to DECIMAL "
                                "(and cast it in the SELECT), or leave it out of MERGE_COMPARE_COLUMNS")
    return chosen
