"""Guides show code that the suites run: the SQL API guide's script is docs/guides/sql-api.sql, verbatim."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_sql_api_guide_shows_the_script_the_pgtap_suite_runs() -> None:
    script = (ROOT / "docs" / "guides" / "sql-api.sql").read_text(encoding="utf-8")
    guide = (ROOT / "docs" / "guides" / "sql-api.md").read_text(encoding="utf-8")
    assert f"```sql\n{script}```" in guide
    suite = (ROOT / "tests" / "sql" / "guide" / "sql_api.test.sql").read_text(encoding="utf-8")
    assert "\\ir ../../../docs/guides/sql-api.sql" in suite
