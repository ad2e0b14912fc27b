SELECT c.customer_id,
       c.customer_name,
       COUNT(o.order_id) AS order_count,
       COALESCE(SUM(o.amount), 0) AS order_total
  FROM main.customers c
  LEFT JOIN main.orders o ON o.customer_id = c.customer_id
 GROUP BY c.customer_id, c.customer_name
