-- SCD1_MERGE on order_id: new orders are inserted, changed ones updated, so loading raw.orders again is harmless.
SELECT order_id, customer_id, product, quantity, amount, ordered_at
  FROM raw.orders
