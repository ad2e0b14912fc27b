-- Proves every named CHECK rule of the engine migrations (0001_engine_schema, 0004_target_hash_version,
-- 0005_gate_waits, 0007_business_rules, 0013_roles, 0014_engine_identity, 0018_alerts) exists on its table and refuses a row that breaks it (23514, naming the rule), that codes are identifiers (shell text, dunder, leading _ or digit, >128 chars refused), and that
-- the STATUS CHECK lists agree with ENG_STATUSES (sql/state_machine.yaml).
BEGIN;
SELECT etl_test.serialize();
SELECT plan(252);

SELECT etl_test.act();
SELECT etl_test.as_migrate();  -- SCHEMA_MIGRATIONS and ENG_ reference rows are written only under migrate's lock
SELECT etl_test.seed();
-- A rule of extract (0007_business_rules; the seed predates it), and what a flag of it names: the seed's attempt.
INSERT INTO etl_craft.cfg_business_rules (task_id, rule_code, rule_type, key_column, rule_sql)
SELECT task_id, 'amount_positive', 'REJECT', 'order_id', 'amount > 0' FROM etl_craft.cfg_tasks WHERE task_code = 'extract';
CREATE TEMP VIEW flag_of AS
SELECT r.business_rule_id, t.pipeline_run_id, x.task_run_id, x.attempt_id
  FROM etl_craft.cfg_business_rules r, etl_craft.aud_task_attempts x JOIN etl_craft.aud_task_run_log t USING (task_run_id);
-- An alert rule and an alert of the seed's first run (0018_alerts), for the alert tables' rules.
INSERT INTO etl_craft.cfg_alert_rules (project_id, alert_kind, channels)
SELECT min(project_id), 'RUN_FAILED', 'ops' FROM etl_craft.cfg_projects;
INSERT INTO etl_craft.aud_alerts (pipeline_run_id, alert_kind, alert_rule_id, channels, raised_at)
SELECT (SELECT min(pipeline_run_id) FROM etl_craft.aud_pipelines_run_log), 'RUN_FAILED',
       (SELECT min(alert_rule_id) FROM etl_craft.cfg_alert_rules), 'ops', now();

-- Every CHECK constraint the migration declares, by table.
CREATE TEMP TABLE expected_checks (tbl name, con name) ON COMMIT DROP;
INSERT INTO expected_checks VALUES
  ('schema_migrations', 'stream_is_valid'), ('schema_migrations', 'kind_is_valid'),
  ('schema_migrations', 'engine_rows_have_no_project'),
  ('eng_statuses', 'is_terminal_is_y_or_n'),
  ('eng_settings', 'setting_is_valid'), ('eng_settings', 'set_by_kind_is_valid'),
  ('eng_settings', 'test_mode_is_y_or_n'), ('eng_settings', 'role_prefix_is_a_name'),
  ('eng_settings', 'engine_id_is_an_id'),
  ('cfg_projects', 'code_is_identifier'), ('cfg_projects', 'max_running_tasks_is_positive'),
  ('cfg_projects', 'active_flag_is_y_or_n'),
  ('cfg_pools', 'pool_name_is_identifier'), ('cfg_pools', 'active_flag_is_y_or_n'),
  ('cfg_pipelines', 'code_is_identifier'), ('cfg_pipelines', 'catchup_is_y_or_n'),
  ('cfg_pipelines', 'max_catchup_runs_is_positive'), ('cfg_pipelines', 'overlap_policy_is_valid'),
  ('cfg_pipelines', 'sla_minutes_is_positive'), ('cfg_pipelines', 'max_parallel_tasks_is_positive'),
  ('cfg_pipelines', 'active_flag_is_y_or_n'),
  ('cfg_tasks', 'code_is_identifier'), ('cfg_tasks', 'handler_is_valid'), ('cfg_tasks', 'action_is_valid'),
  ('cfg_tasks', 'run_condition_is_valid'), ('cfg_tasks', 'active_flag_is_y_or_n'),
  ('cfg_tasks', 'sql_tasks_have_an_action'), ('cfg_tasks', 'sql_tasks_have_a_file'),
  ('cfg_tasks', 'python_tasks_have_a_script'),
  ('cfg_task_parameters', 'parameter_name_is_identifier'), ('cfg_task_parameters', 'active_flag_is_y_or_n'),
  ('cfg_pipeline_dependency', 'dependency_type_is_valid'), ('cfg_pipeline_dependency', 'consume_repairs_is_y_or_n'),
  ('cfg_pipeline_dependency', 'active_flag_is_y_or_n'), ('cfg_pipeline_dependency', 'not_self_dependent'),
  ('cfg_task_dependency', 'dependency_type_is_valid'), ('cfg_task_dependency', 'consume_repairs_is_y_or_n'),
  ('cfg_task_dependency', 'active_flag_is_y_or_n'), ('cfg_task_dependency', 'not_self_dependent'),
  ('aud_pipelines_run_log', 'trigger_kind_is_valid'), ('aud_pipelines_run_log', 'status_is_valid'),
  ('aud_pipelines_run_log', 'output_revision_is_positive'), ('aud_pipelines_run_log', 'repair_pending_is_y_or_n'),
  ('aud_pipelines_run_log', 'sla_status_is_valid'), ('aud_pipelines_run_log', 'started_by_kind_is_valid'),
  ('aud_pipelines_run_log', 'ended_by_kind_is_valid'), ('aud_pipelines_run_log', 'owner_has_a_lease'),
  ('aud_pipelines_run_log', 'default_retries_is_not_negative'),
  ('aud_pipelines_run_log', 'default_retry_delay_is_not_negative'),
  ('aud_pipelines_run_log', 'default_retry_backoff_is_at_least_1'),
  ('aud_task_run_log', 'status_is_valid'), ('aud_task_run_log', 'attempt_count_is_not_negative'),
  ('aud_task_attempts', 'attempt_number_is_positive'), ('aud_task_attempts', 'status_is_valid'),
  ('aud_task_attempts', 'slot_kind_is_valid'), ('aud_task_attempts', 'retryable_is_y_or_n'),
  ('aud_task_attempts', 'requested_by_kind_is_valid'), ('aud_task_attempts', 'claimed_attempts_have_an_owner'),
  ('aud_task_attempts', 'retry_number_is_not_negative'),
  ('aud_gate_decisions', 'result_is_valid'), ('aud_gate_decisions', 'decided_by_kind_is_valid'),
  ('aud_gate_decisions', 'one_dependency_is_set'), ('aud_gate_decisions', 'satisfied_names_its_upstream'),
  ('aud_dependency_consumption', 'consumed_revision_is_positive'), ('aud_dependency_consumption', 'one_dependency_is_set'),
  ('aud_run_interventions', 'intervention_is_valid'), ('aud_run_interventions', 'requested_by_kind_is_valid'),
  ('aud_pipeline_pauses', 'paused_by_kind_is_valid'), ('aud_pipeline_pauses', 'resumed_by_kind_is_valid'),
  ('aud_pipeline_pauses', 'resume_names_its_actor'),
  ('aud_actions', 'actor_kind_is_valid'), ('aud_actions', 'outcome_is_valid'),
  ('aud_metadata_changes', 'actor_kind_is_valid'), ('aud_metadata_changes', 'operation_is_valid'),
  ('aud_metadata_changes', 'images_match_operation'),
  ('aud_task_offsets', 'offset_type_is_valid'), ('aud_task_offsets', 'offset_has_one_origin'),
  ('aud_task_offsets', 'source_engine_id_is_an_id'),
  ('aud_target_hash_version', 'recomputed_by_kind_is_valid'),
  ('aud_gate_waits', 'looks_is_positive'), ('aud_gate_waits', 'outcome_is_valid'),
  ('aud_gate_waits', 'open_wait_has_a_next_look'),
  ('cfg_business_rules', 'rule_code_is_identifier'), ('cfg_business_rules', 'rule_type_is_valid'),
  ('cfg_business_rules', 'key_column_is_identifier'), ('cfg_business_rules', 'active_flag_is_y_or_n'),
  ('aud_business_rule_flags', 'active_flag_is_y_or_n'), ('aud_business_rule_flags', 'open_flag_has_no_end'),
  ('aud_overseers', 'started_by_kind_is_valid'), ('aud_overseers', 'stopped_has_a_reason'),
  ('cfg_api_tokens', 'token_name_is_a_name'), ('cfg_api_tokens', 'token_role_is_valid'),
  ('cfg_api_tokens', 'token_sha256_is_hex'), ('cfg_api_tokens', 'revoked_names_its_actor'),
  ('cfg_alert_rules', 'alert_kind_is_valid'), ('cfg_alert_rules', 'channels_are_names'),
  ('cfg_alert_rules', 'threshold_minutes_is_positive'), ('cfg_alert_rules', 'threshold_is_for_gate_waits'),
  ('cfg_alert_rules', 'active_flag_is_y_or_n'), ('aud_alerts', 'alert_kind_is_valid'),
  ('aud_alert_deliveries', 'delivery_status_is_valid'), ('aud_alert_deliveries', 'attempts_is_not_negative'),
  ('aud_alert_deliveries', 'pending_has_a_next_attempt'), ('aud_alert_deliveries', 'delivered_has_a_time'),
  ('aud_alert_deliveries', 'claim_has_an_expiry'),
  ('cfg_pools', 'provider_is_valid'), ('cfg_projects', 'max_warehouse_queries_is_positive'),
  ('aud_workers', 'ingestion_slots_is_not_negative'), ('aud_workers', 'warehouse_slots_is_not_negative'),
  ('aud_workers', 'heartbeat_seconds_is_positive'), ('aud_workers', 'status_is_valid'),
  ('aud_workers', 'started_by_kind_is_valid'), ('aud_workers', 'gone_has_a_stop'),
  ('aud_workers', 'gone_has_a_reason'), ('aud_workers', 'draining_has_a_time'),
  ('aud_project_bundles', 'manifest_sha256_is_hex'), ('aud_project_bundles', 'file_count_is_not_negative'),
  ('aud_project_bundles', 'total_bytes_is_not_negative'), ('aud_project_bundles', 'created_by_kind_is_valid');

