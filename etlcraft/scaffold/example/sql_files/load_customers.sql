-- One read-only SELECT: etl-craft writes its rows into the task's TARGET_OBJECT with the task's ACTION.
-- raw.customers holds every change ingested so far; SCD2_MERGE keeps a version per change of a customer
-- (VALID_FROM, VALID_TO and ACTIVE_FLAG = 'Y' on the current one), so main.customers keeps their history.
SELECT customer_id, customer_name, email, city, segment, updated_at
  FROM raw.customers
