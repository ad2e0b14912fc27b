-- carry_offset: an Engine DB where nothing has run yet takes each task's last offset from another Engine DB once,
-- naming the database and attempt that stored it; every other call is refused with nothing written. The Engine
-- DB's own identity (ENG_SETTINGS ENGINE_ID, migration 0014) never changes.
BEGIN;
SELECT etl_test.serialize();
SELECT plan(12);
SELECT etl_test.act();

INSERT INTO etl_craft.cfg_projects (project_code) VALUES ('cp');
INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code) SELECT project_id, 'ingest' FROM etl_craft.cfg_projects;
INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, script_file)
SELECT pipeline_id, code, 'PYTHON', code || '.py' FROM etl_craft.cfg_pipelines, (VALUES ('orders'), ('customers')) c(code);
CREATE TEMP VIEW task_of AS SELECT task_code, task_id FROM etl_craft.cfg_tasks;
CREATE TEMP VIEW source AS SELECT repeat('5a', 16) AS engine_id;

-- 1-2: a fresh Engine DB takes the offset, keeping when its source stored it and naming the source.
SELECT is((SELECT row(offset_type, offset_value, stored_at)::text FROM etl_craft.carry_offset(
             p_task_id => (SELECT task_id FROM task_of WHERE task_code = 'orders'), p_offset_type => 'TIMESTAMP',
             p_offset_value => '2026-01-02T10:00:30+00:00', p_stored_at => '2026-01-16 07:00:05+00',
             p_source_engine_id => (SELECT engine_id FROM source), p_source_attempt_id => 7)),
          (SELECT row('TIMESTAMP', '2026-01-02T10:00:30+00:00', timestamptz '2026-01-16 07:00:05+00')::text),
          'carry_offset gives the task its offset, stored when its source stored it');
SELECT is((SELECT row(task_run_id, attempt_id, source_engine_id, source_attempt_id)::text
             FROM etl_craft.aud_task_offsets WHERE task_id = (SELECT task_id FROM task_of WHERE task_code = 'orders')),
          (SELECT row(NULL::bigint, NULL::bigint, engine_id, 7::bigint)::text FROM source),
          'the carried offset names the Engine DB and attempt that stored it, not a task run or attempt of its own');

-- 3-7: refusals, each naming what is wrong.
SELECT etl_test.refused(format($$SELECT * FROM etl_craft.carry_offset(p_task_id => %s, p_offset_type => 'INTEGER',
                          p_offset_value => '80', p_stored_at => now(), p_source_engine_id => %L, p_source_attempt_id => 8)$$,
                          (SELECT task_id FROM task_of WHERE task_code = 'orders'), (SELECT engine_id FROM source)),
                        'EC023', 'task % has an offset already (2026-01-02T10:00:30+00:00, stored 2026-01-16 07:00:05 UTC): a task takes a carried offset only once%',
                        'a task that has an offset takes no other (EC023)');
SELECT etl_test.refused(format($$SELECT * FROM etl_craft.carry_offset(p_task_id => %s, p_offset_type => 'INTEGER',
                          p_offset_value => '80', p_stored_at => now(), p_source_engine_id => %L, p_source_attempt_id => 8)$$,
                          (SELECT task_id FROM task_of WHERE task_code = 'customers'),
                          (SELECT value FROM etl_craft.eng_settings WHERE setting = 'ENGINE_ID')),
                        'EC023', 'the offset of task % comes from Engine DB %, which is this one%',
                        'an offset is not carried from the Engine DB into itself (EC023)');
SELECT etl_test.refused(format($$SELECT * FROM etl_craft.carry_offset(p_task_id => %s, p_offset_type => 'INTEGER',
                          p_offset_value => '80', p_stored_at => now(), p_source_engine_id => 'laptop', p_source_attempt_id => 8)$$,
                          (SELECT task_id FROM task_of WHERE task_code = 'customers')),
                        'EC023', 'the source laptop is not an Engine DB identity (ENG_SETTINGS ENGINE_ID: 32 hex digits)%',
                        'a source that is not an Engine DB identity is refused (EC023)');
SELECT etl_test.refused(format($$SELECT * FROM etl_craft.carry_offset(p_task_id => %s, p_offset_type => 'FLOAT',
                          p_offset_value => '80', p_stored_at => now(), p_source_engine_id => %L, p_source_attempt_id => 8)$$,
                          (SELECT task_id FROM task_of WHERE task_code = 'customers'), (SELECT engine_id FROM source)),
                        'EC023', 'the offset 80 needs an offset_type of INTEGER, DECIMAL, TEXT, DATE, TIMESTAMP, not FLOAT%',
                        'an offset type that is not one is refused (EC023)');
SELECT etl_test.refused(format($$SELECT * FROM etl_craft.carry_offset(p_task_id => 999999, p_offset_type => 'INTEGER',
                          p_offset_value => '80', p_stored_at => now(), p_source_engine_id => %L, p_source_attempt_id => 8)$$,
                          (SELECT engine_id FROM source)),
                        'EC021', 'task 999999 does not exist in this Engine DB%', 'an unknown task is not found (EC021)');

-- 8-9: once anything has run here, the Engine DB's offsets are its own.
INSERT INTO etl_craft.aud_pipelines_run_log (pipeline_id, run_key, trigger_kind, run_date, status, queued_at,
  started_by, started_by_kind)
SELECT pipeline_id, 'manual:1', 'MANUAL', DATE '2026-01-17', 'QUEUED', now(), 'pgtap@test', 'HUMAN' FROM etl_craft.cfg_pipelines;
SELECT etl_test.refused(format($$SELECT * FROM etl_craft.carry_offset(p_task_id => %s, p_offset_type => 'INTEGER',
                          p_offset_value => '80', p_stored_at => now(), p_source_engine_id => %L, p_source_attempt_id => 8)$$,
                          (SELECT task_id FROM task_of WHERE task_code = 'customers'), (SELECT engine_id FROM source)),
                        'EC023', 'carry_offset writes only into an Engine DB where nothing has run yet; this one has 1 run(s)%',
                        'an Engine DB with a run takes no carried offset (EC023)');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_task_offsets), 1, 'the refused calls wrote nothing');

-- 10-12: the identity is there, and final.
SELECT matches((SELECT value FROM etl_craft.eng_settings WHERE setting = 'ENGINE_ID'), '^[0-9a-f]{32}$',
               'the Engine DB has an identity of 32 hex digits (migration 0014)');
SELECT etl_test.refused($$UPDATE etl_craft.eng_settings SET value = repeat('0', 32) WHERE setting = 'ENGINE_ID'$$,
                        'EC002', 'UPDATE of ENG_SETTINGS SETTING=ENGINE_ID refused: the Engine DB''s identity is created once%',
                        'the identity is not changed, even by etl-craft (EC002)');
SELECT etl_test.refused($$DELETE FROM etl_craft.eng_settings WHERE setting = 'ENGINE_ID'$$,
                        'EC002', 'DELETE of ENG_SETTINGS SETTING=ENGINE_ID refused: the Engine DB''s identity is created once%',
                        'the identity is not deleted (EC002)');

SELECT * FROM finish();
ROLLBACK;