-- 1 + 27: the full set of CHECK constraints, then has_check for each table that has any.
SELECT set_eq(
  $$SELECT c.relname, k.conname FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'etl_craft' AND k.contype = 'c'$$,
  'SELECT tbl, con FROM expected_checks',
  'etl_craft has exactly the 119 named CHECK constraints of the migrations');
SELECT has_check('etl_craft', tbl, upper(tbl) || ' has CHECK constraints')
  FROM (SELECT DISTINCT tbl FROM expected_checks) t ORDER BY tbl;

-- One violation per rule, each breaking only that rule, written with the marker set. UPDATEs change the seeded rows;
-- append-only tables (their UPDATE is refused by EC002 first) get an INSERT. The transition guard refuses any
-- status outside the state machine (EC010) before the CHECK runs, so the status_is_valid cases switch triggers off
-- (session_replication_role = replica, reverted with the probe) to reach the CHECK behind it.
CREATE TEMP TABLE violations (tbl name, con name, what text, stmt text) ON COMMIT DROP;
INSERT INTO violations VALUES
  ('cfg_alert_rules', 'alert_kind_is_valid', 'ALERT_KIND = RUN_STUCK',
   $$INSERT INTO etl_craft.cfg_alert_rules (project_id, alert_kind, channels, threshold_minutes, active_flag) SELECT min(project_id), 'RUN_STUCK', 'ops', NULL, 'Y' FROM etl_craft.cfg_projects$$),
  ('cfg_alert_rules', 'channels_are_names', 'CHANNELS = ops;drop',
   $$INSERT INTO etl_craft.cfg_alert_rules (project_id, alert_kind, channels, threshold_minutes, active_flag) SELECT min(project_id), 'RUN_FAILED', 'ops;drop', NULL, 'Y' FROM etl_craft.cfg_projects$$),
  ('cfg_alert_rules', 'channels_are_names', 'CHANNELS = ops, (a trailing comma)',
   $$INSERT INTO etl_craft.cfg_alert_rules (project_id, alert_kind, channels, threshold_minutes, active_flag) SELECT min(project_id), 'RUN_FAILED', 'ops,', NULL, 'Y' FROM etl_craft.cfg_projects$$),
  ('cfg_alert_rules', 'threshold_minutes_is_positive', 'THRESHOLD_MINUTES = 0',
   $$INSERT INTO etl_craft.cfg_alert_rules (project_id, alert_kind, channels, threshold_minutes, active_flag) SELECT min(project_id), 'GATE_WAITING', 'ops', 0, 'Y' FROM etl_craft.cfg_projects$$),
  ('cfg_alert_rules', 'threshold_is_for_gate_waits', 'THRESHOLD_MINUTES on RUN_FAILED',
   $$INSERT INTO etl_craft.cfg_alert_rules (project_id, alert_kind, channels, threshold_minutes, active_flag) SELECT min(project_id), 'RUN_FAILED', 'ops', 5, 'Y' FROM etl_craft.cfg_projects$$),
  ('cfg_alert_rules', 'active_flag_is_y_or_n', 'ACTIVE_FLAG = X',
   $$INSERT INTO etl_craft.cfg_alert_rules (project_id, alert_kind, channels, threshold_minutes, active_flag) SELECT min(project_id), 'RUN_FAILED', 'ops', NULL, 'X' FROM etl_craft.cfg_projects$$),
  ('aud_alerts', 'alert_kind_is_valid', 'ALERT_KIND = OOPS',
   $$INSERT INTO etl_craft.aud_alerts (pipeline_run_id, alert_kind, alert_rule_id, channels, raised_at)
     SELECT pipeline_run_id, 'OOPS', alert_rule_id, channels, raised_at FROM etl_craft.aud_alerts$$),
  ('aud_alert_deliveries', 'delivery_status_is_valid', 'DELIVERY_STATUS = SENT',
   $$INSERT INTO etl_craft.aud_alert_deliveries (alert_id, channel, delivery_status, attempts, next_attempt_at, delivered_at, owner_id, claim_expires_at) SELECT min(alert_id), 'ops', 'SENT', 0, NULL, NULL, NULL, NULL FROM etl_craft.aud_alerts$$),
  ('aud_alert_deliveries', 'attempts_is_not_negative', 'ATTEMPTS = -1',
   $$INSERT INTO etl_craft.aud_alert_deliveries (alert_id, channel, delivery_status, attempts, next_attempt_at, delivered_at, owner_id, claim_expires_at) SELECT min(alert_id), 'ops', 'PENDING', -1, now(), NULL, NULL, NULL FROM etl_craft.aud_alerts$$),
  ('aud_alert_deliveries', 'pending_has_a_next_attempt', 'PENDING without NEXT_ATTEMPT_AT',
   $$INSERT INTO etl_craft.aud_alert_deliveries (alert_id, channel, delivery_status, attempts, next_attempt_at, delivered_at, owner_id, claim_expires_at) SELECT min(alert_id), 'ops', 'PENDING', 0, NULL, NULL, NULL, NULL FROM etl_craft.aud_alerts$$),
  ('aud_alert_deliveries', 'delivered_has_a_time', 'DELIVERED without DELIVERED_AT',
   $$INSERT INTO etl_craft.aud_alert_deliveries (alert_id, channel, delivery_status, attempts, next_attempt_at, delivered_at, owner_id, claim_expires_at) SELECT min(alert_id), 'ops', 'DELIVERED', 1, NULL, NULL, NULL, NULL FROM etl_craft.aud_alerts$$),
  ('aud_alert_deliveries', 'claim_has_an_expiry', 'OWNER_ID without CLAIM_EXPIRES_AT',
   $$INSERT INTO etl_craft.aud_alert_deliveries (alert_id, channel, delivery_status, attempts, next_attempt_at, delivered_at, owner_id, claim_expires_at) SELECT min(alert_id), 'ops', 'PENDING', 0, now(), NULL, 'x', NULL FROM etl_craft.aud_alerts$$),
  ('schema_migrations', 'stream_is_valid', 'STREAM = OTHER',
   $$INSERT INTO etl_craft.schema_migrations VALUES ('OTHER', '9999', 'x', 'VERSIONED', 'abc', now(), 'pgtap')$$),
  ('schema_migrations', 'kind_is_valid', 'KIND = ONCE',
   $$INSERT INTO etl_craft.schema_migrations VALUES ('PROJECT', '9999', 'x', 'ONCE', 'abc', now(), 'pgtap')$$),
  ('schema_migrations', 'engine_rows_have_no_project', 'an ENGINE row with PROJECT_CODE',
   $$INSERT INTO etl_craft.schema_migrations VALUES ('ENGINE', '9999', 'x', 'VERSIONED', 'abc', now(), 'pgtap', 'a')$$),
  ('eng_statuses', 'is_terminal_is_y_or_n', 'IS_TERMINAL = y (lower case)',
   $$INSERT INTO etl_craft.eng_statuses VALUES ('RUN', 'PAUSED', 'y', NULL)$$),
  ('eng_settings', 'setting_is_valid', 'SETTING = CLOCK',
   $$INSERT INTO etl_craft.eng_settings (setting, value, set_at) VALUES ('CLOCK', 'fast', now())$$),
  ('eng_settings', 'test_mode_is_y_or_n', 'TEST_MODE = yes',
   $$INSERT INTO etl_craft.eng_settings (setting, value, set_at) VALUES ('TEST_MODE', 'yes', now())
     ON CONFLICT (setting) DO UPDATE SET value = excluded.value$$),
  ('eng_settings', 'role_prefix_is_a_name', 'ROLE_PREFIX = Etl Craft',
   $$INSERT INTO etl_craft.eng_settings (setting, value, set_at) VALUES ('ROLE_PREFIX', 'Etl Craft', now())
     ON CONFLICT (setting) DO UPDATE SET value = excluded.value$$),
  ('eng_settings', 'role_prefix_is_a_name', 'ROLE_PREFIX of 55 characters (its roles would not fit in a name)',
   $$INSERT INTO etl_craft.eng_settings (setting, value, set_at) VALUES ('ROLE_PREFIX', repeat('a', 55), now())
     ON CONFLICT (setting) DO UPDATE SET value = excluded.value$$),
  ('eng_settings', 'engine_id_is_an_id', 'ENGINE_ID = ../../tmp (the final-row guard off)',
   $$SET LOCAL session_replication_role = replica;
     UPDATE etl_craft.eng_settings SET value = '../../tmp' WHERE setting = 'ENGINE_ID'$$),
  ('eng_settings', 'set_by_kind_is_valid', 'SET_BY_KIND = ROBOT (stamping off)',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.eng_settings (setting, value, set_at, set_by, set_by_kind)
     VALUES ('CLOCK_NOTE', 'x', now(), 'pgtap', 'ROBOT')$$),
  ('cfg_projects', 'code_is_identifier', 'PROJECT_CODE = 1abc',
   $$UPDATE etl_craft.cfg_projects SET project_code = '1abc'$$),
  ('cfg_projects', 'max_running_tasks_is_positive', 'MAX_RUNNING_TASKS = 0',
   $$UPDATE etl_craft.cfg_projects SET max_running_tasks = 0$$),
  ('cfg_projects', 'active_flag_is_y_or_n', 'ACTIVE_FLAG = X',
   $$UPDATE etl_craft.cfg_projects SET active_flag = 'X'$$),
  ('cfg_pools', 'pool_name_is_identifier', 'POOL_NAME = my pool',
   $$UPDATE etl_craft.cfg_pools SET pool_name = 'my pool'$$),
  ('cfg_api_tokens', 'token_name_is_a_name', 'TOKEN_NAME = a token',
   $$INSERT INTO etl_craft.cfg_api_tokens (token_name, token_role, token_sha256) VALUES ('a token', 'viewer', repeat('0', 64))$$),
  ('cfg_api_tokens', 'token_role_is_valid', 'TOKEN_ROLE = root',
   $$INSERT INTO etl_craft.cfg_api_tokens (token_name, token_role, token_sha256) VALUES ('t', 'root', repeat('0', 64))$$),
  ('cfg_api_tokens', 'token_sha256_is_hex', 'TOKEN_SHA256 = plain',
   $$INSERT INTO etl_craft.cfg_api_tokens (token_name, token_role, token_sha256) VALUES ('t', 'viewer', 'plain')$$),
  ('cfg_api_tokens', 'revoked_names_its_actor', 'REVOKED_AT without REVOKED_BY',
   $$INSERT INTO etl_craft.cfg_api_tokens (token_name, token_role, token_sha256, revoked_at)
     VALUES ('t', 'viewer', repeat('0', 64), now())$$),
  ('cfg_pools', 'active_flag_is_y_or_n', 'ACTIVE_FLAG = y',
   $$UPDATE etl_craft.cfg_pools SET active_flag = 'y'$$),
  ('cfg_pipelines', 'code_is_identifier', 'PIPELINE_CODE = up-pl',
   $$UPDATE etl_craft.cfg_pipelines SET pipeline_code = 'up-pl' WHERE pipeline_code = 'up_pl'$$),
  ('cfg_pipelines', 'catchup_is_y_or_n', 'CATCHUP = X',
   $$UPDATE etl_craft.cfg_pipelines SET catchup = 'X' WHERE pipeline_code = 'up_pl'$$),
  ('cfg_pipelines', 'max_catchup_runs_is_positive', 'MAX_CATCHUP_RUNS = 0',
   $$UPDATE etl_craft.cfg_pipelines SET max_catchup_runs = 0 WHERE pipeline_code = 'up_pl'$$),
  ('cfg_pipelines', 'overlap_policy_is_valid', 'OVERLAP_POLICY = PARALLEL',
   $$UPDATE etl_craft.cfg_pipelines SET overlap_policy = 'PARALLEL' WHERE pipeline_code = 'up_pl'$$),
  ('cfg_pipelines', 'sla_minutes_is_positive', 'SLA_MINUTES = 0',
   $$UPDATE etl_craft.cfg_pipelines SET sla_minutes = 0 WHERE pipeline_code = 'up_pl'$$),
  ('cfg_pipelines', 'max_parallel_tasks_is_positive', 'MAX_PARALLEL_TASKS = 0',
   $$UPDATE etl_craft.cfg_pipelines SET max_parallel_tasks = 0 WHERE pipeline_code = 'up_pl'$$),
  ('cfg_pipelines', 'active_flag_is_y_or_n', 'ACTIVE_FLAG = X',
   $$UPDATE etl_craft.cfg_pipelines SET active_flag = 'X' WHERE pipeline_code = 'up_pl'$$),
  ('cfg_tasks', 'code_is_identifier', 'TASK_CODE = extract.v2',
   $$UPDATE etl_craft.cfg_tasks SET task_code = 'extract.v2' WHERE task_code = 'extract'$$),
  ('cfg_tasks', 'handler_is_valid', 'HANDLER = SHELL (a PYTHON task without ACTION)',
   $$UPDATE etl_craft.cfg_tasks SET handler = 'SHELL' WHERE task_code = 'load'$$),
  ('cfg_tasks', 'action_is_valid', 'ACTION = MERGE',
   $$UPDATE etl_craft.cfg_tasks SET action = 'MERGE' WHERE task_code = 'extract'$$),
  ('cfg_tasks', 'run_condition_is_valid', 'RUN_CONDITION = SOME',
   $$UPDATE etl_craft.cfg_tasks SET run_condition = 'SOME' WHERE task_code = 'extract'$$),
  ('cfg_tasks', 'active_flag_is_y_or_n', 'ACTIVE_FLAG = X',
   $$UPDATE etl_craft.cfg_tasks SET active_flag = 'X' WHERE task_code = 'extract'$$),
  ('cfg_tasks', 'sql_tasks_have_an_action', 'a SQL task with ACTION NULL',
   $$UPDATE etl_craft.cfg_tasks SET action = NULL WHERE task_code = 'extract'$$),
  ('cfg_tasks', 'sql_tasks_have_an_action', 'a PYTHON task with an ACTION',
   $$UPDATE etl_craft.cfg_tasks SET action = 'APPEND_TABLE' WHERE task_code = 'load'$$),
  ('cfg_tasks', 'sql_tasks_have_a_file', 'a SQL task with SQL_FILE NULL',
   $$UPDATE etl_craft.cfg_tasks SET sql_file = NULL WHERE task_code = 'extract'$$),
  ('cfg_tasks', 'python_tasks_have_a_script', 'a PYTHON task with SCRIPT_FILE NULL',
   $$UPDATE etl_craft.cfg_tasks SET script_file = NULL WHERE task_code = 'load'$$),
  ('cfg_task_parameters', 'parameter_name_is_identifier', 'PARAMETER_NAME = merge key',
   $$UPDATE etl_craft.cfg_task_parameters SET parameter_name = 'merge key'$$),
  ('cfg_task_parameters', 'active_flag_is_y_or_n', 'ACTIVE_FLAG = X',
   $$UPDATE etl_craft.cfg_task_parameters SET active_flag = 'X'$$),
  ('cfg_pipeline_dependency', 'dependency_type_is_valid', 'DEPENDENCY_TYPE = NEVER',
   $$UPDATE etl_craft.cfg_pipeline_dependency SET dependency_type = 'NEVER'$$),
  ('cfg_pipeline_dependency', 'consume_repairs_is_y_or_n', 'CONSUME_REPAIRS = X',
   $$UPDATE etl_craft.cfg_pipeline_dependency SET consume_repairs = 'X'$$),
  ('cfg_pipeline_dependency', 'active_flag_is_y_or_n', 'ACTIVE_FLAG = X',
   $$UPDATE etl_craft.cfg_pipeline_dependency SET active_flag = 'X'$$),
  ('cfg_pipeline_dependency', 'not_self_dependent', 'a pipeline depending on itself',
   $$UPDATE etl_craft.cfg_pipeline_dependency SET depends_on_pipeline_id = pipeline_id$$),
  ('cfg_task_dependency', 'dependency_type_is_valid', 'DEPENDENCY_TYPE = NEVER',
   $$UPDATE etl_craft.cfg_task_dependency SET dependency_type = 'NEVER'$$),
  ('cfg_task_dependency', 'consume_repairs_is_y_or_n', 'CONSUME_REPAIRS = X',
   $$UPDATE etl_craft.cfg_task_dependency SET consume_repairs = 'X'$$),
  ('cfg_task_dependency', 'active_flag_is_y_or_n', 'ACTIVE_FLAG = X',
   $$UPDATE etl_craft.cfg_task_dependency SET active_flag = 'X'$$),
  ('cfg_task_dependency', 'not_self_dependent', 'a task depending on itself',
   $$UPDATE etl_craft.cfg_task_dependency SET depends_on_task_id = task_id$$),
  ('aud_pipelines_run_log', 'trigger_kind_is_valid', 'TRIGGER_KIND = CRON',
   $$UPDATE etl_craft.aud_pipelines_run_log SET trigger_kind = 'CRON' WHERE run_key = 'manual:up1'$$),
  ('aud_pipelines_run_log', 'status_is_valid', 'STATUS = PAUSED (transition guard off)',
   $$SET LOCAL session_replication_role = replica;
     UPDATE etl_craft.aud_pipelines_run_log SET status = 'PAUSED' WHERE run_key = 'manual:up1'$$),
  ('aud_pipelines_run_log', 'output_revision_is_positive', 'OUTPUT_REVISION = 0',
   $$UPDATE etl_craft.aud_pipelines_run_log SET output_revision = 0 WHERE run_key = 'manual:up1'$$),
  ('aud_pipelines_run_log', 'repair_pending_is_y_or_n', 'REPAIR_PENDING = X',
   $$UPDATE etl_craft.aud_pipelines_run_log SET repair_pending = 'X' WHERE run_key = 'manual:up1'$$),
  ('aud_pipelines_run_log', 'sla_status_is_valid', 'SLA_STATUS = LATE',
   $$UPDATE etl_craft.aud_pipelines_run_log SET sla_status = 'LATE' WHERE run_key = 'manual:up1'$$),
  ('aud_pipelines_run_log', 'started_by_kind_is_valid', 'STARTED_BY_KIND = ROBOT',
   $$SET LOCAL session_replication_role = replica;
     UPDATE etl_craft.aud_pipelines_run_log SET started_by_kind = 'ROBOT' WHERE run_key = 'manual:up1'$$),
  ('aud_pipelines_run_log', 'ended_by_kind_is_valid', 'ENDED_BY_KIND = ROBOT',
   $$SET LOCAL session_replication_role = replica;
     UPDATE etl_craft.aud_pipelines_run_log SET ended_by_kind = 'ROBOT' WHERE run_key = 'manual:up1'$$),
  ('aud_pipelines_run_log', 'owner_has_a_lease', 'OWNER_ID set, LEASE_EXPIRES_AT NULL',
   $$UPDATE etl_craft.aud_pipelines_run_log SET owner_id = 'w1' WHERE run_key = 'manual:up1'$$),
  ('aud_pipelines_run_log', 'owner_has_a_lease', 'LEASE_EXPIRES_AT set, OWNER_ID NULL',
   $$UPDATE etl_craft.aud_pipelines_run_log SET lease_expires_at = now() WHERE run_key = 'manual:up1'$$),
  ('aud_pipelines_run_log', 'default_retries_is_not_negative', 'DEFAULT_RETRIES = -1',
   $$UPDATE etl_craft.aud_pipelines_run_log SET default_retries = -1 WHERE run_key = 'manual:up1'$$),
  ('aud_pipelines_run_log', 'default_retry_delay_is_not_negative', 'DEFAULT_RETRY_DELAY_SECONDS = -1',
   $$UPDATE etl_craft.aud_pipelines_run_log SET default_retry_delay_seconds = -1 WHERE run_key = 'manual:up1'$$),
  ('aud_pipelines_run_log', 'default_retry_backoff_is_at_least_1', 'DEFAULT_RETRY_BACKOFF = 0.5',
   $$UPDATE etl_craft.aud_pipelines_run_log SET default_retry_backoff = 0.5 WHERE run_key = 'manual:up1'$$),
  ('aud_task_run_log', 'status_is_valid', 'STATUS = QUEUED (transition guard off)',
   $$SET LOCAL session_replication_role = replica; UPDATE etl_craft.aud_task_run_log SET status = 'QUEUED'$$),
  ('aud_task_run_log', 'attempt_count_is_not_negative', 'ATTEMPT_COUNT = -1',
   $$UPDATE etl_craft.aud_task_run_log SET attempt_count = -1$$),
  ('aud_task_attempts', 'attempt_number_is_positive', 'ATTEMPT_NUMBER = 0',
   $$UPDATE etl_craft.aud_task_attempts SET attempt_number = 0$$),
  ('aud_task_attempts', 'status_is_valid', 'STATUS = IN-PROGRESS (transition guard off)',
   $$SET LOCAL session_replication_role = replica; UPDATE etl_craft.aud_task_attempts SET status = 'IN-PROGRESS'$$),
  ('aud_task_attempts', 'slot_kind_is_valid', 'SLOT_KIND = WAREHOUSE (upper case)',
   $$UPDATE etl_craft.aud_task_attempts SET slot_kind = 'WAREHOUSE'$$),
  ('aud_task_attempts', 'retryable_is_y_or_n', 'RETRYABLE = X',
   $$UPDATE etl_craft.aud_task_attempts SET retryable = 'X'$$),
  ('aud_task_attempts', 'requested_by_kind_is_valid', 'REQUESTED_BY_KIND = ROBOT',
   $$SET LOCAL session_replication_role = replica;
     UPDATE etl_craft.aud_task_attempts SET requested_by_kind = 'ROBOT'$$),
  ('aud_task_attempts', 'claimed_attempts_have_an_owner', 'CLAIMED_AT set, OWNER_ID NULL',
   $$UPDATE etl_craft.aud_task_attempts SET claimed_at = now()$$),
  ('aud_task_attempts', 'retry_number_is_not_negative', 'RETRY_NUMBER = -1',
   $$UPDATE etl_craft.aud_task_attempts SET retry_number = -1$$),
  ('aud_gate_decisions', 'result_is_valid', 'RESULT = MAYBE',
   $$INSERT INTO etl_craft.aud_gate_decisions
       (pipeline_run_id, pipeline_dependency_id, result, reason, decided_at, decided_by, decided_by_kind)
     SELECT pipeline_run_id, pipeline_dependency_id, 'MAYBE', 'r', now(), 'etl-craft', 'SYSTEM'
       FROM etl_craft.aud_gate_decisions$$),
  ('aud_gate_decisions', 'decided_by_kind_is_valid', 'DECIDED_BY_KIND = ROBOT',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_gate_decisions
       (pipeline_run_id, pipeline_dependency_id, result, reason, decided_at, decided_by, decided_by_kind)
     SELECT pipeline_run_id, pipeline_dependency_id, 'UNSATISFIED', 'r', now(), 'etl-craft', 'ROBOT'
       FROM etl_craft.aud_gate_decisions$$),
  ('aud_gate_decisions', 'one_dependency_is_set', 'both a pipeline and a task dependency',
   $$INSERT INTO etl_craft.aud_gate_decisions (pipeline_run_id, pipeline_dependency_id, task_dependency_id,
       result, reason, decided_at, decided_by, decided_by_kind)
     SELECT g.pipeline_run_id, g.pipeline_dependency_id, d.task_dependency_id, 'UNSATISFIED', 'r', now(),
            'etl-craft', 'SYSTEM'
       FROM etl_craft.aud_gate_decisions g CROSS JOIN etl_craft.cfg_task_dependency d$$),
  ('aud_gate_decisions', 'one_dependency_is_set', 'neither a pipeline nor a task dependency',
   $$INSERT INTO etl_craft.aud_gate_decisions
       (pipeline_run_id, result, reason, decided_at, decided_by, decided_by_kind)
     SELECT pipeline_run_id, 'UNSATISFIED', 'r', now(), 'etl-craft', 'SYSTEM' FROM etl_craft.aud_gate_decisions$$),
  ('aud_gate_decisions', 'satisfied_names_its_upstream', 'SATISFIED without SELECTED_PIPELINE_RUN_ID',
   $$INSERT INTO etl_craft.aud_gate_decisions (pipeline_run_id, pipeline_dependency_id, selected_revision,
       result, reason, decided_at, decided_by, decided_by_kind)
     SELECT pipeline_run_id, pipeline_dependency_id, 1, 'SATISFIED', 'r', now(), 'etl-craft', 'SYSTEM'
       FROM etl_craft.aud_gate_decisions$$),
  ('aud_gate_decisions', 'satisfied_names_its_upstream', 'SATISFIED without SELECTED_REVISION',
   $$INSERT INTO etl_craft.aud_gate_decisions (pipeline_run_id, pipeline_dependency_id, selected_pipeline_run_id,
       result, reason, decided_at, decided_by, decided_by_kind)
     SELECT pipeline_run_id, pipeline_dependency_id, pipeline_run_id, 'SATISFIED', 'r', now(), 'etl-craft', 'SYSTEM'
       FROM etl_craft.aud_gate_decisions$$),
  ('aud_dependency_consumption', 'consumed_revision_is_positive', 'CONSUMED_REVISION = 0',
   $$INSERT INTO etl_craft.aud_dependency_consumption
       (pipeline_run_id, pipeline_dependency_id, consumed_pipeline_run_id, consumed_revision, consumed_at)
     SELECT pipeline_run_id, pipeline_dependency_id, consumed_pipeline_run_id, 0, now()
       FROM etl_craft.aud_dependency_consumption$$),
  ('aud_dependency_consumption', 'one_dependency_is_set', 'neither a pipeline nor a task dependency',
   $$INSERT INTO etl_craft.aud_dependency_consumption
       (pipeline_run_id, consumed_pipeline_run_id, consumed_revision, consumed_at)
     SELECT pipeline_run_id, consumed_pipeline_run_id, 2, now() FROM etl_craft.aud_dependency_consumption$$),
  ('aud_run_interventions', 'intervention_is_valid', 'INTERVENTION = UNDO',
   $$INSERT INTO etl_craft.aud_run_interventions
       (pipeline_run_id, intervention, requested_by, requested_by_kind, requested_at)
     SELECT pipeline_run_id, 'UNDO', 'pgtap', 'HUMAN', now() FROM etl_craft.aud_run_interventions$$),
  ('aud_run_interventions', 'requested_by_kind_is_valid', 'REQUESTED_BY_KIND = ROBOT',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_run_interventions
       (pipeline_run_id, intervention, requested_by, requested_by_kind, requested_at)
     SELECT pipeline_run_id, 'MARK', 'pgtap', 'ROBOT', now() FROM etl_craft.aud_run_interventions$$),
  ('aud_pipeline_pauses', 'paused_by_kind_is_valid', 'PAUSED_BY_KIND = ROBOT',
   $$SET LOCAL session_replication_role = replica;
     UPDATE etl_craft.aud_pipeline_pauses SET paused_by_kind = 'ROBOT'$$),
  ('aud_pipeline_pauses', 'resumed_by_kind_is_valid', 'RESUMED_BY_KIND = ROBOT',
   $$SET LOCAL session_replication_role = replica;
     UPDATE etl_craft.aud_pipeline_pauses SET resumed_at = now(), resumed_by = 'pgtap', resumed_by_kind = 'ROBOT'$$),
  ('aud_pipeline_pauses', 'resume_names_its_actor', 'RESUMED_AT set, RESUMED_BY NULL',
   $$UPDATE etl_craft.aud_pipeline_pauses SET resumed_at = now()$$),
  ('aud_actions', 'actor_kind_is_valid', 'ACTOR_KIND = ROBOT',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_actions (started_at, actor, actor_kind, command, arguments)
     VALUES (now(), 'pgtap', 'ROBOT', 'run', '{}')$$),
  ('aud_actions', 'outcome_is_valid', 'OUTCOME = DONE',
   $$INSERT INTO etl_craft.aud_actions (started_at, actor, actor_kind, command, arguments, outcome)
     VALUES (now(), 'pgtap', 'HUMAN', 'run', '{}', 'DONE')$$),
  ('aud_metadata_changes', 'actor_kind_is_valid', 'ACTOR_KIND = ROBOT',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_metadata_changes
       (changed_at, actor, actor_kind, table_name, row_key, operation, before_json, after_json)
     VALUES (now(), 'pgtap', 'ROBOT', 'CFG_POOLS', 'POOL_ID=1', 'INSERT', NULL, '{}')$$),
  ('aud_metadata_changes', 'operation_is_valid', 'OPERATION = UPSERT',
   $$INSERT INTO etl_craft.aud_metadata_changes
       (changed_at, actor, actor_kind, table_name, row_key, operation, before_json, after_json)
     VALUES (now(), 'pgtap', 'HUMAN', 'CFG_POOLS', 'POOL_ID=1', 'UPSERT', '{}', '{}')$$),
  ('aud_metadata_changes', 'images_match_operation', 'an INSERT with a BEFORE_JSON',
   $$INSERT INTO etl_craft.aud_metadata_changes
       (changed_at, actor, actor_kind, table_name, row_key, operation, before_json, after_json)
     VALUES (now(), 'pgtap', 'HUMAN', 'CFG_POOLS', 'POOL_ID=1', 'INSERT', '{}', '{}')$$),
  ('aud_metadata_changes', 'images_match_operation', 'a DELETE with an AFTER_JSON',
   $$INSERT INTO etl_craft.aud_metadata_changes
       (changed_at, actor, actor_kind, table_name, row_key, operation, before_json, after_json)
     VALUES (now(), 'pgtap', 'HUMAN', 'CFG_POOLS', 'POOL_ID=1', 'DELETE', '{}', '{}')$$),
  ('aud_metadata_changes', 'images_match_operation', 'an UPDATE without a BEFORE_JSON',
   $$INSERT INTO etl_craft.aud_metadata_changes
       (changed_at, actor, actor_kind, table_name, row_key, operation, before_json, after_json)
     VALUES (now(), 'pgtap', 'HUMAN', 'CFG_POOLS', 'POOL_ID=1', 'UPDATE', NULL, '{}')$$),
  ('aud_task_offsets', 'offset_type_is_valid', 'OFFSET_TYPE = FLOAT',
   $$UPDATE etl_craft.aud_task_offsets SET offset_type = 'FLOAT'$$),
  ('aud_task_offsets', 'offset_has_one_origin', 'an offset of a local attempt that also names a source',
   $$UPDATE etl_craft.aud_task_offsets SET source_engine_id = repeat('a', 32), source_attempt_id = 7$$),
  ('aud_task_offsets', 'source_engine_id_is_an_id', 'a carried offset whose source is not 32 hex digits',
   $$UPDATE etl_craft.aud_task_offsets
        SET task_run_id = NULL, attempt_id = NULL, source_engine_id = 'sqlite-laptop', source_attempt_id = 7$$),
  ('aud_target_hash_version', 'recomputed_by_kind_is_valid', 'RECOMPUTED_BY_KIND = ROBOT',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_target_hash_version
       (target_object, hash_version, recomputed_at, recomputed_by, recomputed_by_kind)
     VALUES ('main.customers', 2, now(), 'pgtap', 'ROBOT')$$),
  ('aud_gate_waits', 'looks_is_positive', 'LOOKS = 0',
   $$INSERT INTO etl_craft.aud_gate_waits (pipeline_run_id, first_check_at, last_check_at, next_check_at, wait_until,
       looks, waiting_for)
     SELECT pipeline_run_id, now(), now(), now(), now(), 0, 'w' FROM etl_craft.aud_pipelines_run_log
      WHERE run_key = 'manual:down1'$$),
  ('aud_gate_waits', 'outcome_is_valid', 'OUTCOME = TIMED_OUT',
   $$INSERT INTO etl_craft.aud_gate_waits (pipeline_run_id, first_check_at, last_check_at, wait_until, looks,
       waiting_for, outcome, ended_at)
     SELECT pipeline_run_id, now(), now(), now(), 1, 'w', 'TIMED_OUT', now() FROM etl_craft.aud_pipelines_run_log
      WHERE run_key = 'manual:down1'$$),
  ('aud_gate_waits', 'open_wait_has_a_next_look', 'an open wait (OUTCOME, ENDED_AT NULL) with NEXT_CHECK_AT NULL',
   $$INSERT INTO etl_craft.aud_gate_waits (pipeline_run_id, first_check_at, last_check_at, wait_until, looks,
       waiting_for)
     SELECT pipeline_run_id, now(), now(), now(), 1, 'w' FROM etl_craft.aud_pipelines_run_log
      WHERE run_key = 'manual:down1'$$),
  ('aud_gate_waits', 'open_wait_has_a_next_look', 'an ended wait (OUTCOME, ENDED_AT set) with a NEXT_CHECK_AT',
   $$INSERT INTO etl_craft.aud_gate_waits (pipeline_run_id, first_check_at, last_check_at, next_check_at, wait_until,
       looks, waiting_for, outcome, ended_at)
     SELECT pipeline_run_id, now(), now(), now(), now(), 1, 'w', 'SATISFIED', now() FROM etl_craft.aud_pipelines_run_log
      WHERE run_key = 'manual:down1'$$),
  ('aud_gate_waits', 'open_wait_has_a_next_look', 'an OUTCOME without ENDED_AT',
   $$INSERT INTO etl_craft.aud_gate_waits (pipeline_run_id, first_check_at, last_check_at, wait_until, looks,
       waiting_for, outcome)
     SELECT pipeline_run_id, now(), now(), now(), 1, 'w', 'ABANDONED' FROM etl_craft.aud_pipelines_run_log
      WHERE run_key = 'manual:down1'$$),
  ('cfg_business_rules', 'rule_code_is_identifier', 'RULE_CODE = amount positive',
   $$UPDATE etl_craft.cfg_business_rules SET rule_code = 'amount positive'$$),
  ('cfg_business_rules', 'rule_type_is_valid', 'RULE_TYPE = FAIL',
   $$UPDATE etl_craft.cfg_business_rules SET rule_type = 'FAIL'$$),
  ('cfg_business_rules', 'key_column_is_identifier', 'KEY_COLUMN = order-id',
   $$UPDATE etl_craft.cfg_business_rules SET key_column = 'order-id'$$),
  ('cfg_business_rules', 'active_flag_is_y_or_n', 'ACTIVE_FLAG = X',
   $$UPDATE etl_craft.cfg_business_rules SET active_flag = 'X'$$),
  -- y breaks open_flag_has_no_end too (neither Y nor N); CHECK constraints are checked in name order
  ('aud_business_rule_flags', 'active_flag_is_y_or_n', 'ACTIVE_FLAG = y (lower case)',
   $$INSERT INTO etl_craft.aud_business_rule_flags (business_rule_id, business_rule_key, active_flag, start_date,
       pipeline_run_id, task_run_id, attempt_id)
     SELECT business_rule_id, '42', 'y', now(), pipeline_run_id, task_run_id, attempt_id FROM flag_of$$),
  ('aud_business_rule_flags', 'open_flag_has_no_end', 'an open flag (Y) with an END_DATE',
   $$INSERT INTO etl_craft.aud_business_rule_flags (business_rule_id, business_rule_key, active_flag, start_date,
       end_date, pipeline_run_id, task_run_id, attempt_id)
     SELECT business_rule_id, '42', 'Y', now(), now(), pipeline_run_id, task_run_id, attempt_id FROM flag_of$$),
  ('aud_business_rule_flags', 'open_flag_has_no_end', 'an open flag (Y) with a CLEARED_BY_ATTEMPT_ID',
   $$INSERT INTO etl_craft.aud_business_rule_flags (business_rule_id, business_rule_key, active_flag, start_date,
       pipeline_run_id, task_run_id, attempt_id, cleared_by_attempt_id)
     SELECT business_rule_id, '42', 'Y', now(), pipeline_run_id, task_run_id, attempt_id, attempt_id FROM flag_of$$),
  ('aud_business_rule_flags', 'open_flag_has_no_end', 'a closed flag (N) without END_DATE',
   $$INSERT INTO etl_craft.aud_business_rule_flags (business_rule_id, business_rule_key, active_flag, start_date,
       pipeline_run_id, task_run_id, attempt_id, cleared_by_attempt_id)
     SELECT business_rule_id, '42', 'N', now(), pipeline_run_id, task_run_id, attempt_id, attempt_id FROM flag_of$$),
  ('aud_business_rule_flags', 'open_flag_has_no_end', 'a closed flag (N) without CLEARED_BY_ATTEMPT_ID',
   $$INSERT INTO etl_craft.aud_business_rule_flags (business_rule_id, business_rule_key, active_flag, start_date,
       end_date, pipeline_run_id, task_run_id, attempt_id)
     SELECT business_rule_id, '42', 'N', now(), now(), pipeline_run_id, task_run_id, attempt_id FROM flag_of$$),
  ('aud_overseers', 'started_by_kind_is_valid', 'STARTED_BY_KIND = ROBOT',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_overseers (owner_id, host, pid, version, started_at, heartbeat_at, started_by,
       started_by_kind) VALUES ('h:1:x', 'h', 1, '0.1', now(), now(), 'pgtap', 'ROBOT')$$),
  ('aud_overseers', 'stopped_has_a_reason', 'STOPPED_AT without STOP_REASON',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_overseers (owner_id, host, pid, version, started_at, heartbeat_at, stopped_at,
       started_by, started_by_kind) VALUES ('h:1:x', 'h', 1, '0.1', now(), now(), now(), 'pgtap', 'HUMAN')$$),
  ('aud_workers', 'ingestion_slots_is_not_negative', 'INGESTION_SLOTS = -1',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_workers (owner_id, worker_name, pool, host, pid, version, ingestion_slots, warehouse_slots, heartbeat_seconds, status, started_at, heartbeat_at, started_by, started_by_kind)
     VALUES ('h:1:x', 'w', 'remote', 'h', 1, '0.1', -1, 1, 10, 'ACTIVE', now(), now(), 'pgtap', 'HUMAN')$$),
  ('aud_workers', 'warehouse_slots_is_not_negative', 'WAREHOUSE_SLOTS = -1',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_workers (owner_id, worker_name, pool, host, pid, version, ingestion_slots, warehouse_slots, heartbeat_seconds, status, started_at, heartbeat_at, started_by, started_by_kind)
     VALUES ('h:1:x', 'w', 'remote', 'h', 1, '0.1', 1, -1, 10, 'ACTIVE', now(), now(), 'pgtap', 'HUMAN')$$),
  ('aud_workers', 'heartbeat_seconds_is_positive', 'HEARTBEAT_SECONDS = 0',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_workers (owner_id, worker_name, pool, host, pid, version, ingestion_slots, warehouse_slots, heartbeat_seconds, status, started_at, heartbeat_at, started_by, started_by_kind)
     VALUES ('h:1:x', 'w', 'remote', 'h', 1, '0.1', 1, 1, 0, 'ACTIVE', now(), now(), 'pgtap', 'HUMAN')$$),
  ('aud_workers', 'status_is_valid', 'STATUS = LOST',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_workers (owner_id, worker_name, pool, host, pid, version, ingestion_slots, warehouse_slots, heartbeat_seconds, status, started_at, heartbeat_at, started_by, started_by_kind)
     VALUES ('h:1:x', 'w', 'remote', 'h', 1, '0.1', 1, 1, 10, 'LOST', now(), now(), 'pgtap', 'HUMAN')$$),
  ('aud_workers', 'started_by_kind_is_valid', 'STARTED_BY_KIND = ROBOT',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_workers (owner_id, worker_name, pool, host, pid, version, ingestion_slots, warehouse_slots, heartbeat_seconds, status, started_at, heartbeat_at, started_by, started_by_kind)
     VALUES ('h:1:x', 'w', 'remote', 'h', 1, '0.1', 1, 1, 10, 'ACTIVE', now(), now(), 'pgtap', 'ROBOT')$$),
  ('aud_workers', 'gone_has_a_stop', 'GONE without STOPPED_AT',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_workers (owner_id, worker_name, pool, host, pid, version, ingestion_slots, warehouse_slots, heartbeat_seconds, status, started_at, heartbeat_at, started_by, started_by_kind, stop_reason)
     VALUES ('h:1:x', 'w', 'remote', 'h', 1, '0.1', 1, 1, 10, 'GONE', now(), now(), 'pgtap', 'HUMAN', 'x')$$),
  ('aud_workers', 'gone_has_a_reason', 'GONE without STOP_REASON',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_workers (owner_id, worker_name, pool, host, pid, version, ingestion_slots, warehouse_slots, heartbeat_seconds, status, started_at, heartbeat_at, started_by, started_by_kind, stopped_at)
     VALUES ('h:1:x', 'w', 'remote', 'h', 1, '0.1', 1, 1, 10, 'GONE', now(), now(), 'pgtap', 'HUMAN', now())$$),
  ('aud_workers', 'draining_has_a_time', 'DRAINING without DRAINING_AT',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_workers (owner_id, worker_name, pool, host, pid, version, ingestion_slots, warehouse_slots, heartbeat_seconds, status, started_at, heartbeat_at, started_by, started_by_kind)
     VALUES ('h:1:x', 'w', 'remote', 'h', 1, '0.1', 1, 1, 10, 'DRAINING', now(), now(), 'pgtap', 'HUMAN')$$),
  ('aud_project_bundles', 'manifest_sha256_is_hex', 'MANIFEST_SHA256 = upper-case hex',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_project_bundles (project_id, manifest, manifest_sha256, file_count, total_bytes,
       store_url, created_by, created_by_kind, created_at)
     VALUES (1, '{}', repeat('A', 64), 0, 0, 'file:///a', 'pgtap', 'HUMAN', now())$$),
  ('aud_project_bundles', 'file_count_is_not_negative', 'FILE_COUNT = -1',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_project_bundles (project_id, manifest, manifest_sha256, file_count, total_bytes,
       store_url, created_by, created_by_kind, created_at)
     VALUES (1, '{}', repeat('a', 64), -1, 0, 'file:///a', 'pgtap', 'HUMAN', now())$$),
  ('aud_project_bundles', 'total_bytes_is_not_negative', 'TOTAL_BYTES = -1',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_project_bundles (project_id, manifest, manifest_sha256, file_count, total_bytes,
       store_url, created_by, created_by_kind, created_at)
     VALUES (1, '{}', repeat('a', 64), 0, -1, 'file:///a', 'pgtap', 'HUMAN', now())$$),
  ('aud_project_bundles', 'created_by_kind_is_valid', 'CREATED_BY_KIND = ROBOT',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.aud_project_bundles (project_id, manifest, manifest_sha256, file_count, total_bytes,
       store_url, created_by, created_by_kind, created_at)
     VALUES (1, '{}', repeat('a', 64), 0, 0, 'file:///a', 'pgtap', 'ROBOT', now())$$),
  ('cfg_pools', 'provider_is_valid', 'PROVIDER = REMOTE',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.cfg_pools (pool_name, provider, created_by, created_date, updated_by, updated_date)
     VALUES ('p2', 'REMOTE', 'pgtap', now(), 'pgtap', now())$$),
  ('cfg_projects', 'max_warehouse_queries_is_positive', 'MAX_WAREHOUSE_QUERIES = 0',
   $$SET LOCAL session_replication_role = replica;
     INSERT INTO etl_craft.cfg_projects (project_code, max_warehouse_queries, created_by, created_date, updated_by,
       updated_date) VALUES ('p2', 0, 'pgtap', now(), 'pgtap', now())$$);

