"""A SQL task's SELECT as etl-craft sees it: exactly one read-only query and the output columns sqlglot can name.

Used by validate, and meant for the run-time guards of the SQL handler (they check the staged columns too):
trailing semicolons and comments are tolerated (B44, B57), engine-managed output names are refused (B12), and
names that would need quoting are refused (B45).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import TokenType

from etlcraft.core.sqltext import SQLGLOT_DIALECTS, split_statements

#: Columns etl-craft writes into every target itself (B12); a SELECT may not return them.
ENGINE_MANAGED_COLUMNS = ("PIPELINE_ID", "PIPELINE_RUN_ID", "TASK_RUN_ID", "ROW_ID", "HASH_KEY", "CREATE_DATE",
                          "CREATED_BY", "UPDATE_DATE", "UPDATED_BY", "DELETE_FLAG", "ACTIVE_FLAG")
#: The validity columns etl-craft writes into SCD2_MERGE targets.
SCD2_COLUMNS = ("VALID_FROM", "VALID_TO")

_WRITES = tuple(getattr(exp, name) for name in ("Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter",
                                                "TruncateTable", "Command", "Copy") if hasattr(exp, name))
#: Each warehouse's schema for unqualified table names.
DEFAULT_SCHEMAS = {"duckdb": "main", "postgresql": "public"}


def engine_managed_columns(action: str | None) -> tuple[str, ...]:
    """The output names a task with this SQL action may not use."""
    return ENGINE_MANAGED_COLUMNS + (SCD2_COLUMNS if action == "SCD2_MERGE" else ())


class SelectError(ValueError):
    """The text is not exactly one read-only SELECT. `found` says what it is, `remedy` what to do."""

    def __init__(self, found: str, remedy: str) -> None:
        self.found, self.remedy = found, remedy
        super().__init__(f"{found}; {remedy}")


@dataclass(frozen=True)
class OutputColumn:
    position: int  # 1-based position of the projection in the outermost SELECT list
    name: str | None  # None: an expression without an alias, which the warehouse names itself
    quoted: bool
    expression: str


@dataclass(frozen=True)
class SelectShape:
    text: str  # the one statement, without its trailing semicolon (comments inside it are kept)
    columns: tuple[OutputColumn, ...]  # the output columns sqlglot can name
    star_tables: tuple[str, ...] = ()  # tables (lower-case dotted names) whose every column is output through *
    resolved: bool = True  # False when a * reaches a table or function whose columns are unknown here


_REMEDY = ("etl-craft writes the SELECT's rows into TARGET_OBJECT with the task's ACTION; keep only the "
           "read-only query in the file")


def read_select(sql: str, dialect: str, *, source: str = "the SQL") -> SelectShape:
    """Check that `sql` is one read-only SELECT in `dialect` (an etl-craft name: duckdb, postgresql) and name
    its output columns. Raises SelectError (found, remedy) otherwise."""
    try:
        statements = split_statements(sql, dialect, source=source)
    except ValueError as exc:
        raise SelectError("cannot be read: a quote or comment is not closed", "close it") from exc
    if not statements:
        raise SelectError("holds no SQL statement", "write one SELECT")
    if len(statements) > 1:
        raise SelectError(f"holds {len(statements)} statements (the second starts on line {statements[1].line})",
                          _REMEDY)
    text = statements[0].text
    query = _parse(text, dialect)
    _refuse_writes(query)
    columns, stars, resolved = _outputs(query, {})
    return SelectShape(text, tuple(columns), tuple(dict.fromkeys(stars)), resolved)


@contextlib.contextmanager
def _fallbacks() -> Iterator[list[str]]:
    """Collect sqlglot's "falling back to parsing as a Command" warnings instead of letting them reach stderr."""
    caught: list[str] = []

    def keep(record: logging.LogRecord) -> bool:
        caught.append(record.getMessage())
        return False

    logger = logging.getLogger("sqlglot")
    logger.addFilter(keep)
    try:
        yield caught
    finally:
        logger.removeFilter(keep)


def _article(word: str) -> str:
    return f"an {word}" if word[:1] in "AEIOU" else f"a {word}"


def _parse(text: str, dialect: str) -> exp.Query:
    try:
        with _fallbacks():
            parsed = sqlglot.parse_one(text, read=SQLGLOT_DIALECTS[dialect])
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        where = f" at line {first.get('line')}, column {first.get('col')}" if first else ""
        reason = _TOKEN_REPR.sub(r"'\1'", str(first.get("description") or exc).split(". Line")[0])
        raise SelectError(f"is not valid {dialect} SQL{where}: {reason}", "fix the SQL") from exc
    while isinstance(parsed, exp.Subquery):
        parsed = parsed.this
    if isinstance(parsed, exp.Command) and parsed.name.upper() in ("SELECT", "WITH"):
        raise SelectError(f"uses syntax sqlglot cannot read as {dialect} SQL, so it cannot be checked to be "
                          "read-only", "write the SELECT without that syntax")
    if not isinstance(parsed, exp.Query) or isinstance(parsed, exp.Values):
        kind = parsed.name.upper() if isinstance(parsed, exp.Command) else parsed.key.upper()
        raise SelectError(f"is {_article(kind)} statement, not a SELECT", _REMEDY)
    return parsed


_TOKEN_REPR = re.compile(r"<Token token_type: [^,]+, text: ([^,]*), [^>]*>")


def _refuse_writes(query: exp.Query) -> None:
    for node in query.walk():
        if isinstance(node, _WRITES):
            kind = node.name.upper() if isinstance(node, exp.Command) else node.key.upper()
            raise SelectError(f"changes data: it holds {_article(kind)} inside the SELECT", _REMEDY)
        if isinstance(node, exp.Select) and node.args.get("into") is not None:
            raise SelectError("creates a table (SELECT ... INTO)", _REMEDY)
        if isinstance(node, exp.Select) and node.args.get("locks"):
            raise SelectError("locks rows (FOR UPDATE or FOR SHARE)", "remove the locking clause")


