#!/usr/bin/env bash
# The demo: a throwaway project on the embedded default (SQLite Engine DB, DuckDB warehouse) made by etl-craft init.
# Its two pipelines run for real: shop_ingest's Python scripts load a simulated shop's customers and orders into
# raw tables, customer_orders' SQL tasks merge them into customers (with history), orders and customer totals, and
# a second shop_ingest run loads only what is new since the offsets the first one stored.
set -euo pipefail

python=${PYTHON:-python3}
if "$python" -c 'import etlcraft' >/dev/null 2>&1; then
  etl_craft() { "$python" -m etlcraft "$@"; }  # the Python `make install` installed into: no launcher to start
else
  etl_craft() { etl-craft "$@"; }
fi

step() { printf '\n== etl-craft %s\n' "$*"; etl_craft "$@"; }

# The id of pipeline $1's run with key $2, read from etl-craft history --format json.
run_id() {
  etl_craft history --pipeline-code "$1" --format json | "$python" -c '
import json, sys
print(next(r["pipeline_run_id"] for r in json.load(sys.stdin)["runs"] if r["run_key"] == sys.argv[1]))' "$2"
}

workdir=$(mktemp -d "${TMPDIR:-/tmp}/etl-craft-demo.XXXXXX")
project="$workdir/demo"
echo "== etl-craft init $project"
etl_craft init "$project"
cd "$project"
step init-db
step migrate
step validate
step show --pipeline-code shop_ingest
step show --pipeline-code customer_orders

# Each run has a key: running the same key again resumes that run instead of starting another one.
step run --pipeline-code shop_ingest --run-key demo-ingest-1
step run --pipeline-code customer_orders --run-key demo-transform-1
step run --pipeline-code shop_ingest --run-key demo-ingest-2
step run --pipeline-code customer_orders --run-key demo-transform-2

transform=$(run_id customer_orders demo-transform-2)
second_ingest=$(run_id shop_ingest demo-ingest-2)
step status --pipeline-code customer_orders --run-id "$transform"
step status --pipeline-code shop_ingest --run-id "$second_ingest"
step history --pipeline-code shop_ingest
step history --pipeline-code customer_orders

# What the runs left: the offsets in the Engine DB (any tool may read it) and the tables in the warehouse.
echo
echo "== offsets and tables"
"$python" - <<'PY'
import sqlite3

import duckdb

engine = sqlite3.connect("file:.etl-craft/engine.db?mode=ro", uri=True)
for task, value, kind in engine.execute("SELECT t.TASK_CODE, o.OFFSET_VALUE, o.OFFSET_TYPE FROM AUD_TASK_OFFSETS o "
                                        "JOIN CFG_TASKS t ON t.TASK_ID = o.TASK_ID ORDER BY t.TASK_CODE"):
    print(f"stored offset of {task:<17} {value} ({kind})")
engine.close()
with duckdb.connect("warehouse.duckdb", read_only=True) as db:
    print("each ingest run loaded what came after the offset before it:")
    for table, key in (("raw.customers", "change_id"), ("raw.orders", "order_id")):
        for run, low, high, rows in db.execute(f"SELECT task_run_id, MIN({key}), MAX({key}), COUNT(*) FROM {table} "
                                               "GROUP BY task_run_id ORDER BY task_run_id").fetchall():
            print(f"  {table:<14} task run {run}: {key} {low} to {high} ({rows} rows)")
    for table in ("main.customers", "main.orders", "main.customer_totals"):
        print(f"{table:<21} {db.execute(f'SELECT COUNT(*) FROM {table}').fetchone()[0]:>4} rows")
    print("customers who changed, with their versions (SCD2_MERGE keeps the history):")
    for customer, name, city, segment, valid_from, active in db.execute(
            "SELECT customer_id, customer_name, city, segment, VALID_FROM, ACTIVE_FLAG FROM main.customers "
            "WHERE customer_id IN (SELECT customer_id FROM main.customers WHERE ACTIVE_FLAG = 'N' "
            "ORDER BY customer_id LIMIT 2) ORDER BY customer_id, VALID_FROM").fetchall():
        print(f"  {customer:>3} {name:<18} {city:<8} {segment:<15} from {valid_from:%Y-%m-%d %H:%M:%S} active {active}")
    print("top customers:")
    for name, segment, orders, total in db.execute(
            "SELECT customer_name, segment, order_count, order_total FROM main.customer_totals "
            "ORDER BY order_total DESC, customer_id LIMIT 3").fetchall():
        print(f"  {name:<20} {segment:<15} {orders:>2} orders {total:>9}")
PY
echo
echo "The demo project stays in $project; remove it with: rm -rf $workdir"
