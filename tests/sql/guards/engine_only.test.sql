-- Proves every etl_craft table refuses INSERT, UPDATE, DELETE and TRUNCATE from a transaction without etl-craft's
-- actor marker (EC001, the message naming the operation, the table and the remedy), and accepts the same writes
-- once the marker is set.
BEGIN;
SELECT etl_test.serialize();
SET LOCAL client_min_messages = warning;  -- TRUNCATE ... CASCADE notices
SELECT plan(167);

-- 2: every table of the schema is an owned table, and each carries the engine-only statement trigger.
SELECT set_eq(
  $$SELECT upper(c.relname)::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'etl_craft' AND c.relkind IN ('r', 'p')$$,
  'SELECT * FROM etl_test.owned_tables()',
  'every table in schema etl_craft is an owned (guarded) table: none escapes the AUD_/CFG_/ENG_ naming');
-- tgtype bits: 2 BEFORE, 4 INSERT, 8 DELETE, 16 UPDATE, 32 TRUNCATE; bit 1 (ROW) unset means FOR EACH STATEMENT.
SELECT set_eq(
  $$SELECT upper(c.relname)::text FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'etl_craft' AND g.tgname = '_010_engine_only' AND g.tgenabled = 'O'
       AND g.tgtype = 2 + 4 + 8 + 16 + 32 AND g.tgfoid = 'etl_craft.tg_engine_only'::regproc$$,
  'SELECT * FROM etl_test.owned_tables()',
  'every owned table has an enabled _010_engine_only trigger: BEFORE INSERT, UPDATE, DELETE and TRUNCATE, per statement');

