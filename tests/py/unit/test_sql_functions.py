"""Every write-API function is declared completely and its SQLite statements are valid SQLite."""

from __future__ import annotations

import pytest
import sqlglot

from etlcraft.engine.functions import FunctionSpec, function_specs

SPECS = sorted(function_specs("sqlite").values(), key=lambda s: s.name)


def test_both_dialects_declare_the_same_functions_and_signatures() -> None:
    pg, sqlite = function_specs("postgresql"), function_specs("sqlite")
    assert sorted(pg) == sorted(sqlite)
    for name in pg:
        assert (pg[name].args, pg[name].returns) == (sqlite[name].args, sqlite[name].returns), name


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_function_header_documents_purpose_transition_locks_and_errors(spec: FunctionSpec) -> None:
    for field in ("purpose", "transition", "locks", "errors"):
        assert spec.doc.get(field, "").strip(), f"{spec.name} has no {field} in its header"
    assert spec.returns, f"{spec.name} declares no result columns"


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_sqlite_statements_parse_as_sqlite(spec: FunctionSpec) -> None:
    assert spec.statements, f"{spec.name} renders no SQLite statement"
    for statement in spec.statements:
        sqlglot.parse_one(statement, read="sqlite")
    assert spec.statements[-1].lstrip().upper().startswith(("SELECT", "WITH")), (
        f"{spec.name}: the last statement must be the SELECT whose rows the function returns")
