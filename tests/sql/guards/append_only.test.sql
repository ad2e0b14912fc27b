-- Proves history stays written: the append-only AUD_ tables refuse UPDATE, DELETE and TRUNCATE even with the marker
-- (EC002, naming the row) yet accept new rows, no owned table can be TRUNCATEd, and AUD_TASK_ATTEMPTS refuses DELETE
-- always and UPDATE once an attempt has ended (every terminal status), while a live attempt may still be updated.
-- AUD_GATE_WAITS is engine-owned but not append-only: the gate updates its open wait at every look and closes it.
BEGIN;
SELECT etl_test.serialize();
SET LOCAL client_min_messages = warning;  -- TRUNCATE ... CASCADE notices
SELECT plan(77);

SELECT etl_test.act();
SELECT etl_test.seed();

-- The append-only tables, their key, their oldest row (each UPDATE and DELETE aims at it, so the message can name
-- it) and a change the engine might be tempted to make to it.
CREATE TEMP TABLE append_only (tbl text, pk text, id bigint, change text) ON COMMIT DROP;
INSERT INTO append_only VALUES
  ('AUD_RUN_INTERVENTIONS', 'INTERVENTION_ID', (SELECT min(intervention_id) FROM etl_craft.aud_run_interventions),
   $$reason = 'rewritten'$$),
  ('AUD_ACTIONS', 'ACTION_ID', (SELECT min(action_id) FROM etl_craft.aud_actions),
   'ended_at = now(), exit_code = 0'),
  ('AUD_METADATA_CHANGES', 'CHANGE_ID', (SELECT min(change_id) FROM etl_craft.aud_metadata_changes),
   $$actor = 'someone@else'$$),
  ('AUD_DEPENDENCY_CONSUMPTION', 'CONSUMPTION_ID', (SELECT min(consumption_id) FROM etl_craft.aud_dependency_consumption),
   'consumed_revision = 2'),
  ('AUD_GATE_DECISIONS', 'DECISION_ID', (SELECT min(decision_id) FROM etl_craft.aud_gate_decisions),
   $$result = 'BYPASSED'$$);

-- 1: exactly these tables carry the append-only TRUNCATE trigger (AUD_TASK_ATTEMPTS has only row rules, below).
SELECT set_eq(
  $$SELECT upper(c.relname)::text FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'etl_craft' AND g.tgname = '_020_append_only_truncate'$$,
  'SELECT tbl FROM append_only',
  'exactly AUD_RUN_INTERVENTIONS, AUD_ACTIONS, AUD_METADATA_CHANGES, AUD_DEPENDENCY_CONSUMPTION and AUD_GATE_DECISIONS carry _020_append_only_truncate');

CREATE TEMP VIEW refusals AS
SELECT a.tbl, o.op, o.n,
       CASE o.op
         WHEN 'UPDATE' THEN format('UPDATE etl_craft.%I SET %s WHERE %I = %s', lower(a.tbl), a.change, lower(a.pk), a.id)
         WHEN 'DELETE' THEN format('DELETE FROM etl_craft.%I WHERE %I = %s', lower(a.tbl), lower(a.pk), a.id)
         -- CASCADE: AUD_DEPENDENCY_CONSUMPTION references AUD_GATE_DECISIONS.
         ELSE format('TRUNCATE etl_craft.%I CASCADE', lower(a.tbl))
       END AS stmt,
       CASE WHEN o.op = 'TRUNCATE' THEN format('TRUNCATE of %s %%refused%%', a.tbl)
            ELSE format('%s of %s %s=%s refused: _%%', o.op, a.tbl, a.pk, a.id) END AS pattern
  FROM append_only a
  CROSS JOIN (VALUES (1, 'UPDATE'), (2, 'DELETE'), (3, 'TRUNCATE')) AS o(n, op);

-- 15: with the marker, UPDATE, DELETE and TRUNCATE of each append-only table are refused with EC002.
SELECT etl_test.refused(stmt, 'EC002', pattern,
  format('%s of %s with the marker is refused (EC002, the message names the %s)', op, tbl,
         CASE WHEN op = 'TRUNCATE' THEN 'table' ELSE 'row' END))
  FROM refusals ORDER BY tbl, n;

-- 28: TRUNCATE removes rows without a row trigger, so no record; 090_guards refuses it on every owned table, even with
-- the marker (CASCADE: without it a referenced table fails its foreign key check before any trigger runs).
SELECT etl_test.refused(format('TRUNCATE etl_craft.%I CASCADE', lower(t)), 'EC002', format('TRUNCATE of %s %%refused%%', t),
  format('TRUNCATE of %s with the marker is refused (EC002)', t))
  FROM etl_test.owned_tables() t;

