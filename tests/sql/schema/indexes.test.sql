-- Proves every index the engine migrations (0001, 0003, 0005, 0006, 0007, 0008, 0009, 0022, 0024) name, less the one 0011 drops,
-- exists on its table with its columns, uniqueness and partial predicate, and that the unique ones refuse what they
-- must (a second live attempt of a task run, a second run with the same (PIPELINE_ID, RUN_KEY), a second open pause,
-- a second open gate wait, a second open flag of a rule and key, duplicate active codes, ...) while allowing what
-- they must not refuse.
BEGIN;
SELECT etl_test.serialize();
SELECT plan(227);

-- The indexes as the migration writes them; PRED is PostgreSQL's reading of the WHERE clause (NULL: not partial).
CREATE TEMP TABLE expected_indexes (tbl name, idx name, cols text[], is_unique boolean, pred text) ON COMMIT DROP;
INSERT INTO expected_indexes VALUES
  ('eng_transitions', 'ux_eng_transitions',
   ARRAY['entity', 'COALESCE(from_status, ''''::character varying)', 'to_status'], true, NULL),
  ('cfg_projects', 'ux_projects_code_active', ARRAY['project_code'], true, '((active_flag)::text = ''Y''::text)'),
  ('cfg_pools', 'ux_pools_name_active', ARRAY['pool_name'], true, '((active_flag)::text = ''Y''::text)'),
  ('cfg_api_tokens', 'ux_api_tokens_name', ARRAY['token_name'], true, NULL),
  ('cfg_api_tokens', 'ux_api_tokens_sha256', ARRAY['token_sha256'], true, NULL),
  ('cfg_pipelines', 'ux_pipelines_code_active', ARRAY['project_id', 'pipeline_code'], true,
   '((active_flag)::text = ''Y''::text)'),
  ('cfg_tasks', 'ux_tasks_code_active', ARRAY['pipeline_id', 'task_code'], true, '((active_flag)::text = ''Y''::text)'),
  ('cfg_task_parameters', 'ux_task_parameters_active', ARRAY['task_id', 'parameter_name'], true,
   '((active_flag)::text = ''Y''::text)'),
  ('cfg_pipeline_dependency', 'ux_pipeline_dependency_active', ARRAY['pipeline_id', 'depends_on_pipeline_id'], true,
   '((active_flag)::text = ''Y''::text)'),
  ('cfg_pipeline_dependency', 'ix_pipeline_dependency_upstream', ARRAY['depends_on_pipeline_id'], false, NULL),
  ('cfg_task_dependency', 'ux_task_dependency_active', ARRAY['task_id', 'depends_on_task_id'], true,
   '((active_flag)::text = ''Y''::text)'),
  ('cfg_task_dependency', 'ix_task_dependency_upstream', ARRAY['depends_on_task_id'], false, NULL),
  ('aud_pipelines_run_log', 'ux_run_key', ARRAY['pipeline_id', 'run_key'], true, NULL),
  ('aud_pipelines_run_log', 'ix_runs_active', ARRAY['pipeline_id'], false,
   '((status)::text = ANY ((ARRAY[''QUEUED''::character varying, ''IN-PROGRESS''::character varying])::text[]))'),
  ('aud_pipelines_run_log', 'ix_runs_lease', ARRAY['status', 'lease_expires_at'], false, NULL),
  ('aud_pipelines_run_log', 'ix_runs_recent', ARRAY['pipeline_id', 'pipeline_run_id'], false, NULL),
  ('aud_task_run_log', 'ux_task_run_per_run', ARRAY['pipeline_run_id', 'task_id'], true, NULL),
  ('aud_task_run_log', 'ix_task_runs_task', ARRAY['task_id', 'task_run_id'], false, NULL),
  ('aud_task_attempts', 'ux_attempt_number', ARRAY['task_run_id', 'attempt_number'], true, NULL),
  ('aud_task_attempts', 'ux_attempt_live', ARRAY['task_run_id'], true,
   '((status)::text = ANY ((ARRAY[''QUEUED''::character varying, ''CLAIMED''::character varying, ''RUNNING''::character varying])::text[]))'),
  ('aud_task_attempts', 'ix_attempts_queue', ARRAY['pool', 'slot_kind', 'priority', 'queued_at', 'attempt_id'], false,
   '((status)::text = ''QUEUED''::text)'),
  ('aud_task_attempts', 'ix_attempts_run_queue',
   ARRAY['pipeline_run_id', 'pool', 'slot_kind', 'priority', 'queued_at', 'attempt_id'], false,
   '((status)::text = ''QUEUED''::text)'),
  ('aud_task_attempts', 'ix_attempts_run_due', ARRAY['pipeline_run_id', 'not_before', 'queued_at'], false,
   '((status)::text = ''QUEUED''::text)'),
  ('aud_workers', 'ux_workers_owner', ARRAY['owner_id'], true, NULL),
  ('aud_project_bundles', 'ix_project_bundles_latest', ARRAY['project_id', 'bundle_id'], false, NULL),
  ('aud_workers', 'ix_workers_live', ARRAY['pool', 'heartbeat_at'], false, '((status)::text <> ''GONE''::text)'),
  ('aud_task_attempts', 'ix_attempts_live_owner', ARRAY['owner_id', 'attempt_id'], false,
   '((status)::text = ANY ((ARRAY[''CLAIMED''::character varying, ''RUNNING''::character varying])::text[]))'),
  ('aud_pipelines_run_log', 'ux_one_running_run', ARRAY['pipeline_id'], true,
   '((status)::text = ''IN-PROGRESS''::text)'),
  ('aud_gate_decisions', 'ix_gate_decisions_run', ARRAY['pipeline_run_id'], false, NULL),
  ('aud_gate_decisions', 'ix_gate_decisions_attempt', ARRAY['attempt_id'], false, '(attempt_id IS NOT NULL)'),
  ('aud_dependency_consumption', 'ux_consumption_once',
   ARRAY['pipeline_run_id', 'COALESCE(pipeline_dependency_id, (0)::bigint)', 'COALESCE(task_dependency_id, (0)::bigint)',
         'consumed_pipeline_run_id', 'consumed_revision'], true, NULL),
  ('aud_dependency_consumption', 'ix_consumption_upstream', ARRAY['consumed_pipeline_run_id'], false, NULL),
  ('aud_dependency_consumption', 'ix_consumption_upstream_task', ARRAY['consumed_task_run_id'], false, NULL),
  ('aud_run_interventions', 'ix_interventions_run', ARRAY['pipeline_run_id'], false, NULL),
  ('aud_pipeline_pauses', 'ux_one_open_pause', ARRAY['pipeline_id'], true, '(resumed_at IS NULL)'),
  ('aud_actions', 'ix_actions_started', ARRAY['started_at'], false, NULL),
  ('aud_metadata_changes', 'ix_metadata_changes_row', ARRAY['table_name', 'row_key'], false, NULL),
  ('aud_gate_waits', 'ux_gate_wait_open', ARRAY['pipeline_run_id', 'COALESCE(task_id, (0)::bigint)'], true,
   '(ended_at IS NULL)'),
  ('cfg_business_rules', 'ux_business_rules_code_active', ARRAY['task_id', 'rule_code'], true,
   '((active_flag)::text = ''Y''::text)'),
  ('aud_business_rule_flags', 'ux_rule_flags_active', ARRAY['business_rule_id', 'business_rule_key'], true,
   '((active_flag)::text = ''Y''::text)'),
  ('aud_business_rule_flags', 'ix_rule_flags_task_run', ARRAY['task_run_id'], false, NULL),
  ('aud_overseers', 'ux_overseers_owner', ARRAY['owner_id'], true, NULL),
  ('aud_overseers', 'ix_overseers_open', ARRAY['started_at'], false, '(stopped_at IS NULL)'),
  ('cfg_alert_rules', 'ux_alert_rules_active', ARRAY['project_id', 'COALESCE(pipeline_id, (0)::bigint)', 'alert_kind'],
   true, '((active_flag)::text = ''Y''::text)'),
  ('cfg_alert_rules', 'ix_alert_rules_pipeline', ARRAY['pipeline_id', 'alert_kind'], false,
   '((active_flag)::text = ''Y''::text)'),
  ('aud_alerts', 'ux_alerts_run_kind', ARRAY['pipeline_run_id', 'alert_kind'], true, NULL),
  ('aud_alert_deliveries', 'ux_alert_deliveries_channel', ARRAY['alert_id', 'channel'], true, NULL),
  ('aud_alert_deliveries', 'ix_alert_deliveries_due', ARRAY['next_attempt_at'], false,
   '((delivery_status)::text = ''PENDING''::text)');

-- 1: these are all the indexes besides the primary keys, and exactly the ux_ ones are unique.
SELECT set_eq(
  $$SELECT c.relname AS tbl, i.relname AS idx, x.indisunique FROM pg_index x
      JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class c ON c.oid = x.indrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'etl_craft' AND NOT x.indisprimary$$,
  'SELECT tbl, idx, is_unique FROM expected_indexes',
  'etl_craft has exactly the 48 named indexes of the migration besides primary keys, unique exactly where named ux_');

-- 37: each index on its table, with its columns in order.
SELECT has_index('etl_craft', tbl, idx, cols::name[],
  format('%s has index %s on (%s)', upper(tbl), idx, array_to_string(cols, ', ')))
  FROM expected_indexes ORDER BY tbl, idx;

-- 19: the unique ones are unique.
SELECT index_is_unique('etl_craft', tbl, idx, format('%s is a unique index', idx))
  FROM expected_indexes WHERE is_unique ORDER BY tbl, idx;

-- 34: every lookup on plain columns is served by an index on exactly those columns, in that order (the reconciler
-- reads ix_attempts_live_owner and ix_runs_lease, the claim reads ix_attempts_queue).
SELECT is_indexed('etl_craft', tbl, cols::name[],
  format('%s is indexed on (%s)', upper(tbl), upper(array_to_string(cols, ', '))))
  FROM expected_indexes WHERE NOT array_to_string(cols, ',') LIKE '%(%' ORDER BY tbl, idx;

-- 37: the partial ones have their WHERE clause, the others have none.
SELECT is(
  (SELECT pg_get_expr(x.indpred, x.indrelid) FROM pg_index x WHERE x.indexrelid = format('etl_craft.%I', idx)::regclass),
  pred,
  CASE WHEN pred IS NULL THEN format('%s covers every row (not partial)', idx)
       ELSE format('%s is partial: WHERE %s', idx, pred) END)
  FROM expected_indexes ORDER BY tbl, idx;

-- 2: the claim indexes read the highest PRIORITY first.
SELECT matches(pg_get_indexdef('etl_craft.ix_attempts_queue'::regclass),
  '\(pool, slot_kind, priority DESC, queued_at, attempt_id\)',
  'ix_attempts_queue orders PRIORITY DESC, between SLOT_KIND and QUEUED_AT, then ATTEMPT_ID: the claim order');
SELECT matches(pg_get_indexdef('etl_craft.ix_attempts_run_queue'::regclass),
  '\(pipeline_run_id, pool, slot_kind, priority DESC, queued_at, attempt_id\)',
  'ix_attempts_run_queue is one run''s queue in the claim order (the claim with run_id)');

-- Behaviour, on the seed: project tp, pool tpool, pipelines up_pl and down_pl, tasks extract and load, runs
-- manual:up1 and manual:down1, the task run of extract in manual:up1 with attempt 1 QUEUED, an open pause of up_pl.
SELECT etl_test.act();
SELECT etl_test.seed();

CREATE TEMP VIEW tr AS SELECT task_run_id FROM etl_craft.aud_task_run_log;

-- 59 assertions follow.
-- ux_attempt_live: one QUEUED, CLAIMED or RUNNING attempt per task run; ended attempts do not count.
SELECT throws_ok(
  $$INSERT INTO etl_craft.aud_task_attempts (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
    SELECT task_run_id, 2, 'QUEUED', now(), 'pgtap', 'HUMAN' FROM tr$$,
  '23505', 'duplicate key value violates unique constraint "ux_attempt_live"',
  'a second attempt of a task run whose attempt 1 is QUEUED is refused by ux_attempt_live');
SELECT lives_ok($$UPDATE etl_craft.aud_task_attempts SET status = 'FAILED', ended_at = now() WHERE attempt_number = 1$$,
  'attempt 1 ends FAILED');
SELECT lives_ok(
  $$INSERT INTO etl_craft.aud_task_attempts (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
    SELECT task_run_id, 2, 'QUEUED', now(), 'pgtap', 'HUMAN' FROM tr$$,
  'once attempt 1 has ended, attempt 2 of the same task run is accepted');
SELECT lives_ok(
  $$UPDATE etl_craft.aud_task_attempts SET status = 'CLAIMED', owner_id = 'w1', claimed_at = now(),
       lease_expires_at = now() + interval '1 minute' WHERE attempt_number = 2$$,
  'attempt 2 is claimed');
SELECT throws_ok(
  $$INSERT INTO etl_craft.aud_task_attempts (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
    SELECT task_run_id, 3, 'QUEUED', now(), 'pgtap', 'HUMAN' FROM tr$$,
  '23505', 'duplicate key value violates unique constraint "ux_attempt_live"',
  'a new attempt of a task run whose attempt 2 is CLAIMED is refused by ux_attempt_live');
SELECT lives_ok($$UPDATE etl_craft.aud_task_attempts SET status = 'RUNNING', started_at = now() WHERE attempt_number = 2$$,
  'attempt 2 starts RUNNING');
SELECT throws_ok(
  $$INSERT INTO etl_craft.aud_task_attempts (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
    SELECT task_run_id, 3, 'QUEUED', now(), 'pgtap', 'HUMAN' FROM tr$$,
  '23505', 'duplicate key value violates unique constraint "ux_attempt_live"',
  'a new attempt of a task run whose attempt 2 is RUNNING is refused by ux_attempt_live');
SELECT lives_ok($$UPDATE etl_craft.aud_task_attempts SET status = 'LOST', ended_at = now() WHERE attempt_number = 2$$,
  'attempt 2 ends LOST');
-- ux_attempt_number: attempt numbers are unique per task run, ended or not.
SELECT throws_ok(
  $$INSERT INTO etl_craft.aud_task_attempts (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
    SELECT task_run_id, 1, 'QUEUED', now(), 'pgtap', 'HUMAN' FROM tr$$,
  '23505', 'duplicate key value violates unique constraint "ux_attempt_number"',
  'a second attempt numbered 1 of the same task run is refused by ux_attempt_number, though attempt 1 has ended');
SELECT lives_ok(
  $$INSERT INTO etl_craft.aud_task_attempts (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
    SELECT task_run_id, 3, 'QUEUED', now(), 'pgtap', 'HUMAN' FROM tr$$,
  'attempt 3 is accepted once attempts 1 and 2 have ended');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_task_attempts WHERE status IN ('QUEUED', 'CLAIMED', 'RUNNING')), 1,
  'the task run has exactly one live attempt after the refused inserts');

-- ux_task_run_per_run: one task run per task per run.
SELECT throws_ok(
  $$INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status)
    SELECT pipeline_run_id, task_id, 'IN-PROGRESS' FROM etl_craft.aud_task_run_log$$,
  '23505', 'duplicate key value violates unique constraint "ux_task_run_per_run"',
  'a second task run of extract in run manual:up1 is refused by ux_task_run_per_run');
SELECT lives_ok(
  $$INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status)
    SELECT r.pipeline_run_id, t.task_id, 'IN-PROGRESS' FROM etl_craft.aud_pipelines_run_log r, etl_craft.cfg_tasks t
     WHERE r.run_key = 'manual:down1' AND t.task_code = 'extract'$$,
  'a task run of extract in another run (manual:down1) is accepted');

-- ux_one_running_run: a pipeline has at most one IN-PROGRESS run (manual:down1 is IN-PROGRESS).
SELECT throws_ok(
  $$INSERT INTO etl_craft.aud_pipelines_run_log (pipeline_id, run_key, trigger_kind, run_date, status, queued_at,
       started_by, started_by_kind)
    SELECT pipeline_id, 'manual:down2', 'MANUAL', DATE '2026-01-02', 'IN-PROGRESS', now(), 'pgtap', 'HUMAN'
      FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'$$,
  '23505', 'duplicate key value violates unique constraint "ux_one_running_run"',
  'a second IN-PROGRESS run of down_pl is refused by ux_one_running_run');

-- ux_run_key: (PIPELINE_ID, RUN_KEY) names one run, whatever its status.
SELECT throws_ok(
  $$INSERT INTO etl_craft.aud_pipelines_run_log (pipeline_id, run_key, trigger_kind, run_date, status, queued_at,
       started_by, started_by_kind)
    SELECT pipeline_id, 'manual:up1', 'MANUAL', DATE '2026-01-02', 'QUEUED', now(), 'pgtap', 'HUMAN'
      FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'up_pl'$$,
  '23505', 'duplicate key value violates unique constraint "ux_run_key"',
  'a second run of up_pl with RUN_KEY manual:up1 is refused by ux_run_key');
SELECT lives_ok($$UPDATE etl_craft.aud_pipelines_run_log SET status = 'SUCCESS', end_date = now()
                   WHERE run_key = 'manual:up1'$$, 'run manual:up1 ends SUCCESS');
SELECT throws_ok(
  $$INSERT INTO etl_craft.aud_pipelines_run_log (pipeline_id, run_key, trigger_kind, run_date, status, queued_at,
       started_by, started_by_kind)
    SELECT pipeline_id, 'manual:up1', 'MANUAL', DATE '2026-01-02', 'QUEUED', now(), 'pgtap', 'HUMAN'
      FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'up_pl'$$,
  '23505', 'duplicate key value violates unique constraint "ux_run_key"',
  'a run of up_pl with RUN_KEY manual:up1 is still refused after that run has ended (ux_run_key is not partial)');
SELECT lives_ok(
  $$INSERT INTO etl_craft.aud_pipelines_run_log (pipeline_id, run_key, trigger_kind, run_date, status, queued_at,
       started_by, started_by_kind)
    SELECT pipeline_id, 'manual:up1', 'MANUAL', DATE '2026-01-02', 'QUEUED', now(), 'pgtap', 'HUMAN'
      FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'$$,
  'the same RUN_KEY manual:up1 in another pipeline (down_pl) is accepted');

-- ux_one_open_pause: one open pause (RESUMED_AT NULL) per pipeline.
SELECT throws_ok(
  $$INSERT INTO etl_craft.aud_pipeline_pauses (pipeline_id, paused_at, paused_by, paused_by_kind)
    SELECT pipeline_id, now(), 'pgtap', 'HUMAN' FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'up_pl'$$,
  '23505', 'duplicate key value violates unique constraint "ux_one_open_pause"',
  'a second open pause of up_pl is refused by ux_one_open_pause');
SELECT lives_ok(
  $$INSERT INTO etl_craft.aud_pipeline_pauses (pipeline_id, paused_at, paused_by, paused_by_kind, resumed_at, resumed_by,
       resumed_by_kind)
    SELECT pipeline_id, now(), 'pgtap', 'HUMAN', now(), 'pgtap', 'HUMAN'
      FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'up_pl'$$,
  'a closed (resumed) pause of up_pl is accepted next to its open one');
SELECT lives_ok(
  $$INSERT INTO etl_craft.aud_pipeline_pauses (pipeline_id, paused_at, paused_by, paused_by_kind)
    SELECT pipeline_id, now(), 'pgtap', 'HUMAN' FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'$$,
  'an open pause of another pipeline (down_pl) is accepted');
SELECT lives_ok(
  $$UPDATE etl_craft.aud_pipeline_pauses SET resumed_at = now(), resumed_by = 'pgtap', resumed_by_kind = 'HUMAN'
     WHERE resumed_at IS NULL AND pipeline_id = (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'up_pl')$$,
  'the open pause of up_pl is resumed');
SELECT lives_ok(
  $$INSERT INTO etl_craft.aud_pipeline_pauses (pipeline_id, paused_at, paused_by, paused_by_kind)
    SELECT pipeline_id, now(), 'pgtap', 'HUMAN' FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'up_pl'$$,
  'once resumed, up_pl can be paused again');

-- ux_consumption_once: a downstream run consumes one upstream revision once per dependency.
SELECT throws_ok(
  $$INSERT INTO etl_craft.aud_dependency_consumption
      (pipeline_run_id, pipeline_dependency_id, consumed_pipeline_run_id, consumed_revision, consumed_at)
    SELECT pipeline_run_id, pipeline_dependency_id, consumed_pipeline_run_id, consumed_revision, now()
      FROM etl_craft.aud_dependency_consumption$$,
  '23505', 'duplicate key value violates unique constraint "ux_consumption_once"',
  'consuming the same upstream run and revision again for the same dependency is refused by ux_consumption_once');
SELECT lives_ok(
  $$INSERT INTO etl_craft.aud_dependency_consumption
      (pipeline_run_id, pipeline_dependency_id, consumed_pipeline_run_id, consumed_revision, consumed_at)
    SELECT pipeline_run_id, pipeline_dependency_id, consumed_pipeline_run_id, consumed_revision + 1, now()
      FROM etl_craft.aud_dependency_consumption$$,
  'consuming the next revision of the same upstream run is accepted');
SELECT lives_ok(
  $$INSERT INTO etl_craft.aud_dependency_consumption
      (pipeline_run_id, task_dependency_id, consumed_pipeline_run_id, consumed_revision, consumed_at)
    SELECT c.pipeline_run_id, d.task_dependency_id, c.consumed_pipeline_run_id, 1, now()
      FROM etl_craft.aud_dependency_consumption c, etl_craft.cfg_task_dependency d WHERE c.consumed_revision = 1$$,
  'consuming the same upstream run and revision through a task dependency is accepted');
SELECT throws_ok(
  $$INSERT INTO etl_craft.aud_dependency_consumption
      (pipeline_run_id, task_dependency_id, consumed_pipeline_run_id, consumed_revision, consumed_at)
    SELECT c.pipeline_run_id, d.task_dependency_id, c.consumed_pipeline_run_id, 1, now()
      FROM etl_craft.aud_dependency_consumption c, etl_craft.cfg_task_dependency d WHERE c.task_dependency_id IS NOT NULL$$,
  '23505', 'duplicate key value violates unique constraint "ux_consumption_once"',
  'consuming it twice through the same task dependency is refused by ux_consumption_once (NULL ids compare equal)');

-- ux_gate_wait_open: one open wait (ENDED_AT NULL) per run and task, the run's pipeline gate (TASK_ID NULL) included.
SELECT lives_ok(
  $$INSERT INTO etl_craft.aud_gate_waits (pipeline_run_id, task_id, first_check_at, last_check_at, next_check_at,
       wait_until, looks, waiting_for)
    SELECT r.pipeline_run_id, t.task_id, now(), now(), now() + interval '1 minute', now() + interval '1 hour', 1, 'pgtap'
      FROM etl_craft.aud_pipelines_run_log r, etl_craft.cfg_tasks t WHERE r.run_key = 'manual:down1' AND t.task_code = 'load'$$,
  'an open gate wait of task load in run manual:down1 is accepted');
SELECT throws_ok(
  $$INSERT INTO etl_craft.aud_gate_waits (pipeline_run_id, task_id, first_check_at, last_check_at, next_check_at,
       wait_until, looks, waiting_for)
    SELECT pipeline_run_id, task_id, now(), now(), now() + interval '1 minute', now() + interval '1 hour', 1, 'pgtap'
      FROM etl_craft.aud_gate_waits$$,
  '23505', 'duplicate key value violates unique constraint "ux_gate_wait_open"',
  'a second open gate wait of the same run and task is refused by ux_gate_wait_open');
SELECT lives_ok(
  $$INSERT INTO etl_craft.aud_gate_waits (pipeline_run_id, task_id, first_check_at, last_check_at, wait_until, looks,
       waiting_for, outcome, ended_at)
    SELECT pipeline_run_id, task_id, now(), now(), now() + interval '1 hour', 2, 'pgtap', 'UNSATISFIED', now()
      FROM etl_craft.aud_gate_waits$$,
  'an ended gate wait of the same run and task is accepted next to its open one');
SELECT lives_ok(
  $$INSERT INTO etl_craft.aud_gate_waits (pipeline_run_id, first_check_at, last_check_at, next_check_at, wait_until,
       looks, waiting_for)
    SELECT pipeline_run_id, now(), now(), now() + interval '1 minute', now() + interval '1 hour', 1, 'pgtap'
      FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'$$,
  'an open wait of the pipeline gate of run manual:down1 (TASK_ID NULL) is accepted next to its task''s');
SELECT throws_ok(
  $$INSERT INTO etl_craft.aud_gate_waits (pipeline_run_id, first_check_at, last_check_at, next_check_at, wait_until,
       looks, waiting_for)
    SELECT pipeline_run_id, now(), now(), now() + interval '1 minute', now() + interval '1 hour', 1, 'pgtap'
      FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'$$,
  '23505', 'duplicate key value violates unique constraint "ux_gate_wait_open"',
  'a second open pipeline-gate wait of the run is refused by ux_gate_wait_open (a NULL TASK_ID compares equal)');

-- ux_eng_transitions: one row per (ENTITY, FROM_STATUS, TO_STATUS), a NULL FROM_STATUS included (written under
-- etl-craft migrate's lock, as only migrate writes ENG_TRANSITIONS).
SELECT etl_test.as_migrate();
SELECT throws_ok(
  $$INSERT INTO etl_craft.eng_transitions VALUES ('RUN', 'AUD_PIPELINES_RUN_LOG', NULL, 'QUEUED')$$,
  '23505', 'duplicate key value violates unique constraint "ux_eng_transitions"',
  'a second initial (FROM_STATUS NULL) RUN -> QUEUED transition is refused by ux_eng_transitions');
SELECT throws_ok(
  $$INSERT INTO etl_craft.eng_transitions VALUES ('RUN', 'AUD_PIPELINES_RUN_LOG', 'QUEUED', 'IN-PROGRESS')$$,
  '23505', 'duplicate key value violates unique constraint "ux_eng_transitions"',
  'a second RUN QUEUED -> IN-PROGRESS transition is refused by ux_eng_transitions');
SELECT lives_ok(
  $$INSERT INTO etl_craft.eng_transitions VALUES ('RUN', 'AUD_PIPELINES_RUN_LOG', NULL, 'SUCCESS')$$,
  'an initial RUN -> SUCCESS transition, not yet listed, is accepted by ux_eng_transitions');

-- ux_rule_flags_active: one open flag (ACTIVE_FLAG Y) per rule and key; closed flags are history and may repeat it.
-- Two rules of extract; FLAG_OF gives the run, task run and attempt a flag names (the seed's first attempt).
INSERT INTO etl_craft.cfg_business_rules (task_id, rule_code, rule_type, key_column, rule_sql)
SELECT t.task_id, c.code, 'REJECT', 'id', 'amount > 0'
  FROM etl_craft.cfg_tasks t, unnest(ARRAY['amount_positive', 'date_known']) AS c(code)
 WHERE t.task_code = 'extract' AND t.active_flag = 'Y';
CREATE TEMP VIEW flag_of AS
SELECT t.pipeline_run_id, x.task_run_id, x.attempt_id
  FROM etl_craft.aud_task_attempts x JOIN etl_craft.aud_task_run_log t USING (task_run_id)
 WHERE x.attempt_id = (SELECT min(attempt_id) FROM etl_craft.aud_task_attempts);
SELECT lives_ok(
  $$INSERT INTO etl_craft.aud_business_rule_flags
      (business_rule_id, business_rule_key, start_date, pipeline_run_id, task_run_id, attempt_id)
    SELECT r.business_rule_id, '42', now(), f.pipeline_run_id, f.task_run_id, f.attempt_id
      FROM etl_craft.cfg_business_rules r, flag_of f WHERE r.rule_code = 'amount_positive'$$,
  'an open flag of rule amount_positive for key 42 is accepted');
SELECT throws_ok(
  $$INSERT INTO etl_craft.aud_business_rule_flags
      (business_rule_id, business_rule_key, start_date, pipeline_run_id, task_run_id, attempt_id)
    SELECT r.business_rule_id, '42', now(), f.pipeline_run_id, f.task_run_id, f.attempt_id
      FROM etl_craft.cfg_business_rules r, flag_of f WHERE r.rule_code = 'amount_positive'$$,
  '23505', 'duplicate key value violates unique constraint "ux_rule_flags_active"',
  'a second open flag of the same rule and key is refused by ux_rule_flags_active');
SELECT lives_ok(
  $$INSERT INTO etl_craft.aud_business_rule_flags
      (business_rule_id, business_rule_key, start_date, pipeline_run_id, task_run_id, attempt_id)
    SELECT r.business_rule_id, '42', now(), f.pipeline_run_id, f.task_run_id, f.attempt_id
      FROM etl_craft.cfg_business_rules r, flag_of f WHERE r.rule_code = 'date_known'$$,
  'an open flag of the same key for another rule (date_known) is accepted');
SELECT lives_ok(
  $$UPDATE etl_craft.aud_business_rule_flags SET active_flag = 'N', end_date = now(), cleared_by_attempt_id = attempt_id
     WHERE business_rule_key = '42' AND business_rule_id = (SELECT business_rule_id FROM etl_craft.cfg_business_rules
                                                             WHERE rule_code = 'amount_positive')$$,
  'the open flag of amount_positive for key 42 is closed');
SELECT lives_ok(
  $$INSERT INTO etl_craft.aud_business_rule_flags
      (business_rule_id, business_rule_key, start_date, pipeline_run_id, task_run_id, attempt_id)
    SELECT r.business_rule_id, '42', now(), f.pipeline_run_id, f.task_run_id, f.attempt_id
      FROM etl_craft.cfg_business_rules r, flag_of f WHERE r.rule_code = 'amount_positive'$$,
  'once closed, key 42 breaking amount_positive again opens a new flag next to the closed one');

-- ux_*_active: a code (or an edge) is unique among active rows; switched-off rows may repeat it.
CREATE TEMP TABLE dup_cases (idx name, what text, active_dup text, inactive_dup text) ON COMMIT DROP;
INSERT INTO dup_cases VALUES
  ('ux_projects_code_active', 'project tp',
   $$INSERT INTO etl_craft.cfg_projects (project_code, active_flag) VALUES ('tp', 'Y')$$,
   $$INSERT INTO etl_craft.cfg_projects (project_code, active_flag) VALUES ('tp', 'N')$$),
  ('ux_pools_name_active', 'pool tpool',
   $$INSERT INTO etl_craft.cfg_pools (pool_name, active_flag) VALUES ('tpool', 'Y')$$,
   $$INSERT INTO etl_craft.cfg_pools (pool_name, active_flag) VALUES ('tpool', 'N')$$),
  ('ux_pipelines_code_active', 'pipeline up_pl of project tp',
   $$INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code, active_flag)
     SELECT project_id, 'up_pl', 'Y' FROM etl_craft.cfg_projects WHERE project_code = 'tp' AND active_flag = 'Y'$$,
   $$INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code, active_flag)
     SELECT project_id, 'up_pl', 'N' FROM etl_craft.cfg_projects WHERE project_code = 'tp' AND active_flag = 'Y'$$),
  ('ux_tasks_code_active', 'task extract of up_pl',
   $$INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, script_file, active_flag)
     SELECT pipeline_id, 'extract', 'PYTHON', 'x.py', 'Y' FROM etl_craft.cfg_pipelines
      WHERE pipeline_code = 'up_pl' AND active_flag = 'Y'$$,
   $$INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, script_file, active_flag)
     SELECT pipeline_id, 'extract', 'PYTHON', 'x.py', 'N' FROM etl_craft.cfg_pipelines
      WHERE pipeline_code = 'up_pl' AND active_flag = 'Y'$$),
  ('ux_task_parameters_active', 'parameter MERGE_KEY of extract',
   $$INSERT INTO etl_craft.cfg_task_parameters (task_id, parameter_name, parameter_value, active_flag)
     SELECT task_id, 'MERGE_KEY', 'id2', 'Y' FROM etl_craft.cfg_task_parameters WHERE active_flag = 'Y'$$,
   $$INSERT INTO etl_craft.cfg_task_parameters (task_id, parameter_name, parameter_value, active_flag)
     SELECT task_id, 'MERGE_KEY', 'id2', 'N' FROM etl_craft.cfg_task_parameters WHERE active_flag = 'Y'$$),
  ('ux_pipeline_dependency_active', 'edge down_pl -> up_pl',
   $$INSERT INTO etl_craft.cfg_pipeline_dependency (pipeline_id, depends_on_pipeline_id, dependency_type, active_flag)
     SELECT pipeline_id, depends_on_pipeline_id, 'ALWAYS', 'Y' FROM etl_craft.cfg_pipeline_dependency
      WHERE active_flag = 'Y'$$,
   $$INSERT INTO etl_craft.cfg_pipeline_dependency (pipeline_id, depends_on_pipeline_id, dependency_type, active_flag)
     SELECT pipeline_id, depends_on_pipeline_id, 'ALWAYS', 'N' FROM etl_craft.cfg_pipeline_dependency
      WHERE active_flag = 'Y'$$),
  ('ux_task_dependency_active', 'edge load -> extract',
   $$INSERT INTO etl_craft.cfg_task_dependency (task_id, depends_on_task_id, dependency_type, active_flag)
     SELECT task_id, depends_on_task_id, 'ALWAYS', 'Y' FROM etl_craft.cfg_task_dependency WHERE active_flag = 'Y'$$,
   $$INSERT INTO etl_craft.cfg_task_dependency (task_id, depends_on_task_id, dependency_type, active_flag)
     SELECT task_id, depends_on_task_id, 'ALWAYS', 'N' FROM etl_craft.cfg_task_dependency WHERE active_flag = 'Y'$$),
  ('ux_business_rules_code_active', 'rule amount_positive of extract',
   $$INSERT INTO etl_craft.cfg_business_rules (task_id, rule_code, rule_type, key_column, rule_sql, active_flag)
     SELECT task_id, rule_code, 'WARN', 'id', 'amount >= 0', 'Y' FROM etl_craft.cfg_business_rules
      WHERE rule_code = 'amount_positive' AND active_flag = 'Y'$$,
   $$INSERT INTO etl_craft.cfg_business_rules (task_id, rule_code, rule_type, key_column, rule_sql, active_flag)
     SELECT task_id, rule_code, 'WARN', 'id', 'amount >= 0', 'N' FROM etl_craft.cfg_business_rules
      WHERE rule_code = 'amount_positive' AND active_flag = 'Y'$$);

SELECT throws_ok(active_dup, '23505', format('duplicate key value violates unique constraint "%s"', idx),
  format('a second active %s is refused by %s', what, idx))
  FROM dup_cases ORDER BY idx;
SELECT lives_ok(inactive_dup, format('a switched-off (ACTIVE_FLAG N) copy of %s is accepted by %s', what, idx))
  FROM dup_cases ORDER BY idx;
-- Switching the original off frees the code for a new active row.
SELECT lives_ok($$UPDATE etl_craft.cfg_pools SET active_flag = 'N' WHERE pool_name = 'tpool'$$,
  'pool tpool is switched off');
SELECT lives_ok($$INSERT INTO etl_craft.cfg_pools (pool_name) VALUES ('tpool')$$,
  'a new active pool tpool is accepted once the old one is switched off');
SELECT throws_ok($$UPDATE etl_craft.cfg_pools SET active_flag = 'Y' WHERE active_flag = 'N'$$,
  '23505', 'duplicate key value violates unique constraint "ux_pools_name_active"',
  'switching an old tpool back on while another tpool is active is refused by ux_pools_name_active');

SELECT * FROM finish();
ROLLBACK;
