-- One read-only SELECT: etl-craft writes its rows into the task's TARGET_OBJECT with the task's ACTION.
SELECT 1 AS customer_id, 'Ada' AS customer_name, 'UK' AS country
UNION ALL SELECT 2, 'Grace', 'US'
UNION ALL SELECT 3, 'Linus', 'FI'
