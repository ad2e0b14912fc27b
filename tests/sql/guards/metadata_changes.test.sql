-- Proves CFG_ rows are stamped and recorded: INSERT, UPDATE and DELETE each write one AUD_METADATA_CHANGES row with the
-- operation, table, row key, actor, actor kind, migration and upper-case before/after images; a no-op UPDATE records
-- nothing; CREATED_BY/UPDATED_BY/..._DATE hold the actor and clock_now(), and a hand-set stamp is refused (EC003).
BEGIN;
SELECT etl_test.serialize();
SELECT plan(43);

-- The seed writes one row in each CFG_ table (project, pool, 2 pipelines, 2 tasks, parameter, 2 dependencies).
SELECT etl_test.act('seeder@test', 'SYSTEM');
SELECT etl_test.seed();

-- 3: each seeded CFG_ row has exactly one INSERT record, keyed by its table and primary key.
SELECT bag_eq(
  $$SELECT table_name::text, row_key::text, operation::text FROM etl_craft.aud_metadata_changes$$,
  $$SELECT 'CFG_PROJECTS' AS tbl, 'PROJECT_ID=' || project_id AS row_key, 'INSERT' AS op FROM etl_craft.cfg_projects
    UNION ALL SELECT 'CFG_POOLS', 'POOL_ID=' || pool_id, 'INSERT' FROM etl_craft.cfg_pools
    UNION ALL SELECT 'CFG_PIPELINES', 'PIPELINE_ID=' || pipeline_id, 'INSERT' FROM etl_craft.cfg_pipelines
    UNION ALL SELECT 'CFG_TASKS', 'TASK_ID=' || task_id, 'INSERT' FROM etl_craft.cfg_tasks
    UNION ALL SELECT 'CFG_TASK_PARAMETERS', 'PARAMETER_ID=' || parameter_id, 'INSERT' FROM etl_craft.cfg_task_parameters
    UNION ALL SELECT 'CFG_PIPELINE_DEPENDENCY', 'PIPELINE_DEPENDENCY_ID=' || pipeline_dependency_id, 'INSERT'
                FROM etl_craft.cfg_pipeline_dependency
    UNION ALL SELECT 'CFG_TASK_DEPENDENCY', 'TASK_DEPENDENCY_ID=' || task_dependency_id, 'INSERT'
                FROM etl_craft.cfg_task_dependency$$,
  'the seed''s 9 CFG_ inserts are recorded once each, as INSERT with TABLE_NAME upper case and ROW_KEY <PK>=<id>');
SELECT is_empty(
  $$SELECT m.table_name, m.row_key FROM etl_craft.aud_metadata_changes m
     WHERE ARRAY(SELECT k FROM jsonb_object_keys(m.after_json) k ORDER BY k)
        IS DISTINCT FROM ARRAY(SELECT upper(a.attname) FROM pg_attribute a
                                WHERE a.attrelid = format('etl_craft.%I', lower(m.table_name))::regclass
                                  AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1)$$,
  'each AFTER_JSON image has exactly the columns of its table (stamps included) as upper-case keys');
SELECT is_empty(
  $$SELECT table_name, row_key, actor, actor_kind FROM etl_craft.aud_metadata_changes
     WHERE actor <> 'seeder@test' OR actor_kind <> 'SYSTEM' OR before_json IS NOT NULL OR migration IS NOT NULL$$,
  'the seed''s records name the actor seeder@test (SYSTEM), have no BEFORE_JSON and no MIGRATION outside a migration');

-- INSERT, as alice@test inside project migration V002__mc.sql, at a pinned clock.
SELECT set_config('etl_craft.now', '2026-03-01 10:00:00+00', true);
SELECT etl_test.act('alice@test', 'HUMAN');
SELECT set_config('etl_craft.migration', 'V002__mc.sql', true);
INSERT INTO etl_craft.cfg_projects (project_code, description) VALUES ('mc', 'first');

