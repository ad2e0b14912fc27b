"""sql/views.yaml is read strictly, and the SELECT of every view, as 080_views renders it for each dialect, parses
and names the spec's columns in the spec's order (the live catalog is checked in tests/py/conformance/test_views.py
and tests/sql/schema/views.test.sql)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import sqlglot
from sqlglot import exp

from etlcraft.engine.catalog import TableInfo
from etlcraft.engine.db import sqlite_script_statements
from etlcraft.engine.render import render
from etlcraft.engine.views import parse_views, views_spec

READY = [TableInfo("AUD_TASK_ATTEMPTS", "ATTEMPT_ID", ("ATTEMPT_ID", "RETRY_NUMBER")),
         TableInfo("AUD_ALERT_DELIVERIES", "DELIVERY_ID", ("DELIVERY_ID", "DELIVERY_STATUS")),
         TableInfo("AUD_WORKERS", "WORKER_ID", ("WORKER_ID", "HEARTBEAT_SECONDS"))]


def _selects(dialect: str) -> dict[str, exp.Expression]:
    """Each view's SELECT, parsed from the rendered template."""
    sql = render("functions/080_views.sql.j2", dialect, "etl_craft", tables=READY)
    found: dict[str, exp.Expression] = {}
    if dialect == "sqlite":
        for statement in sqlite_script_statements(sql):
            tree = sqlglot.parse_one(statement, read="sqlite")
            if isinstance(tree, exp.Create):
                found[tree.this.name.upper()] = tree.expression
    else:
        for name, body in re.findall(r"^CREATE OR REPLACE VIEW etl_craft\.(\w+) AS\n(.*?);\nCOMMENT ON VIEW", sql,
                                     flags=re.S | re.M):
            found[name] = sqlglot.parse_one(body, read="postgres")
    return found


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_each_rendered_view_parses_and_names_the_spec_columns_in_order(dialect: str) -> None:
    selects = _selects(dialect)
    spec = views_spec()
    assert list(selects) == [view.name for view in spec.views]
    for view in spec.views:
        select = selects[view.name]
        assert isinstance(select, exp.Query)
        # A UNION's names are its first SELECT's.
        assert [name.upper() for name in select.named_selects] == list(view.column_names), view.name


def test_without_the_columns_the_views_read_the_template_creates_no_view() -> None:
    for dialect in ("sqlite", "postgresql"):
        sql = render("functions/080_views.sql.j2", dialect, "etl_craft", tables=[])
        assert "CREATE" not in sql and "DROP" not in sql


def _spec(**column: Any) -> dict[str, Any]:
    return {"views": {"AUD_V_X": {"description": "x.", "columns": {"A": {"type": "BIGINT", "description": "a."}
                                                                   | column}}}}


@pytest.mark.parametrize(("data", "message"), [
    ({"views": {"V_X": {"description": "x.", "columns": {"A": {"type": "BIGINT", "description": "a."}}}}},
     "view 'V_X' is not named AUD_V_<NAME> in upper case"),
    ({"views": {"AUD_V_X": {"description": "", "columns": {}}}}, "AUD_V_X needs a description and columns"),
    (_spec(type="BIGINTEGER"), "AUD_V_X.A: type 'BIGINTEGER' is not one of"),
    (_spec(description=" "), "AUD_V_X.A: the description is empty"),
    (_spec(comment="no"), "AUD_V_X.A: give exactly a type and a description"),
    ({"views": {}}, "lists no view"),
])
def test_a_spec_that_is_not_complete_is_refused_naming_the_view_and_column(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_views(data)


def test_types_read_as_postgresql_names_them() -> None:
    runs = views_spec().view("AUD_V_RUNS")
    assert {c.name: c.pg_type for c in runs.columns if c.name in ("RUN_KEY", "QUEUED_AT", "DURATION_SECONDS")} == {
        "RUN_KEY": "character varying(256)", "QUEUED_AT": "timestamp with time zone", "DURATION_SECONDS": "numeric"}
