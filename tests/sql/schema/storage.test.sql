-- Proves the storage settings the engine migrations give (0008): the task-run summary keeps room on its pages
-- (fill factor 80), so an update that changes no indexed column, as start_attempt's and finish_attempt's do,
-- can stay on its page and write no index entry (a heap-only tuple).
BEGIN;
SELECT etl_test.serialize();
SELECT plan(1);

SELECT is((SELECT reloptions FROM pg_class WHERE oid = 'etl_craft.aud_task_run_log'::regclass),
          ARRAY['fillfactor=80'], 'AUD_TASK_RUN_LOG is stored with fill factor 80');

SELECT * FROM finish();
ROLLBACK;
