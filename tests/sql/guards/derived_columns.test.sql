-- Proves an attempt's PIPELINE_RUN_ID is its task run's (migration 0009, trigger _050_run_of_task_run), whatever
-- the insert gave: the claim with run_id and `etl-craft run`'s queue listing read the run's queue through it.
BEGIN;
SELECT etl_test.serialize();
SELECT plan(4);

SELECT etl_test.act();
SELECT etl_test.seed();
INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status)
  VALUES ((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'),
          (SELECT task_id FROM etl_craft.cfg_tasks WHERE task_code = 'load'), 'IN-PROGRESS');

-- 1: the seed's attempt, inserted without PIPELINE_RUN_ID, carries the run of its task run.
SELECT is((SELECT a.pipeline_run_id FROM etl_craft.aud_task_attempts a),
  (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
  'an attempt inserted without PIPELINE_RUN_ID gets its task run''s run');

-- 1: a PIPELINE_RUN_ID given by the insert is replaced by the task run's.
INSERT INTO etl_craft.aud_task_attempts
  (task_run_id, pipeline_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
  VALUES ((SELECT task_run_id FROM etl_craft.aud_task_run_log JOIN etl_craft.cfg_tasks USING (task_id)
            WHERE task_code = 'load'),
          (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
          1, 'QUEUED', now(), 'pgtap', 'HUMAN');
SELECT is((SELECT a.pipeline_run_id FROM etl_craft.aud_task_attempts a JOIN etl_craft.aud_task_run_log t USING (task_run_id)
            JOIN etl_craft.cfg_tasks USING (task_id) WHERE task_code = 'load'),
  (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'),
  'an insert naming another run gets its task run''s run instead');

-- 1: setting it by hand on a live attempt does not stick either (UPDATE OF TASK_RUN_ID re-derives it; a direct
-- change of PIPELINE_RUN_ID alone is refused by nothing but is re-derived when TASK_RUN_ID is written).
UPDATE etl_craft.aud_task_attempts SET task_run_id = task_run_id,
       pipeline_run_id = (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1')
 WHERE task_run_id = (SELECT task_run_id FROM etl_craft.aud_task_run_log JOIN etl_craft.cfg_tasks USING (task_id)
                       WHERE task_code = 'load');
SELECT is((SELECT a.pipeline_run_id FROM etl_craft.aud_task_attempts a JOIN etl_craft.aud_task_run_log t USING (task_run_id)
            JOIN etl_craft.cfg_tasks USING (task_id) WHERE task_code = 'load'),
  (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'),
  'an update that writes TASK_RUN_ID re-derives PIPELINE_RUN_ID from it');

-- 1: the run's queue lists the run's QUEUED attempts only.
SELECT set_eq(
  $$SELECT attempt_id FROM etl_craft.aud_task_attempts
     WHERE pipeline_run_id = (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1')
       AND status = 'QUEUED'$$,
  $$SELECT a.attempt_id FROM etl_craft.aud_task_attempts a JOIN etl_craft.aud_task_run_log t USING (task_run_id)
     JOIN etl_craft.aud_pipelines_run_log r ON r.pipeline_run_id = t.pipeline_run_id WHERE r.run_key = 'manual:down1' AND a.status = 'QUEUED'$$,
  'selecting attempts by PIPELINE_RUN_ID finds exactly those found through their task runs');

SELECT * FROM finish();
ROLLBACK;