-- Rows to write over: the seed, plus a task run of load in manual:down1 without attempts (for the attempt insert)
-- and a business rule of extract (for the flag insert; the seed has none).
SELECT etl_test.act();
SELECT etl_test.seed();
INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status)
  VALUES ((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'),
          (SELECT task_id FROM etl_craft.cfg_tasks WHERE task_code = 'load'), 'IN-PROGRESS');
INSERT INTO etl_craft.cfg_business_rules (task_id, rule_code, rule_type, key_column, rule_sql)
  VALUES ((SELECT task_id FROM etl_craft.cfg_tasks WHERE task_code = 'extract'), 'amount_positive', 'REJECT', 'id',
          'amount > 0');

INSERT INTO etl_craft.cfg_alert_rules (project_id, alert_kind, channels)
  VALUES ((SELECT project_id FROM etl_craft.cfg_projects WHERE project_code = 'tp'), 'RUN_FAILED', 'ops');
INSERT INTO etl_craft.aud_alerts (pipeline_run_id, alert_kind, alert_rule_id, channels, raised_at)
  VALUES ((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'), 'RUN_FAILED',
          (SELECT min(alert_rule_id) FROM etl_craft.cfg_alert_rules), 'ops', now());

-- One INSERT per table that is valid in every other respect: it succeeds once the marker is set (below).
CREATE TEMP TABLE writes (tbl text, ins text) ON COMMIT DROP;
INSERT INTO writes VALUES
  ('CFG_ALERT_RULES', $$INSERT INTO etl_craft.cfg_alert_rules (project_id, alert_kind, channels)
     VALUES ((SELECT project_id FROM etl_craft.cfg_projects WHERE project_code = 'tp'), 'SLA_BREACHED', 'ops')$$),
  ('AUD_ALERTS', $$INSERT INTO etl_craft.aud_alerts (pipeline_run_id, alert_kind, alert_rule_id, channels, raised_at)
     VALUES ((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
             'SLA_BREACHED', (SELECT min(alert_rule_id) FROM etl_craft.cfg_alert_rules), 'ops', now())$$),
  ('AUD_ALERT_DELIVERIES', $$INSERT INTO etl_craft.aud_alert_deliveries (alert_id, channel, next_attempt_at)
     VALUES ((SELECT min(alert_id) FROM etl_craft.aud_alerts), 'ops', now())$$),
  ('SCHEMA_MIGRATIONS', $$INSERT INTO etl_craft.schema_migrations VALUES
     ('PROJECT', 'V900', 'pgtap', 'VERSIONED', repeat('0', 64), now(), 'pgtap')$$),
  ('ENG_STATUSES', $$INSERT INTO etl_craft.eng_statuses VALUES ('PGTAP', 'DONE', 'Y', NULL)$$),
  ('ENG_TRANSITIONS', $$INSERT INTO etl_craft.eng_transitions VALUES ('PGTAP', 'AUD_PGTAP', NULL, 'DONE')$$),
  ('ENG_ERROR_CODES', $$INSERT INTO etl_craft.eng_error_codes VALUES ('EC999', 'PGTAP', 99, 'pgtap')$$),
  ('ENG_SETTINGS', $$INSERT INTO etl_craft.eng_settings (setting, value, set_at) VALUES ('TEST_MODE', 'Y', now())
     ON CONFLICT (setting) DO UPDATE SET value = excluded.value$$),
  ('CFG_PROJECTS', $$INSERT INTO etl_craft.cfg_projects (project_code) VALUES ('tp2')$$),
  ('CFG_POOLS', $$INSERT INTO etl_craft.cfg_pools (pool_name) VALUES ('tpool2')$$),
  ('CFG_API_TOKENS', $$INSERT INTO etl_craft.cfg_api_tokens (token_name, token_role, token_sha256)
     VALUES ('pgtap', 'viewer', repeat('0', 64))$$),
  ('CFG_BUSINESS_RULES', $$INSERT INTO etl_craft.cfg_business_rules (task_id, rule_code, rule_type, key_column, rule_sql)
     VALUES ((SELECT task_id FROM etl_craft.cfg_tasks WHERE task_code = 'extract'), 'date_known', 'WARN', 'id',
             'order_date IS NOT NULL')$$),
  ('AUD_BUSINESS_RULE_FLAGS', $$INSERT INTO etl_craft.aud_business_rule_flags
       (business_rule_id, business_rule_key, start_date, pipeline_run_id, task_run_id, attempt_id)
     VALUES ((SELECT business_rule_id FROM etl_craft.cfg_business_rules WHERE rule_code = 'amount_positive'), '42', now(),
             (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
             (SELECT min(task_run_id) FROM etl_craft.aud_task_attempts),
             (SELECT min(attempt_id) FROM etl_craft.aud_task_attempts))$$),
  ('CFG_PIPELINES', $$INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code)
     VALUES ((SELECT project_id FROM etl_craft.cfg_projects WHERE project_code = 'tp'), 'third_pl')$$),
  ('CFG_TASKS', $$INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler)
     VALUES ((SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'up_pl'), 'notify', 'EMAIL_ALERT')$$),
  ('CFG_TASK_PARAMETERS', $$INSERT INTO etl_craft.cfg_task_parameters (task_id, parameter_name, parameter_value)
     VALUES ((SELECT task_id FROM etl_craft.cfg_tasks WHERE task_code = 'extract'), 'BATCH_SIZE', '100')$$),
  ('CFG_PIPELINE_DEPENDENCY', $$INSERT INTO etl_craft.cfg_pipeline_dependency (pipeline_id, depends_on_pipeline_id)
     VALUES ((SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'up_pl'),
             (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'))$$),
  ('CFG_TASK_DEPENDENCY', $$INSERT INTO etl_craft.cfg_task_dependency (task_id, depends_on_task_id)
     VALUES ((SELECT task_id FROM etl_craft.cfg_tasks WHERE task_code = 'extract'),
             (SELECT task_id FROM etl_craft.cfg_tasks WHERE task_code = 'load'))$$),
  ('AUD_PIPELINES_RUN_LOG', $$INSERT INTO etl_craft.aud_pipelines_run_log
       (pipeline_id, run_key, trigger_kind, run_date, status, queued_at, started_by, started_by_kind)
     VALUES ((SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'up_pl'), 'manual:up2', 'MANUAL',
             DATE '2026-01-02', 'QUEUED', now(), 'pgtap', 'HUMAN')$$),
  ('AUD_TASK_RUN_LOG', $$INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status)
     VALUES ((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'),
             (SELECT task_id FROM etl_craft.cfg_tasks WHERE task_code = 'extract'), 'IN-PROGRESS')$$),
  ('AUD_TASK_ATTEMPTS', $$INSERT INTO etl_craft.aud_task_attempts
       (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
     VALUES ((SELECT tr.task_run_id FROM etl_craft.aud_task_run_log tr JOIN etl_craft.cfg_tasks t USING (task_id)
               WHERE t.task_code = 'load'), 1, 'QUEUED', now(), 'pgtap', 'HUMAN')$$),
  ('AUD_GATE_WAITS', $$INSERT INTO etl_craft.aud_gate_waits
       (pipeline_run_id, task_id, first_check_at, last_check_at, next_check_at, wait_until, looks, waiting_for)
     VALUES ((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'),
             (SELECT task_id FROM etl_craft.cfg_tasks WHERE task_code = 'load'), now(), now(),
             now() + interval '1 minute', now() + interval '1 hour', 1, 'up_pl.extract has no SUCCESS task run')$$),
  ('AUD_GATE_DECISIONS', $$INSERT INTO etl_craft.aud_gate_decisions
       (pipeline_run_id, pipeline_dependency_id, result, reason, decided_at, decided_by, decided_by_kind)
     VALUES ((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'),
             (SELECT pipeline_dependency_id FROM etl_craft.cfg_pipeline_dependency), 'UNSATISFIED', 'again', now(),
             'etl-craft', 'SYSTEM')$$),
  ('AUD_DEPENDENCY_CONSUMPTION', $$INSERT INTO etl_craft.aud_dependency_consumption
       (pipeline_run_id, pipeline_dependency_id, consumed_pipeline_run_id, consumed_revision, consumed_at)
     VALUES ((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'),
             (SELECT pipeline_dependency_id FROM etl_craft.cfg_pipeline_dependency),
             (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'), 2, now())$$),
  ('AUD_RUN_INTERVENTIONS', $$INSERT INTO etl_craft.aud_run_interventions
       (pipeline_run_id, intervention, requested_by, requested_by_kind, requested_at)
     VALUES ((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'), 'CANCEL',
             'pgtap', 'HUMAN', now())$$),
  ('AUD_PIPELINE_PAUSES', $$INSERT INTO etl_craft.aud_pipeline_pauses (pipeline_id, paused_at, paused_by, paused_by_kind)
     VALUES ((SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'), now(), 'pgtap', 'HUMAN')$$),
  ('AUD_ACTIONS', $$INSERT INTO etl_craft.aud_actions (started_at, actor, actor_kind, command, arguments)
     VALUES (now(), 'pgtap', 'HUMAN', 'run', '{}')$$),
  ('AUD_METADATA_CHANGES', $$INSERT INTO etl_craft.aud_metadata_changes
       (changed_at, actor, actor_kind, table_name, row_key, operation, after_json)
     VALUES (now(), 'pgtap', 'HUMAN', 'CFG_POOLS', 'POOL_ID=0', 'INSERT', '{}')$$),
  ('AUD_TASK_OFFSETS', $$INSERT INTO etl_craft.aud_task_offsets
       (task_id, offset_type, offset_value, task_run_id, attempt_id, stored_at)
     VALUES ((SELECT task_id FROM etl_craft.cfg_tasks WHERE task_code = 'load'), 'TEXT', 'x',
             (SELECT min(task_run_id) FROM etl_craft.aud_task_attempts),
             (SELECT min(attempt_id) FROM etl_craft.aud_task_attempts), now())$$),
  ('AUD_TARGET_HASH_VERSION', $$INSERT INTO etl_craft.aud_target_hash_version
       (target_object, hash_version, recomputed_at, recomputed_by, recomputed_by_kind)
     VALUES ('main.customers', 2, now(), 'pgtap', 'HUMAN')$$),
  ('AUD_OVERSEERS', $$INSERT INTO etl_craft.aud_overseers
       (owner_id, host, pid, version, started_at, heartbeat_at, started_by, started_by_kind)
     VALUES ('h:1:x', 'h', 1, '0.1', now(), now(), 'pgtap', 'HUMAN')$$),
  ('AUD_WORKERS', $$INSERT INTO etl_craft.aud_workers
       (owner_id, worker_name, pool, host, pid, version, ingestion_slots, warehouse_slots, heartbeat_seconds, status,
        started_at, heartbeat_at, started_by, started_by_kind)
     VALUES ('h:2:x', 'w', 'remote', 'h', 2, '0.1', 1, 1, 10, 'ACTIVE', now(), now(), 'pgtap', 'HUMAN')$$);

-- The refusal each table gives, as 090_guards words it: the operation, the table, then a remedy.
CREATE TEMP VIEW refusals AS
SELECT w.tbl, o.op,
       CASE o.op
         WHEN 'INSERT' THEN w.ins
         WHEN 'UPDATE' THEN format('UPDATE etl_craft.%I SET %I = %2$I', lower(w.tbl),
                                   (SELECT a.attname FROM pg_attribute a
                                     WHERE a.attrelid = format('etl_craft.%I', lower(w.tbl))::regclass
                                       AND a.attnum > 0 AND NOT a.attisdropped AND a.attidentity = ''
                                     ORDER BY a.attnum LIMIT 1))
         WHEN 'DELETE' THEN format('DELETE FROM etl_craft.%I', lower(w.tbl))
         -- CASCADE: without it a referenced table fails the foreign key check before any trigger runs.
         ELSE format('TRUNCATE etl_craft.%I CASCADE', lower(w.tbl))
       END AS stmt,
       -- the remedy after the semicolon is free text; it must be there, its wording is not pinned here.
       format('%s on %s refused: %2$s is written only by etl-craft; _%%', o.op, w.tbl) AS pattern
  FROM writes w CROSS JOIN (VALUES (1, 'INSERT'), (2, 'UPDATE'), (3, 'DELETE'), (4, 'TRUNCATE')) AS o(n, op)
 ORDER BY w.tbl, o.n;

-- 1: the writes cover every owned table.
SELECT set_eq('SELECT tbl FROM writes', 'SELECT * FROM etl_test.owned_tables()',
  'the suite has a write for every owned table');

SELECT etl_test.unmark();

-- 108: without the marker, every operation on every owned table is refused with EC001 and a message naming it.
SELECT etl_test.refused(stmt, 'EC001', pattern,
  format('%s on %s without the marker is refused (EC001, the message names the operation and the table)', op, tbl))
  FROM refusals;

-- 1: an actor kind alone is no marker.
SELECT set_config('etl_craft.actor_kind', 'SYSTEM', true);
SELECT etl_test.refused($$INSERT INTO etl_craft.cfg_pools (pool_name) VALUES ('kind_only')$$, 'EC001',
  'INSERT on CFG_POOLS refused: CFG_POOLS is written only by etl-craft; _%',
  'a transaction with etl_craft.actor_kind set but no etl_craft.actor is refused (EC001)');

-- 27: with the marker, the same INSERTs succeed (those on SCHEMA_MIGRATIONS and the ENG_ reference tables in a
-- transaction that holds etl-craft migrate's lock, as only migrate writes them: migrate_only.test.sql).
SELECT etl_test.act();
SELECT etl_test.as_migrate();
SELECT lives_ok(ins, format('INSERT on %s with the marker succeeds', tbl)) FROM writes ORDER BY tbl;

-- 3: and so do UPDATE and DELETE where no other rule applies (whether TRUNCATE is allowed with the marker is
-- 090_guards' policy, not this suite's: append_only.test.sql covers the tables where it must be refused).
SELECT lives_ok($$UPDATE etl_craft.cfg_projects SET description = 'marked' WHERE project_code = 'tp2'$$,
  'UPDATE on CFG_PROJECTS with the marker succeeds');
SELECT lives_ok($$DELETE FROM etl_craft.eng_error_codes WHERE code = 'EC999'$$,
  'DELETE on ENG_ERROR_CODES with the marker succeeds');
SELECT lives_ok($$DELETE FROM etl_craft.aud_pipeline_pauses$$, 'DELETE on AUD_PIPELINE_PAUSES with the marker succeeds');

SELECT * FROM finish();
ROLLBACK;
