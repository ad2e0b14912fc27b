"""SQL text helpers built on sqlglot's tokenizer, so string literals, quoted names and comments are respected."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from etlcraft.core.errors import ConfigurationError

#: etl-craft's dialect names to sqlglot's.
SQLGLOT_DIALECTS = {"postgresql": "postgres", "sqlite": "sqlite", "duckdb": "duckdb"}


@dataclass(frozen=True)
class Statement:
    number: int  # 1-based position in the file
    line: int  # 1-based line where the statement starts
    text: str


def split_statements(sql: str, dialect: str, *, source: str) -> list[Statement]:
    """Split a script at its top-level semicolons; empty and comment-only pieces are dropped.

    Raises ValueError naming `source` when the text cannot be tokenized (an unclosed quote or comment).
    """
    try:
        tokens = sqlglot.Dialect.get_or_raise(SQLGLOT_DIALECTS[dialect]).tokenize(sql)
    except TokenError as exc:
        raise ValueError(f"{source}: cannot read the SQL ({exc}); check quotes and comments") from exc
    statements: list[Statement] = []
    start = 0
    has_tokens = False
    for token in [*tokens, None]:
        if token is not None and token.token_type != TokenType.SEMICOLON:
            has_tokens = True
            continue
        end = token.start if token is not None else len(sql)
        if has_tokens:
            text = sql[start:end].strip()
            line = sql.count("\n", 0, start + (len(sql[start:end]) - len(sql[start:end].lstrip()))) + 1
            statements.append(Statement(len(statements) + 1, line, text))
        start = end + 1
        has_tokens = False
    return statements


# -- $$name tokens -------------------------------------------------------------------------------------------

#: The run's values every task's SQL may use as $$name tokens (S3.G.7 names).
RUN_VALUES = ("pipeline_id", "pipeline_run_id", "task_run_id", "run_date")
_TOKEN = re.compile(r"\$\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class TokenUse:
    """One $$name token in SQL text, outside string literals, quoted names and comments."""

    name: str  # as written, without $$
    start: int  # offset of the first $
    end: int  # offset just after the name
    line: int  # 1-based


class UnknownTokenError(ConfigurationError):
    """SQL uses $$name tokens that have no value."""

    def __init__(self, source: str, unknown: list[TokenUse], known: list[str]) -> None:
        self.source, self.unknown, self.known = source, unknown, known
        super().__init__(
            f"{source} uses {describe_tokens(unknown, known)}, which {'has' if len(unknown) == 1 else 'have'} no "
            f"value; write one of {known_text(known)}, or keep $$ text inside a string literal or a comment"
        )


def known_text(known: list[str]) -> str:
    return ", ".join(f"$${name}" for name in sorted(known, key=str.lower)) or "(none)"


def describe_tokens(unknown: list[TokenUse], known: list[str]) -> str:
    """'$$run_dat on line 3 (did you mean $$run_date?)' for each token, joined with commas."""
    parts = []
    for use in unknown:
        near = difflib.get_close_matches(use.name.lower(), [k.lower() for k in known], n=1, cutoff=0.75)
        hint = f" (did you mean $${near[0]}?)" if near else ""
        parts.append(f"$${use.name} on line {use.line}{hint}")
    return ", ".join(parts)


def find_tokens(sql: str, dialect: str, *, source: str = "the SQL") -> list[TokenUse]:
    """The $$name tokens of `sql` that stand where a value can: not inside string literals (also dollar-quoted
    ones), quoted names or comments, which keep their $$ text.

    Each `$$` is masked as `__` (same length) before sqlglot tokenizes the text, because PostgreSQL and DuckDB
    read `$$` as the start of a dollar-quoted string; a token is a candidate the tokenizer reads as one word.
    """
    candidates = list(_TOKEN.finditer(sql))
    if not candidates:
        return []
    masked = list(sql)
    for match in candidates:
        masked[match.start()] = masked[match.start() + 1] = "_"
    try:
        tokens = sqlglot.Dialect.get_or_raise(SQLGLOT_DIALECTS[dialect]).tokenize("".join(masked))
    except TokenError as exc:
        raise ValueError(f"{source}: cannot read the SQL ({exc}); check quotes and comments") from exc
    words = {t.start: t.end for t in tokens if t.token_type not in _QUOTED}
    return [
        TokenUse(m.group(1), m.start(), m.end(), sql.count("\n", 0, m.start()) + 1)
        for m in candidates
        if words.get(m.start()) == m.end() - 1
    ]


_QUOTED = frozenset({TokenType.STRING, TokenType.IDENTIFIER, TokenType.HEREDOC_STRING, TokenType.NATIONAL_STRING,
                     TokenType.BIT_STRING, TokenType.HEX_STRING, TokenType.BYTE_STRING, TokenType.RAW_STRING})


def sql_literal(value: object, dialect: str) -> str:
    """`value` as a SQL literal of the dialect: numbers as is (negative ones in parentheses, so `-$$x` never
    becomes a `--` comment), text quoted, dates as CAST('...' AS DATE)."""
    text = exp.convert(value).sql(dialect=SQLGLOT_DIALECTS[dialect])
    return f"({text})" if text.startswith("-") else text


def substitute(sql: str, values: Mapping[str, object], dialect: str, *, source: str = "the SQL") -> str:
    """Replace every $$name token (see find_tokens) with the SQL literal of values[name] (names match in any
    case). Raises UnknownTokenError naming every token without a value and the known names."""
    by_name = {name.lower(): value for name, value in values.items()}
    uses = find_tokens(sql, dialect, source=source)
    unknown = [use for use in uses if use.name.lower() not in by_name]
    if unknown:
        raise UnknownTokenError(source, unknown, list(values))
    for use in reversed(uses):
        sql = sql[: use.start] + sql_literal(by_name[use.name.lower()], dialect) + sql[use.end:]
    return sql
