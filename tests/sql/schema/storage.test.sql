-- Proves the storage settings the engine migrations give: the task-run summary keeps room on its pages (0008,
-- fill factor 80), so an update that changes no indexed column, as start_attempt's and finish_attempt's do, can stay
-- on its page and write no index entry (a heap-only tuple); and the hot tables carry their own autovacuum
-- thresholds (0023), so their plans and dead index entries do not wait for the server's defaults.
BEGIN;
SELECT etl_test.serialize();
SELECT plan(5);

SELECT ok((SELECT 'fillfactor=80' = ANY (reloptions) FROM pg_class WHERE oid = 'etl_craft.aud_task_run_log'::regclass),
          'AUD_TASK_RUN_LOG is stored with fill factor 80');
SELECT ok((SELECT bool_or(o LIKE 'autovacuum_vacuum_threshold=%') FROM pg_class, unnest(reloptions) o
            WHERE oid = ('etl_craft.' || t)::regclass),
          t || ' carries its own autovacuum threshold')
  FROM unnest(ARRAY['aud_task_attempts', 'aud_task_run_log', 'aud_pipelines_run_log', 'aud_workers']) t;

SELECT * FROM finish();
ROLLBACK;
