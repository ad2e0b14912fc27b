-- Helpers for the business rule suite (tests/sql/functions/rules). Call etl_test.act() and etl_test.seed() first;
-- attempts come from the attempt helpers (helpers_attempts.sql). Rules are written directly, as a project migration
-- writes them; every flag is written by record_rule_flags, the function under test.

-- rules_add(attempt, code, active): a REJECT rule (KEY_COLUMN order_id, RULE_SQL amount > 0) of the task the
-- attempt's task run runs, ACTIVE_FLAG `active`. Returns BUSINESS_RULE_ID.
CREATE OR REPLACE FUNCTION etl_test.rules_add(p_attempt bigint, p_code text DEFAULT 'amount_positive',
                                              p_active text DEFAULT 'Y')
RETURNS bigint LANGUAGE sql AS $$
  INSERT INTO etl_craft.cfg_business_rules (task_id, rule_code, rule_type, key_column, rule_sql, active_flag)
  SELECT t.task_id, p_code, 'REJECT', 'order_id', 'amount > 0', p_active
    FROM etl_craft.aud_task_attempts x JOIN etl_craft.aud_task_run_log t USING (task_run_id)
   WHERE x.attempt_id = p_attempt
  RETURNING business_rule_id;
$$;
