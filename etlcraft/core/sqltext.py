"""SQL text helpers built on sqlglot's tokenizer, so string literals, quoted names and comments are respected."""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

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