CREATE TEMP TABLE mc AS SELECT project_id FROM etl_craft.cfg_projects WHERE project_code = 'mc';
CREATE TEMP VIEW mc_changes AS
  SELECT * FROM etl_craft.aud_metadata_changes
   WHERE table_name = 'CFG_PROJECTS' AND row_key = 'PROJECT_ID=' || (SELECT project_id FROM mc);

-- 6
SELECT is((SELECT count(*)::int FROM mc_changes), 1, 'INSERT of project mc records exactly one change');
SELECT results_eq(
  $$SELECT operation::text, table_name::text, row_key::text, actor::text, actor_kind::text, migration::text, changed_at
      FROM mc_changes$$,
  format($$VALUES ('INSERT', 'CFG_PROJECTS', 'PROJECT_ID=%s', 'alice@test', 'HUMAN', 'V002__mc.sql',
                   '2026-03-01 10:00:00+00'::timestamptz)$$, (SELECT project_id FROM mc)),
  'the INSERT record has OPERATION INSERT, TABLE_NAME CFG_PROJECTS, ROW_KEY PROJECT_ID=<id>, the actor, its kind, the migration and clock_now()');
SELECT is((SELECT before_json FROM mc_changes), NULL, 'the INSERT record has no BEFORE_JSON');
SELECT is((SELECT after_json ->> 'DESCRIPTION' FROM mc_changes), 'first',
  'the INSERT record''s AFTER_JSON holds the inserted DESCRIPTION under an upper-case key');
SELECT is((SELECT after_json ->> 'CREATED_BY' FROM mc_changes), 'alice@test',
  'the INSERT record''s AFTER_JSON holds the stamped CREATED_BY');
SELECT results_eq(
  $$SELECT created_by::text, updated_by::text, created_date, updated_date FROM etl_craft.cfg_projects
     WHERE project_code = 'mc'$$,
  $$VALUES ('alice@test', 'alice@test', '2026-03-01 10:00:00+00'::timestamptz, '2026-03-01 10:00:00+00'::timestamptz)$$,
  'an inserted CFG_ row is stamped CREATED_BY = UPDATED_BY = the actor, CREATED_DATE = UPDATED_DATE = clock_now()');

-- UPDATE, as someone@else (SYSTEM), later, outside any migration.
SELECT set_config('etl_craft.now', '2026-03-02 11:00:00+00', true);
SELECT etl_test.act('someone@else', 'SYSTEM');
SELECT set_config('etl_craft.migration', '', true);
UPDATE etl_craft.cfg_projects SET description = 'second' WHERE project_code = 'mc';

-- 8
SELECT is((SELECT count(*)::int FROM mc_changes WHERE operation = 'UPDATE'), 1,
  'UPDATE of project mc records exactly one change');
SELECT results_eq(
  $$SELECT table_name::text, row_key::text, actor::text, actor_kind::text, migration::text, changed_at
      FROM mc_changes WHERE operation = 'UPDATE'$$,
  format($$VALUES ('CFG_PROJECTS', 'PROJECT_ID=%s', 'someone@else', 'SYSTEM', NULL::text,
                   '2026-03-02 11:00:00+00'::timestamptz)$$, (SELECT project_id FROM mc)),
  'the UPDATE record names the new actor and kind, no MIGRATION outside a migration, and clock_now()');
SELECT is((SELECT before_json ->> 'DESCRIPTION' FROM mc_changes WHERE operation = 'UPDATE'), 'first',
  'the UPDATE record''s BEFORE_JSON holds the old DESCRIPTION');
SELECT is((SELECT after_json ->> 'DESCRIPTION' FROM mc_changes WHERE operation = 'UPDATE'), 'second',
  'the UPDATE record''s AFTER_JSON holds the new DESCRIPTION');
SELECT is((SELECT before_json ->> 'UPDATED_BY' FROM mc_changes WHERE operation = 'UPDATE'), 'alice@test',
  'the UPDATE record''s BEFORE_JSON holds the old UPDATED_BY');
