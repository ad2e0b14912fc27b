"""Ingest the shop's customer changes into raw.customers, one page per run, from where the last run stopped.

The shop is simulated: change number n (1, 2, 3, ...) is made by a random generator seeded with n, so it is the
same record on every machine and every re-run. A real script would ask the shop's API for the changes after the
offset instead. The offset is the number of the last change loaded (an int); etl-craft stores it when the
attempt succeeds and hands it back as task.last_offset next time.
"""

import random
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from etlcraft.scripting import ScriptResult, ScriptTask

FIRST_NAMES = ("Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Linus", "Margaret", "Ken")
LAST_NAMES = ("Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Torvalds", "Hamilton")
CITIES = ("London", "Leeds", "Paris", "Lyon", "Berlin", "Munich", "Madrid", "Porto")
SEGMENTS = ("consumer", "small business", "enterprise")
START = datetime(2026, 1, 1, tzinfo=UTC)  # the first changes predate the first order (ingest_orders.py)
STEP = timedelta(minutes=30)


class Change(NamedTuple):
    change_id: int
    customer_id: int
    customer_name: str
    email: str
    city: str
    segment: str
    updated_at: datetime


def customers_before(n: int) -> int:
    """How many customers have signed up before change n: every fourth change edits a customer instead."""
    return (n - 1) - (n - 1) // 4


def change(n: int) -> Change:
    """Change n: a new customer (ids 1, 2, 3, ...), or, every fourth change, an existing one who moved or changed
    segment. A customer's name and e-mail come from their id, so they stay the same across changes."""
    rng = random.Random(f"customer-change:{n}")
    customer_id = rng.randint(1, customers_before(n)) if n % 4 == 0 else customers_before(n) + 1
    person = random.Random(f"customer:{customer_id}")
    first, last = person.choice(FIRST_NAMES), person.choice(LAST_NAMES)
    email = f"{first}.{last}.{customer_id}@example.com".lower()
    updated_at = START + (n - 15) * STEP
    return Change(n, customer_id, f"{first} {last}", email, rng.choice(CITIES), rng.choice(SEGMENTS), updated_at)


def run(task: ScriptTask) -> ScriptResult:
    after = task.last_offset or 0  # None before the first successful run
    if not isinstance(after, int):
        raise TypeError(f"the stored offset {after!r} is not a change number; expected the int this script returns; "
                        "if an older version of the script returned something else, convert that value here")
    page = [change(n) for n in range(after + 1, after + 1 + int(task.input_params.get("page_size", 40)))]

    conn = task.warehouse.connection()  # one transaction: etl-craft commits it when run() succeeds
    mark = "?" if task.warehouse.dialect == "duckdb" else "%s"
    conn.execute("CREATE SCHEMA IF NOT EXISTS raw")
    conn.execute("CREATE TABLE IF NOT EXISTS raw.customers (change_id BIGINT, customer_id BIGINT, "
                 "customer_name VARCHAR, email VARCHAR, city VARCHAR, segment VARCHAR, updated_at TIMESTAMPTZ, "
                 "task_run_id BIGINT)")
    # A retry keeps the task run id: remove what an earlier attempt of this task run wrote, so nothing doubles.
    conn.execute(f"DELETE FROM raw.customers WHERE task_run_id = {mark}", (task.task_run_id,))
    for row in page:
        conn.execute(f"INSERT INTO raw.customers VALUES ({', '.join([mark] * 8)})", (*row, task.task_run_id))

    task.logger.info("loaded customer changes %d to %d", after + 1, after + len(page))
    return ScriptResult(row_count=len(page), offset=after + len(page), variables={"first_change": after + 1})