-- 5: append-only still means append: each accepts a new row.
SELECT lives_ok(stmt, format('INSERT on %s with the marker succeeds', tbl))
  FROM (VALUES
    ('AUD_RUN_INTERVENTIONS', $$INSERT INTO etl_craft.aud_run_interventions
        (pipeline_run_id, intervention, requested_by, requested_by_kind, requested_at)
      VALUES ((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'), 'CANCEL',
              'pgtap', 'HUMAN', now())$$),
    ('AUD_ACTIONS', $$INSERT INTO etl_craft.aud_actions (started_at, actor, actor_kind, command, arguments)
      VALUES (now(), 'pgtap', 'HUMAN', 'mark', '{}')$$),
    ('AUD_METADATA_CHANGES', $$INSERT INTO etl_craft.aud_metadata_changes
        (changed_at, actor, actor_kind, table_name, row_key, operation, after_json)
      VALUES (now(), 'pgtap', 'HUMAN', 'CFG_POOLS', 'POOL_ID=0', 'INSERT', '{}')$$),
    ('AUD_DEPENDENCY_CONSUMPTION', $$INSERT INTO etl_craft.aud_dependency_consumption
        (pipeline_run_id, pipeline_dependency_id, consumed_pipeline_run_id, consumed_revision, consumed_at)
      VALUES ((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'),
              (SELECT pipeline_dependency_id FROM etl_craft.cfg_pipeline_dependency),
              (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'), 2, now())$$),
    ('AUD_GATE_DECISIONS', $$INSERT INTO etl_craft.aud_gate_decisions
        (pipeline_run_id, pipeline_dependency_id, result, reason, decided_at, decided_by, decided_by_kind)
      VALUES ((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'),
              (SELECT pipeline_dependency_id FROM etl_craft.cfg_pipeline_dependency), 'UNSATISFIED', 'again', now(),
              'etl-craft', 'SYSTEM')$$)
  ) AS w(tbl, stmt) ORDER BY tbl;

-- 3: AUD_GATE_WAITS is mutable: no append-only trigger, and with the marker its open wait takes a new look and is
-- closed (its TRUNCATE is refused above, as every owned table's).
SELECT is((SELECT array_agg(g.tgname::text ORDER BY g.tgname) FROM pg_trigger g
            WHERE g.tgrelid = 'etl_craft.aud_gate_waits'::regclass AND NOT g.tgisinternal),
          ARRAY['_010_engine_only'],
          'AUD_GATE_WAITS carries only the engine-only trigger: no _020_append_only row or TRUNCATE trigger');
INSERT INTO etl_craft.aud_gate_waits (pipeline_run_id, task_id, first_check_at, last_check_at, next_check_at,
    wait_until, looks, waiting_for)
  SELECT r.pipeline_run_id, t.task_id, now(), now(), now() + interval '1 minute', now() + interval '1 hour', 1, 'pgtap'
    FROM etl_craft.aud_pipelines_run_log r, etl_craft.cfg_tasks t WHERE r.run_key = 'manual:down1' AND t.task_code = 'load';
SELECT lives_ok(
  $$UPDATE etl_craft.aud_gate_waits SET looks = looks + 1, last_check_at = now(),
       next_check_at = now() + interval '2 minutes'$$,
  'an open gate wait takes its next look with the marker (UPDATE of LOOKS, LAST_CHECK_AT, NEXT_CHECK_AT)');
SELECT lives_ok(
  $$UPDATE etl_craft.aud_gate_waits SET looks = looks + 1, outcome = 'SATISFIED', ended_at = now(), next_check_at = NULL$$,
  'an open gate wait is closed with the marker (OUTCOME, ENDED_AT set, NEXT_CHECK_AT cleared)');

-- Attempts. The seeded attempt 1 is QUEUED; a live attempt may change, a DELETE never passes.
CREATE TEMP VIEW a1 AS SELECT attempt_id FROM etl_craft.aud_task_attempts WHERE attempt_number = 1;

SELECT etl_test.refused($$DELETE FROM etl_craft.aud_task_attempts WHERE attempt_number = 1$$, 'EC002',
  format('DELETE of AUD_TASK_ATTEMPTS ATTEMPT_ID=%s refused: _%%', (SELECT attempt_id FROM a1)),
  'DELETE of a QUEUED attempt with the marker is refused (EC002, names the attempt)');
SELECT lives_ok($$UPDATE etl_craft.aud_task_attempts SET priority = 5, not_before = now() WHERE attempt_number = 1$$,
  'a QUEUED attempt may be updated (PRIORITY, NOT_BEFORE)');
SELECT lives_ok(
  $$UPDATE etl_craft.aud_task_attempts SET status = 'CLAIMED', owner_id = 'worker-1', claimed_at = now(),
       lease_expires_at = now() + interval '5 minutes' WHERE attempt_number = 1$$,
  'attempt 1 moves QUEUED -> CLAIMED with its OWNER_ID, CLAIMED_AT and lease');
SELECT lives_ok(
  $$UPDATE etl_craft.aud_task_attempts SET lease_expires_at = now() + interval '10 minutes', heartbeat_at = now()
     WHERE attempt_number = 1$$,
  'a CLAIMED attempt may be updated (lease renewal)');
SELECT lives_ok(
  $$UPDATE etl_craft.aud_task_attempts SET status = 'RUNNING', started_at = now(), host = 'h1', pid = 42
     WHERE attempt_number = 1$$,
  'attempt 1 moves CLAIMED -> RUNNING');
SELECT lives_ok(
  $$UPDATE etl_craft.aud_task_attempts SET heartbeat_at = now(), rows_written = 10, cancel_requested_at = now()
     WHERE attempt_number = 1$$,
  'a RUNNING attempt may be updated (heartbeat, counts, cancel request)');
SELECT lives_ok(
  $$UPDATE etl_craft.aud_task_attempts SET status = 'SUCCESS', ended_at = now(), exit_code = 0 WHERE attempt_number = 1$$,
  'attempt 1 moves RUNNING -> SUCCESS');
SELECT etl_test.refused($$UPDATE etl_craft.aud_task_attempts SET exit_code = 1 WHERE attempt_number = 1$$, 'EC002',
  format('UPDATE of AUD_TASK_ATTEMPTS ATTEMPT_ID=%s refused: _%%', (SELECT attempt_id FROM a1)),
  'UPDATE of an attempt that ended SUCCESS is refused (EC002, names the attempt)');
SELECT throws_ok($$UPDATE etl_craft.aud_task_attempts SET status = 'QUEUED', ended_at = NULL WHERE attempt_number = 1$$,
  'EC002', NULL, 'reviving an ended attempt (SUCCESS -> QUEUED) is refused as a change of a final row (EC002)');
SELECT throws_ok($$DELETE FROM etl_craft.aud_task_attempts WHERE attempt_number = 1$$, 'EC002', NULL,
  'DELETE of an ended attempt is refused (EC002)');

-- One more attempt ended in each other terminal status, through allowed transitions.
INSERT INTO etl_craft.aud_task_attempts (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
  SELECT task_run_id, 2, 'QUEUED', now(), 'pgtap', 'HUMAN' FROM etl_craft.aud_task_run_log;
UPDATE etl_craft.aud_task_attempts SET status = 'FAILED', ended_at = now(), error_message = 'setup' WHERE attempt_number = 2;
INSERT INTO etl_craft.aud_task_attempts (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
  SELECT task_run_id, 3, 'QUEUED', now(), 'pgtap', 'HUMAN' FROM etl_craft.aud_task_run_log;
UPDATE etl_craft.aud_task_attempts SET status = 'CLAIMED', owner_id = 'w', claimed_at = now(),
  lease_expires_at = now() WHERE attempt_number = 3;
UPDATE etl_craft.aud_task_attempts SET status = 'RUNNING', started_at = now() WHERE attempt_number = 3;
UPDATE etl_craft.aud_task_attempts SET status = 'TIMED_OUT', ended_at = now() WHERE attempt_number = 3;
INSERT INTO etl_craft.aud_task_attempts (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
  SELECT task_run_id, 4, 'QUEUED', now(), 'pgtap', 'HUMAN' FROM etl_craft.aud_task_run_log;
UPDATE etl_craft.aud_task_attempts SET status = 'CANCELLED', ended_at = now() WHERE attempt_number = 4;
INSERT INTO etl_craft.aud_task_attempts (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
  SELECT task_run_id, 5, 'QUEUED', now(), 'pgtap', 'HUMAN' FROM etl_craft.aud_task_run_log;
UPDATE etl_craft.aud_task_attempts SET status = 'CLAIMED', owner_id = 'w', claimed_at = now(),
  lease_expires_at = now() WHERE attempt_number = 5;
UPDATE etl_craft.aud_task_attempts SET status = 'LOST', ended_at = now() WHERE attempt_number = 5;

-- 1: the ended attempts cover every terminal ATTEMPT status of ENG_STATUSES.
SELECT set_eq('SELECT status FROM etl_craft.aud_task_attempts',
  $$SELECT status FROM etl_craft.eng_statuses WHERE entity = 'ATTEMPT' AND is_terminal = 'Y'$$,
  'the five ended attempts are in SUCCESS, FAILED, TIMED_OUT, CANCELLED and LOST: every terminal ATTEMPT status');

-- 5 + 5: an ended attempt, whatever its terminal status, refuses UPDATE and DELETE.
SELECT etl_test.refused(format('UPDATE etl_craft.aud_task_attempts SET task_log = %L WHERE attempt_id = %s', 'late', attempt_id),
  'EC002', format('UPDATE of AUD_TASK_ATTEMPTS ATTEMPT_ID=%s refused: _%%', attempt_id),
  format('UPDATE of an attempt that ended %s is refused (EC002)', status))
  FROM etl_craft.aud_task_attempts ORDER BY attempt_number;
SELECT etl_test.refused(format('DELETE FROM etl_craft.aud_task_attempts WHERE attempt_id = %s', attempt_id), 'EC002',
  format('DELETE of AUD_TASK_ATTEMPTS ATTEMPT_ID=%s refused: _%%', attempt_id),
  format('DELETE of an attempt that ended %s is refused (EC002)', status))
  FROM etl_craft.aud_task_attempts ORDER BY attempt_number;

SELECT * FROM finish();
ROLLBACK;
