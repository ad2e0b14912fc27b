#!/usr/bin/env bash
# The demo: a throwaway project on the embedded default (SQLite Engine DB, DuckDB warehouse), its Engine DB
# created, its example metadata migrated and validated, and the pipeline it describes shown.
set -euo pipefail

if command -v etl-craft >/dev/null 2>&1; then
  etl_craft() { etl-craft "$@"; }
else
  etl_craft() { "${PYTHON:-python3}" -m etlcraft "$@"; }
fi

workdir=$(mktemp -d "${TMPDIR:-/tmp}/etl-craft-demo.XXXXXX")
project="$workdir/demo"
echo "== etl-craft init $project"
etl_craft init "$project"
cd "$project"
echo
echo "== etl-craft init-db"
etl_craft init-db
echo
echo "== etl-craft migrate"
etl_craft migrate
echo
echo "== etl-craft doctor"
etl_craft doctor
echo
echo "== etl-craft validate"
etl_craft validate
echo
echo "== etl-craft show --pipeline_code customer_orders"
etl_craft show --pipeline_code customer_orders
echo
echo "The demo project stays in $project; remove it with: rm -rf $workdir"
