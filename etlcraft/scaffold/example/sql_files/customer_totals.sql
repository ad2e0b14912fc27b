-- One row per customer (their current version) with the orders they placed; SCD1_MERGE on customer_id.
SELECT c.customer_id,
       c.customer_name,
       c.segment,
       COUNT(o.order_id) AS order_count,
       COALESCE(SUM(o.amount), 0) AS order_total,
       MAX(o.ordered_at) AS last_order_at
  FROM main.customers c
  LEFT JOIN main.orders o ON o.customer_id = c.customer_id
 WHERE c.ACTIVE_FLAG = 'Y'
 GROUP BY c.customer_id, c.customer_name, c.segment