_Outputs = tuple[list[OutputColumn], list[str], bool]


def _outputs(query: object, ctes: dict[str, exp.Expression]) -> _Outputs:
    """The output columns of `query`, the tables a * takes every column of, and whether all were named."""
    while isinstance(query, exp.Subquery):
        query = query.this
    if isinstance(query, exp.SetOperation):
        left, left_stars, left_resolved = _outputs(query.left, ctes)
        _, right_stars, right_resolved = _outputs(query.right, ctes)
        return left, left_stars + right_stars, left_resolved and right_resolved
    if not isinstance(query, exp.Select):
        return [], [], False
    ctes = {**ctes, **_ctes(query)}
    sources = _sources(query)
    columns: list[OutputColumn] = []
    stars: list[str] = []
    resolved = True
    for position, projection in enumerate(query.expressions, start=1):
        if isinstance(projection, exp.Star) or (isinstance(projection, exp.Column) and projection.is_star):
            wanted = projection.table if isinstance(projection, exp.Column) else None
            for alias, source in sources:
                if wanted and alias != wanted.lower():
                    continue
                inner, inner_stars, inner_resolved = _expand(source, ctes)
                columns += [OutputColumn(position, c.name, c.quoted, c.expression) for c in inner]
                stars += inner_stars
                resolved = resolved and inner_resolved
            continue
        columns.append(_column(position, projection))
    return columns, stars, resolved


def _column(position: int, projection: exp.Expression) -> OutputColumn:
    if isinstance(projection, exp.Alias):
        identifier = projection.args.get("alias")
        return OutputColumn(position, projection.alias, bool(getattr(identifier, "quoted", False)),
                            projection.this.sql())
    if isinstance(projection, exp.Column):
        identifier = projection.this
        return OutputColumn(position, projection.name, bool(getattr(identifier, "quoted", False)), projection.sql())
    return OutputColumn(position, None, False, projection.sql())


def _ctes(select: exp.Select) -> dict[str, exp.Expression]:
    with_ = select.args.get("with_") or select.args.get("with")
    if with_ is None:
        return {}
    return {cte.alias.lower(): cte.this for cte in with_.expressions}


def _sources(select: exp.Select) -> list[tuple[str, exp.Expression]]:
    """(alias, source) of the FROM and JOIN items, alias lower-case (the table name when there is none)."""
    from_ = select.args.get("from_") or select.args.get("from")
    items = [from_.this] if from_ is not None else []
    items += [join.this for join in select.args.get("joins") or []]
    return [((item.alias or item.name).lower(), item) for item in items]


def _expand(source: exp.Expression, ctes: dict[str, exp.Expression]) -> _Outputs:
    if isinstance(source, exp.Subquery):
        return _outputs(source.this, ctes)
    if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier):
        if not source.db and source.name.lower() in ctes:
            inner = {k: v for k, v in ctes.items() if k != source.name.lower()}
            return _outputs(ctes[source.name.lower()], inner)
        name = ".".join(part.lower() for part in (source.catalog, source.db, source.name) if part)
        return [], [name], False
    return [], [], False


def same_table(read: str, target: str, dialect: str) -> bool:
    """Whether a table name read in SQL and a TARGET_OBJECT name the same table (case-insensitively; a name
    without a schema is in the warehouse's default schema)."""
    default = DEFAULT_SCHEMAS.get(dialect, "")
    read_parts, target_parts = read.lower().split("."), target.lower().strip().split(".")
    if len(read_parts) == 1 and default:
        read_parts = [default, *read_parts]
    if len(target_parts) == 1 and default:
        target_parts = [default, *target_parts]
    width = min(len(read_parts), len(target_parts))
    return read_parts[-width:] == target_parts[-width:]


def read_condition(sql: str, dialect: str, *, source: str = "the condition") -> str:
    """Check that `sql` is one read-only condition on a row (a business rule: `amount >= 0 AND email LIKE '%@%'`),
    tolerating a trailing semicolon and comments (B57); the condition's text. Raises SelectError otherwise."""
    try:
        statements = split_statements(sql, dialect, source=source)
    except ValueError as exc:
        raise SelectError("cannot be read: a quote or comment is not closed", "close it") from exc
    if len(statements) != 1:
        found = "holds no condition" if not statements else f"holds {len(statements)} statements"
        raise SelectError(found, "write one condition that every valid row meets, such as amount >= 0")
    text = statements[0].text
    remedy = ("write one condition that every valid row meets, such as amount >= 0 (a subquery may read, nothing may "
              "write)")
    depth = 0
    for token in sqlglot.Dialect.get_or_raise(SQLGLOT_DIALECTS[dialect]).tokenize(text):
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
        if depth < 0:
            break
    if depth != 0:
        raise SelectError("has a parenthesis that is not closed or closes one it did not open", remedy)
    try:
        with _fallbacks():
            parsed = sqlglot.parse_one(f"SELECT 1 FROM etl_rule_rows WHERE (\n{text}\n)",
                                       read=SQLGLOT_DIALECTS[dialect])
    except ParseError as exc:
        raise SelectError(f"is not a valid {dialect} condition", remedy) from exc
    if not isinstance(parsed, exp.Select) or parsed.args.get("where") is None:
        raise SelectError(f"is not a valid {dialect} condition", remedy)
    try:
        _refuse_writes(parsed)
    except SelectError as exc:
        raise SelectError(exc.found, remedy) from None
    return text
