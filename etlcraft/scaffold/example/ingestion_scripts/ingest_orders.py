"""Ingest the shop's orders into raw.orders, one page per run, from the time the last run stopped.

The shop is simulated: order n is placed at START + n * STEP (plus a few seconds) and made by a random generator
seeded with n, so it is the same order on every machine and every re-run. A real script would ask the shop's API
for the orders placed after the offset instead. The offset is the time of the last order loaded (a datetime in
UTC); etl-craft stores it when the attempt succeeds and hands it back as task.last_offset next time.
"""

import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import NamedTuple

from etlcraft.scripting import ScriptResult, ScriptTask

PRODUCTS = {"notebook": Decimal("4.50"), "pen set": Decimal("12.00"), "desk lamp": Decimal("39.90"),
            "backpack": Decimal("59.00"), "headphones": Decimal("89.00"), "monitor": Decimal("229.00")}
START = datetime(2026, 1, 1, tzinfo=UTC)
STEP = timedelta(minutes=17)


class Order(NamedTuple):
    order_id: int
    customer_id: int
    product: str
    quantity: int
    amount: Decimal
    ordered_at: datetime


def order(n: int) -> Order:
    """Order n, placed by one of the customers who have signed up by then (one more every third order)."""
    rng = random.Random(f"order:{n}")
    product = rng.choice(sorted(PRODUCTS))
    quantity = rng.choice((1, 1, 1, 2, 3))
    placed_at = START + n * STEP + timedelta(seconds=rng.randint(0, 59))
    return Order(n, rng.randint(1, 10 + n // 3), product, quantity, PRODUCTS[product] * quantity, placed_at)


def first_order_after(after: datetime | None) -> int:
    """The number of the first order placed after `after` (1 before anything was loaded)."""
    if after is None:
        return 1
    n = (after - START) // STEP  # the order placed in the same STEP as `after`
    return n if order(n).ordered_at > after else n + 1


def run(task: ScriptTask) -> ScriptResult:
    after = task.last_offset  # None before the first successful run
    if after is not None and not isinstance(after, datetime):
        raise TypeError(f"the stored offset {after!r} is not a time; expected the datetime this script returns; "
                        "if an older version of the script returned something else, convert that value here")
    first = first_order_after(after)
    page = [order(n) for n in range(first, first + int(task.input_params.get("page_size", 60)))]

    conn = task.warehouse.connection()  # one transaction: etl-craft commits it when run() succeeds
    mark = "?" if task.warehouse.dialect == "duckdb" else "%s"
    conn.execute("CREATE SCHEMA IF NOT EXISTS raw")
    conn.execute("CREATE TABLE IF NOT EXISTS raw.orders (order_id BIGINT, customer_id BIGINT, product VARCHAR, "
                 "quantity INTEGER, amount DECIMAL(12, 2), ordered_at TIMESTAMPTZ, task_run_id BIGINT)")
    # A retry keeps the task run id: remove what an earlier attempt of this task run wrote, so nothing doubles.
    conn.execute(f"DELETE FROM raw.orders WHERE task_run_id = {mark}", (task.task_run_id,))
    for row in page:
        conn.execute(f"INSERT INTO raw.orders VALUES ({', '.join([mark] * 7)})", (*row, task.task_run_id))

    newest = page[-1].ordered_at if page else None  # None keeps the stored offset
    task.logger.info("loaded orders %d to %d, placed after %s", first, first + len(page) - 1, after)
    return ScriptResult(row_count=len(page), offset=newest, variables={"first_order": first})