SELECT is((SELECT after_json ->> 'UPDATED_BY' FROM mc_changes WHERE operation = 'UPDATE'), 'someone@else',
  'the UPDATE record''s AFTER_JSON holds the new UPDATED_BY');
SELECT is(
  (SELECT (before_json - 'DESCRIPTION' - 'UPDATED_BY' - 'UPDATED_DATE') = (after_json - 'DESCRIPTION' - 'UPDATED_BY' - 'UPDATED_DATE')
     FROM mc_changes WHERE operation = 'UPDATE'), true,
  'the UPDATE record''s BEFORE_JSON and AFTER_JSON differ only in DESCRIPTION and the UPDATED_ stamps');
SELECT results_eq(
  $$SELECT created_by::text, created_date, updated_by::text, updated_date FROM etl_craft.cfg_projects
     WHERE project_code = 'mc'$$,
  $$VALUES ('alice@test', '2026-03-01 10:00:00+00'::timestamptz, 'someone@else', '2026-03-02 11:00:00+00'::timestamptz)$$,
  'after the UPDATE, UPDATED_BY/UPDATED_DATE are the new actor and time, CREATED_BY/CREATED_DATE unchanged');

-- A no-op UPDATE, as a third actor: nothing recorded, stamps untouched.
SELECT set_config('etl_craft.now', '2026-03-03 12:00:00+00', true);
SELECT etl_test.act('third@party', 'HUMAN');

-- 3
SELECT lives_ok($$UPDATE etl_craft.cfg_projects SET description = description, timezone = timezone WHERE project_code = 'mc'$$,
  'an UPDATE that changes no value is accepted');
SELECT is((SELECT count(*)::int FROM mc_changes), 2, 'an UPDATE that changes no value records nothing');
SELECT results_eq(
  $$SELECT updated_by::text, updated_date FROM etl_craft.cfg_projects WHERE project_code = 'mc'$$,
  $$VALUES ('someone@else', '2026-03-02 11:00:00+00'::timestamptz)$$,
  'an UPDATE that changes no value leaves UPDATED_BY and UPDATED_DATE as they were');

-- A multi-row UPDATE records one change per row.
-- 1
UPDATE etl_craft.cfg_tasks SET description = 'both';
SELECT bag_eq(
  $$SELECT row_key::text, actor::text FROM etl_craft.aud_metadata_changes
     WHERE table_name = 'CFG_TASKS' AND operation = 'UPDATE'$$,
  $$SELECT 'TASK_ID=' || task_id AS row_key, 'third@party' AS actor FROM etl_craft.cfg_tasks$$,
  'an UPDATE of both seeded tasks records one UPDATE change per task row');

-- The actor kind defaults to HUMAN when only the actor is set.
-- 1
SELECT set_config('etl_craft.actor', 'bob@test', true), set_config('etl_craft.actor_kind', '', true);
INSERT INTO etl_craft.cfg_pools (pool_name) VALUES ('bobs_pool');
SELECT results_eq(
  $$SELECT actor::text, actor_kind::text FROM etl_craft.aud_metadata_changes
     WHERE table_name = 'CFG_POOLS' AND row_key = 'POOL_ID=' || (SELECT pool_id FROM etl_craft.cfg_pools
                                                                  WHERE pool_name = 'bobs_pool')$$,
  $$VALUES ('bob@test', 'HUMAN')$$,
  'a change made with etl_craft.actor set and no actor kind is recorded with ACTOR_KIND HUMAN');

-- Hand-set stamps are refused (EC003), on INSERT and on UPDATE; the actor's own name is no different.
CREATE TEMP VIEW stamp_refusal AS
  SELECT t, t || ': CREATED_BY, CREATED_DATE, UPDATED_BY and UPDATED_DATE are written by etl-craft%' AS pattern
    FROM unnest(ARRAY['CFG_PROJECTS', 'CFG_POOLS', 'CFG_PIPELINES', 'CFG_TASKS', 'CFG_TASK_PARAMETERS',
                      'CFG_PIPELINE_DEPENDENCY', 'CFG_TASK_DEPENDENCY']) t;