-- 1: every CHECK constraint has at least one violation below (so none is left untried).
SELECT set_eq('SELECT DISTINCT tbl, con FROM violations', 'SELECT tbl, con FROM expected_checks',
  'every CHECK constraint of the migration has a violation case');

-- 107: each violation is refused with 23514 by the rule it breaks.
SELECT throws_ok(stmt, '23514', format('new row for relation "%s" violates check constraint "%s"', tbl, con),
  format('%s %s refuses %s (23514)', upper(tbl), con, what))
  FROM violations ORDER BY tbl, con, what;

-- Codes are identifiers: a letter, then letters, digits or _, at most 128 characters. Each bad code is tried on
-- every identifier column: PROJECT_CODE, POOL_NAME, PIPELINE_CODE, TASK_CODE, PARAMETER_NAME, RULE_CODE and
-- KEY_COLUMN.
-- ONE_ROW picks one seeded row, so an accepted code cannot collide with a sibling's.
CREATE TEMP TABLE code_columns (tbl name, col name, con name, one_row text) ON COMMIT DROP;
INSERT INTO code_columns VALUES
  ('cfg_projects', 'project_code', 'code_is_identifier', 'project_code = ''tp'''),
  ('cfg_pools', 'pool_name', 'pool_name_is_identifier', 'pool_name = ''tpool'''),
  ('cfg_pipelines', 'pipeline_code', 'code_is_identifier', 'pipeline_code = ''up_pl'''),
  ('cfg_tasks', 'task_code', 'code_is_identifier', 'task_code = ''extract'''),
  ('cfg_task_parameters', 'parameter_name', 'parameter_name_is_identifier', 'parameter_name = ''MERGE_KEY'''),
  ('cfg_business_rules', 'rule_code', 'rule_code_is_identifier', 'rule_code = ''amount_positive'''),
  ('cfg_business_rules', 'key_column', 'key_column_is_identifier', 'key_column = ''order_id''');

