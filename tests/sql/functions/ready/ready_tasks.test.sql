-- Proves ready_tasks: a diamond (a -> b, a -> c, b and c -> d) is walked in dependency order; each edge type is met
-- or can never be met by its upstream's status (HAS_DATA by rows written, B42); ALL and ANY decide as documented; an
-- engine skip runs again once it qualifies (B25) while an operator's skip stands; nothing is ready in a run that is
-- not IN-PROGRESS, is being cancelled, or whose pipeline is paused; an unknown run is not found (EC021); it needs no
-- actor and writes nothing.
-- A pipeline has at most one IN-PROGRESS run: each run of rp_pl (r1, r2, ...) is ended (etl_test.ready_end) before
-- the next one starts.
BEGIN;
SELECT etl_test.serialize();
SELECT plan(20);

SELECT etl_test.act();
SELECT etl_test.ready_seed();
CREATE TEMP TABLE ids ON COMMIT DROP AS SELECT etl_test.ready_run('manual:r1') AS r1;
CREATE TEMP VIEW ready_r1 AS SELECT task_code, decision, reason FROM etl_craft.ready_tasks((SELECT r1 FROM ids));
-- set_status(run key, task code, status): create or move the task run (the transition guard allows every move used).
CREATE FUNCTION pg_temp.set_status(p_key text, p_code text, p_status text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE etl_craft.aud_task_run_log SET status = p_status
   WHERE pipeline_run_id = etl_test.ready_run(p_key) AND task_id = etl_test.ready_task(p_code);
  IF NOT FOUND THEN
    PERFORM etl_test.ready_task_run(p_key, p_code, p_status);
  END IF;
END
$$;

-- 2: a read: called without an actor (no etl-craft marker), it answers, and it wrote nothing.
SELECT etl_test.unmark();
CREATE TEMP TABLE before_read ON COMMIT DROP AS
SELECT (SELECT count(*) FROM etl_craft.aud_task_run_log) + (SELECT count(*) FROM etl_craft.aud_run_interventions)
       + (SELECT count(*) FROM etl_craft.aud_metadata_changes) AS n;
SELECT results_eq('SELECT * FROM ready_r1', $$VALUES ('a'::text, 'RUN'::text, 'no dependencies'::text)$$,
  'without an actor it answers: in a new run of the diamond only a is ready (RUN, no dependencies)');
SELECT is((SELECT count(*) FROM etl_craft.aud_task_run_log) + (SELECT count(*) FROM etl_craft.aud_run_interventions)
          + (SELECT count(*) FROM etl_craft.aud_metadata_changes), (SELECT n FROM before_read),
  'ready_tasks wrote nothing');
SELECT etl_test.act();

-- 4: the diamond's walk.
SELECT pg_temp.set_status('manual:r1', 'a', 'IN-PROGRESS');
SELECT is_empty('SELECT * FROM ready_r1', 'while a runs, nothing else is ready');
SELECT pg_temp.set_status('manual:r1', 'a', 'SUCCESS');
SELECT results_eq('SELECT * FROM ready_r1',
  $$VALUES ('b'::text, 'RUN'::text, 'dependencies met'::text), ('c', 'RUN', 'dependencies met')$$,
  'once a succeeded, b and c are ready, in task code order');
SELECT pg_temp.set_status('manual:r1', 'b', 'SUCCESS');
SELECT pg_temp.set_status('manual:r1', 'c', 'IN-PROGRESS');
SELECT is_empty('SELECT * FROM ready_r1', 'd waits for c while c runs');
SELECT pg_temp.set_status('manual:r1', 'c', 'SUCCESS');
SELECT results_eq('SELECT * FROM ready_r1', $$VALUES ('d'::text, 'RUN'::text, 'dependencies met'::text)$$,
  'once b and c succeeded, d is ready');

-- 3: edge types. b depends on a by FAILURE, c on a by HAS_DATA, d on b and c by ALWAYS.
SELECT etl_test.ready_end('manual:r1');
UPDATE etl_craft.cfg_task_dependency SET dependency_type = CASE task_id
    WHEN etl_test.ready_task('b') THEN 'FAILURE' WHEN etl_test.ready_task('c') THEN 'HAS_DATA' ELSE 'ALWAYS' END;
SELECT pg_temp.set_status('manual:r2', 'a', 'FAILED');
SELECT results_eq(
  $$SELECT task_code, decision, reason FROM etl_craft.ready_tasks(etl_test.ready_run('manual:r2'))$$,
  $$VALUES ('b'::text, 'RUN'::text, 'dependencies met'::text),
           ('c', 'SKIP', 'a ended FAILED; its HAS_DATA dependency can never be met')$$,
  'a FAILED: its FAILURE dependent runs, its HAS_DATA dependent can never run');
SELECT pg_temp.set_status('manual:r2', 'b', 'FAILED');
SELECT pg_temp.set_status('manual:r2', 'c', 'SKIPPED');
SELECT results_eq(
  $$SELECT task_code, decision FROM etl_craft.ready_tasks(etl_test.ready_run('manual:r2'))$$,
  $$VALUES ('d'::text, 'RUN'::text)$$,
  'ALWAYS edges are met by any settled upstream (b FAILED, c SKIPPED); c''s engine skip is not returned again');
-- r3 (a wrote 0 rows) and r4 (a wrote 5) run one after the other; each one's ready set is kept in has_data.
SELECT etl_test.ready_end('manual:r2');
CREATE TEMP TABLE has_data (run_key text, task_code text, decision text, reason text) ON COMMIT DROP;
DO $$ BEGIN
  PERFORM etl_test.ready_task_run('manual:r3', 'a', 'SUCCESS', 0);
  INSERT INTO has_data SELECT 'manual:r3', task_code, decision, reason
    FROM etl_craft.ready_tasks(etl_test.ready_run('manual:r3'));
  PERFORM etl_test.ready_end('manual:r3');
  PERFORM etl_test.ready_task_run('manual:r4', 'a', 'SUCCESS', 5);
  INSERT INTO has_data SELECT 'manual:r4', task_code, decision, reason
    FROM etl_craft.ready_tasks(etl_test.ready_run('manual:r4'));
  PERFORM etl_test.ready_end('manual:r4');
END $$;
SELECT results_eq(
  'SELECT run_key, task_code, decision, reason FROM has_data ORDER BY run_key, task_code',
  $$VALUES ('manual:r3'::text, 'b'::text, 'SKIP'::text, 'a ended SUCCESS; its FAILURE dependency can never be met'::text),
           ('manual:r3', 'c', 'SKIP', 'a ended SUCCESS having written 0 rows; its HAS_DATA dependency can never be met'),
           ('manual:r4', 'b', 'SKIP', 'a ended SUCCESS; its FAILURE dependency can never be met'),
           ('manual:r4', 'c', 'RUN', 'dependencies met')$$,
  'B42: HAS_DATA is met by a SUCCESS that wrote rows (5), not by one that wrote none (0)');

-- 3: ALL and ANY. Back to SUCCESS edges; d (ALL) and, in run r5/r6, d as ANY.
UPDATE etl_craft.cfg_task_dependency SET dependency_type = 'SUCCESS';
SELECT pg_temp.set_status('manual:r5', 'a', 'SUCCESS');
SELECT pg_temp.set_status('manual:r5', 'b', 'SUCCESS');
SELECT pg_temp.set_status('manual:r5', 'c', 'IN-PROGRESS');
SELECT is_empty($$SELECT * FROM etl_craft.ready_tasks(etl_test.ready_run('manual:r5'))$$,
  'ALL: d waits while one of its edges is not settled');
UPDATE etl_craft.cfg_tasks SET run_condition = 'ANY' WHERE task_id = etl_test.ready_task('d');
SELECT results_eq($$SELECT task_code, decision FROM etl_craft.ready_tasks(etl_test.ready_run('manual:r5'))$$,
  $$VALUES ('d'::text, 'RUN'::text)$$, 'ANY: d runs as soon as one edge (b) is met');
SELECT etl_test.ready_end('manual:r5');
SELECT pg_temp.set_status('manual:r6', 'a', 'SUCCESS');
SELECT pg_temp.set_status('manual:r6', 'b', 'FAILED');
SELECT pg_temp.set_status('manual:r6', 'c', 'CANCELLED');
SELECT results_eq($$SELECT task_code, decision, reason FROM etl_craft.ready_tasks(etl_test.ready_run('manual:r6'))$$,
  $$VALUES ('d'::text, 'SKIP'::text,
            'b ended FAILED; its SUCCESS dependency can never be met, nor can the other 1 of this ANY task'::text)$$,
  'ANY: d is skipped when every edge is settled and none is met, naming the first');
UPDATE etl_craft.cfg_tasks SET run_condition = 'ALL' WHERE task_id = etl_test.ready_task('d');

-- 3: B25 and operator skips: in r7 a FAILED, b and c skipped (b by the engine, c by an operator); a is marked
-- SUCCESS: b runs again, c stays skipped.
SELECT etl_test.ready_end('manual:r6');
SELECT pg_temp.set_status('manual:r7', 'a', 'FAILED');
SELECT results_eq($$SELECT task_code, decision FROM etl_craft.ready_tasks(etl_test.ready_run('manual:r7'))$$,
  $$VALUES ('b'::text, 'SKIP'::text), ('c', 'SKIP')$$, 'a FAILED: b and c can never run');
DO $$ BEGIN
  PERFORM etl_craft.skip_task_run(etl_test.ready_run('manual:r7'), etl_test.ready_task('b'), 'a failed',
                                  p_actor => 'etl-craft', p_actor_kind => 'SYSTEM');
  PERFORM etl_craft.skip_task_run(etl_test.ready_run('manual:r7'), etl_test.ready_task('c'), 'not today', true,
                                  p_actor => 'ops@host');
END $$;
SELECT results_eq($$SELECT task_code, decision, reason FROM etl_craft.ready_tasks(etl_test.ready_run('manual:r7'))$$,
  $$VALUES ('d'::text, 'SKIP'::text, 'b ended SKIPPED; its SUCCESS dependency can never be met'::text)$$,
  'b and c skipped are not returned again; d, downstream of both, can now never run either');
DO $$ BEGIN
  PERFORM etl_craft.skip_task_run(etl_test.ready_run('manual:r7'), etl_test.ready_task('d'), 'b skipped',
                                  p_actor => 'etl-craft', p_actor_kind => 'SYSTEM');
END $$;
SELECT pg_temp.set_status('manual:r7', 'a', 'SUCCESS');
SELECT results_eq($$SELECT task_code, decision FROM etl_craft.ready_tasks(etl_test.ready_run('manual:r7'))$$,
  $$VALUES ('b'::text, 'RUN'::text)$$,
  'B25: once a succeeded, the engine-skipped b runs again; the operator-skipped c stays skipped; d waits for b');

-- 5: nothing is ready in a paused pipeline, a QUEUED or ended run, or a run being cancelled; unknown runs raise.
-- r7 ends FAILED first, so that the new run can start.
SELECT etl_test.ready_end('manual:r7', 'FAILED');
INSERT INTO etl_craft.aud_pipeline_pauses (pipeline_id, paused_at, paused_by, paused_by_kind)
  SELECT pipeline_id, now(), 'pgtap@test', 'HUMAN' FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'rp_pl';
SELECT is_empty($$SELECT * FROM etl_craft.ready_tasks(etl_test.ready_run('manual:new'))$$,
  'a paused pipeline has nothing ready');
UPDATE etl_craft.aud_pipeline_pauses SET resumed_at = now(), resumed_by = 'pgtap@test', resumed_by_kind = 'HUMAN';
SELECT is_empty($$SELECT * FROM etl_craft.ready_tasks(etl_test.ready_run('manual:queued', 'QUEUED'))$$,
  'a QUEUED run has nothing ready');
UPDATE etl_craft.aud_pipelines_run_log SET cancel_requested_at = now() WHERE run_key = 'manual:new';
SELECT is_empty($$SELECT * FROM etl_craft.ready_tasks(etl_test.ready_run('manual:new'))$$,
  'a run being cancelled has nothing ready');
SELECT is_empty($$SELECT * FROM etl_craft.ready_tasks(etl_test.ready_run('manual:r7'))$$,
  'an ended run has nothing ready');
SELECT etl_test.refused('SELECT * FROM etl_craft.ready_tasks(-1)', 'EC021', 'run -1 does not exist; %',
  'an unknown run is not found (EC021)');

SELECT * FROM finish();
ROLLBACK;