SELECT etl_test.act('alice@test', 'HUMAN');

-- 4 + 4
SELECT etl_test.refused(format('INSERT INTO etl_craft.cfg_projects (project_code, %s) VALUES (%L, %s)', col, 'hand', val),
  'EC003', (SELECT pattern FROM stamp_refusal WHERE t = 'CFG_PROJECTS'),
  format('INSERT into CFG_PROJECTS with a hand-set %s is refused (EC003)', upper(col)))
  FROM (VALUES (1, 'created_by', $$'mallory'$$), (2, 'created_date', $$'2000-01-01'$$),
               (3, 'updated_by', $$'mallory'$$), (4, 'updated_date', $$'2000-01-01'$$)) AS s(n, col, val)
 ORDER BY n;
SELECT etl_test.refused(format('UPDATE etl_craft.cfg_projects SET %s = %s WHERE project_code = %L', col, val, 'mc'),
  'EC003', (SELECT pattern FROM stamp_refusal WHERE t = 'CFG_PROJECTS'),
  format('UPDATE of CFG_PROJECTS setting %s by hand is refused (EC003)', upper(col)))
  FROM (VALUES (1, 'created_by', $$'mallory'$$), (2, 'created_date', $$'2000-01-01'$$),
               (3, 'updated_by', $$'mallory'$$), (4, 'updated_date', $$'2000-01-01'$$)) AS s(n, col, val)
 ORDER BY n;
-- 1 + 7
SELECT etl_test.refused($$UPDATE etl_craft.cfg_projects SET description = 'third', updated_by = 'mallory' WHERE project_code = 'mc'$$,
  'EC003', (SELECT pattern FROM stamp_refusal WHERE t = 'CFG_PROJECTS'),
  'an UPDATE that changes a value and hand-sets UPDATED_BY to another actor is refused (EC003)');
SELECT etl_test.refused(format('UPDATE etl_craft.%I SET created_by = %L', lower(t), 'mallory'), 'EC003', pattern,
  format('UPDATE of %s setting CREATED_BY by hand is refused (EC003)', t))
  FROM stamp_refusal ORDER BY t;

-- DELETE, as alice@test inside project migration V003__drop_mc.sql.
SELECT set_config('etl_craft.migration', 'V003__drop_mc.sql', true);
SELECT set_config('etl_craft.now', '2026-03-04 13:00:00+00', true);
DELETE FROM etl_craft.cfg_projects WHERE project_code = 'mc';

-- 4
SELECT is((SELECT count(*)::int FROM mc_changes WHERE operation = 'DELETE'), 1,
  'DELETE of project mc records exactly one change');
SELECT results_eq(
  $$SELECT table_name::text, row_key::text, actor::text, actor_kind::text, migration::text, changed_at
      FROM mc_changes WHERE operation = 'DELETE'$$,
  format($$VALUES ('CFG_PROJECTS', 'PROJECT_ID=%s', 'alice@test', 'HUMAN', 'V003__drop_mc.sql',
                   '2026-03-04 13:00:00+00'::timestamptz)$$, (SELECT project_id FROM mc)),
  'the DELETE record names the table, the row, the actor, its kind, the migration and clock_now()');
SELECT is((SELECT before_json ->> 'DESCRIPTION' FROM mc_changes WHERE operation = 'DELETE'), 'second',
  'the DELETE record''s BEFORE_JSON holds the deleted row''s last DESCRIPTION');
SELECT is((SELECT after_json FROM mc_changes WHERE operation = 'DELETE'), NULL, 'the DELETE record has no AFTER_JSON');

-- 1: over the project's life, one record per real change, in order.
SELECT results_eq($$SELECT operation::text FROM mc_changes ORDER BY change_id$$,
  $$VALUES ('INSERT'), ('UPDATE'), ('DELETE')$$,
  'project mc''s history is INSERT, UPDATE, DELETE: the no-op UPDATE left no trace');

SELECT * FROM finish();
ROLLBACK;