-- 7 x 9 = 63: shell text, a dunder name, a leading _, a leading digit, a trailing newline, a hyphen, a non-ASCII
-- letter, a dot and the empty string are all refused by the identifier rule.
SELECT throws_ok(
  format('UPDATE etl_craft.%I SET %I = %L WHERE %s', c.tbl, c.col, b.code, c.one_row), '23514',
  format('new row for relation "%s" violates check constraint "%s"', c.tbl, c.con),
  format('%s.%s refuses the code %s (%s)', upper(c.tbl), upper(c.col), b.shown, c.con))
  FROM code_columns c
  CROSS JOIN (VALUES ('load $(touch x); echo', '''load $(touch x); echo'''), ('__init__', '''__init__'''),
                     ('_x', '''_x'''), ('1abc', '''1abc'''), (E'abc\n', 'abc followed by a newline'),
                     ('ab-c', '''ab-c'''), ('café', '''café'''), ('a.b', '''a.b'''), ('', 'the empty string'))
             AS b(code, shown)
 ORDER BY c.tbl, b.code;

-- 7: a 129-character code does not fit (VARCHAR(128) refuses it before the rule runs).
SELECT throws_ok(format('UPDATE etl_craft.%I SET %I = %L WHERE %s', tbl, col, 'a' || repeat('b', 128), one_row), '22001',
  'value too long for type character varying(128)',
  format('%s.%s refuses a 129-character code (22001)', upper(tbl), upper(col)))
  FROM code_columns ORDER BY tbl;

-- 7 + 7: Ab_1 and a 128-character code are accepted on every identifier column.
SELECT lives_ok(format('UPDATE etl_craft.%I SET %I = %L WHERE %s', tbl, col, 'Ab_1', one_row),
  format('%s.%s accepts the code Ab_1', upper(tbl), upper(col)))
  FROM code_columns ORDER BY tbl;
SELECT lives_ok(format('UPDATE etl_craft.%I SET %I = %L WHERE %s', tbl, col, 'A' || repeat('b_9', 42) || 'z', one_row),
  format('%s.%s accepts a 128-character code', upper(tbl), upper(col)))
  FROM code_columns ORDER BY tbl;

-- 3: the values each STATUS CHECK allows are the entity's statuses in ENG_STATUSES (sql/state_machine.yaml);
-- since migration 0010 the check compares with one constant array ('{QUEUED,...}'::text[]).
SELECT set_eq(
  format($$SELECT unnest(CAST(m[1] AS text[]))
             FROM pg_constraint k, regexp_matches(pg_get_constraintdef(k.oid), '''(\{[^'']+\})''::text\[\]') m
            WHERE k.conrelid = 'etl_craft.%I'::regclass AND k.conname = 'status_is_valid'$$, tbl),
  format($$SELECT status FROM etl_craft.eng_statuses WHERE entity = %L$$, entity),
  format('%s status_is_valid allows exactly the %s statuses of ENG_STATUSES', upper(tbl), entity))
  FROM (VALUES ('aud_pipelines_run_log', 'RUN'), ('aud_task_run_log', 'TASK_RUN'),
               ('aud_task_attempts', 'ATTEMPT')) AS e(tbl, entity);

SELECT * FROM finish();
ROLLBACK;
