-- Actor columns cannot be forged. A role cannot hand-INSERT a row at all (42501); the functions write the actor
-- their call names; and even the owner's marked hand write gets the actor its transaction is marked with in every
-- *_BY and ACTOR column (and its kind), whatever the statement gave. A malformed marker is refused with EC001, not
-- left to fail on a column (22001).
BEGIN;
SELECT etl_test.serialize();
SELECT plan(15);

SELECT etl_test.act();
SELECT etl_test.seed();
CREATE TEMP VIEW up_pl AS SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'up_pl';

-- 1: every actor column of the AUD_ and ENG_ tables and SCHEMA_MIGRATIONS is stamped by a _200_stamp_actor trigger
-- that fires on INSERT and on an UPDATE of it.
SELECT is_empty(
  $$SELECT c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
     WHERE c.relnamespace = 'etl_craft'::regnamespace AND c.relkind = 'r' AND c.relname !~ '^cfg_'
       AND a.attnum > 0 AND NOT a.attisdropped AND (a.attname ~ '_by(_kind)?$' OR a.attname IN ('actor', 'actor_kind'))
       AND NOT EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = c.oid AND g.tgname = '_200_stamp_actor'
                          AND g.tgtype & (4 | 16) = 4 | 16 AND a.attnum = ANY (g.tgattr::int2[]))$$,
  'every *_BY, *_BY_KIND, ACTOR and ACTOR_KIND column outside CFG_ is stamped by _200_stamp_actor (INSERT, UPDATE OF it)');

-- 2: through a role, a hand INSERT that names another actor never happens: the role cannot insert at all.
SELECT etl_test.refused_as('operator',
  $$SELECT set_config('etl_craft.actor', 'mallory', true);
    INSERT INTO etl_craft.aud_run_interventions (pipeline_run_id, intervention, reason, requested_by, requested_by_kind,
                                                 requested_at)
    SELECT pipeline_run_id, 'MARK', 'forged', 'dba:alice', 'HUMAN', now() FROM etl_craft.aud_pipelines_run_log$$,
  '42501', 'permission denied for table aud_run_interventions',
  'the operator role cannot hand-INSERT an intervention in another actor''s name (42501)');
SELECT etl_test.refused_as('engine',
  $$SELECT set_config('etl_craft.actor', 'mallory', true);
    INSERT INTO etl_craft.aud_actions (started_at, actor, actor_kind, command, arguments)
    VALUES (now(), 'etl-craft', 'SYSTEM', 'run', '{}')$$,
  '42501', 'permission denied for table aud_actions',
  'the engine role cannot hand-INSERT an action in another actor''s name (42501)');

-- Through a function, a role's rows carry the actor its call named (the function marks the transaction).
SELECT etl_test.role('operator') AS operator \gset
SET LOCAL ROLE :"operator";
SELECT pause_id FROM etl_craft.pause_pipeline(
  p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'down_pl'),
  p_reason => 'through the API', p_actor => 'dba:bob');
RESET ROLE;

-- 6: the owner's own marked hand writes: the actor columns hold the marker, not what the statement gave.
SELECT etl_test.act('dba:alice', 'HUMAN');
INSERT INTO etl_craft.aud_pipelines_run_log
  (pipeline_id, run_key, trigger_kind, run_date, status, queued_at, started_by, started_by_kind)
  SELECT pipeline_id, 'manual:forged', 'MANUAL', DATE '2026-01-03', 'QUEUED', now(), 'mallory', 'SYSTEM' FROM up_pl;
SELECT is((SELECT started_by || '/' || started_by_kind FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:forged'),
          'dba:alice/HUMAN', 'a hand INSERT naming STARTED_BY mallory (SYSTEM) records the marked actor dba:alice (HUMAN)');
UPDATE etl_craft.aud_pipelines_run_log SET started_by = 'mallory', started_by_kind = 'SYSTEM' WHERE run_key = 'manual:forged';
SELECT is((SELECT started_by || '/' || started_by_kind FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:forged'),
          'dba:alice/HUMAN', 'an UPDATE of STARTED_BY keeps who created the run');
SELECT etl_test.act('dba:carol', 'HUMAN');
UPDATE etl_craft.aud_pipelines_run_log SET status = 'CANCELLED', end_date = now(), ended_by = 'mallory',
       ended_by_kind = 'SYSTEM' WHERE run_key = 'manual:forged';
SELECT is((SELECT ended_by || '/' || ended_by_kind FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:forged'),
          'dba:carol/HUMAN', 'a hand UPDATE that ends a run naming ENDED_BY mallory records the marked actor dba:carol');
INSERT INTO etl_craft.aud_actions (started_at, actor, actor_kind, command, arguments)
  VALUES (now(), 'etl-craft', 'SYSTEM', 'forged', '{}');
SELECT is((SELECT actor || '/' || actor_kind FROM etl_craft.aud_actions WHERE command = 'forged'), 'dba:carol/HUMAN',
          'a hand INSERT into AUD_ACTIONS naming etl-craft (SYSTEM) records the marked actor');
INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code)
  SELECT project_id, 'fourth_pl' FROM etl_craft.cfg_projects WHERE project_code = 'tp';
INSERT INTO etl_craft.aud_pipeline_pauses (pipeline_id, paused_at, pause_reason)
  SELECT pipeline_id, now(), 'no actor given' FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'fourth_pl';
SELECT is((SELECT count(*)::int FROM etl_craft.aud_pipeline_pauses WHERE paused_by = 'dba:carol'), 1,
          'a hand INSERT that leaves PAUSED_BY out gets the marked actor');
SELECT is((SELECT paused_by FROM etl_craft.aud_pipeline_pauses WHERE pause_reason = 'through the API'), 'dba:bob',
          'the pause made through pause_pipeline names the actor its call passed');

-- 6: a malformed actor is refused with EC001, by the functions and by the stamping triggers.
SELECT etl_test.refused($$SELECT set_config('etl_craft.actor', repeat('x', 129), true);
                          INSERT INTO etl_craft.aud_actions (started_at, command, arguments) VALUES (now(), 'long', '{}')$$,
  'EC001', 'the actor marker etl_craft.actor = ''xxxx%''... (129 characters) is not a name: use 1 to 128 printable characters%',
  'a 129-character marker is refused with EC001 by the stamping trigger, not 22001 by the column');
SELECT etl_test.refused($$SELECT set_config('etl_craft.actor', E'dba:alice\nmallory', true);
                          INSERT INTO etl_craft.cfg_pools (pool_name) VALUES ('cntrl')$$,
  'EC001', 'the actor marker etl_craft.actor = % is not a name%',
  'a marker with a control character is refused with EC001 by the CFG_ stamps');
SELECT etl_test.refused($$SELECT set_config('etl_craft.actor', repeat('y', 200), true);
                          SELECT * FROM etl_craft.pause_pipeline(p_pipeline_id => 1, p_reason => 'r')$$,
  'EC001', 'the actor marker etl_craft.actor = ''yyyy%''... (200 characters) is not a name%',
  'a function called without p_actor in a transaction with a 200-character marker is refused with EC001');
SELECT etl_test.refused_as('operator', $$SELECT * FROM etl_craft.pause_pipeline(p_pipeline_id => 1, p_reason => 'r',
                                           p_actor => repeat('z', 300))$$,
  'EC001', 'the actor ''zzzz%''... (300 characters) is not a name: use 1 to 128 printable characters, such as dba:alice',
  'p_actor of 300 characters is refused with EC001, shown shortened');
SELECT etl_test.refused_as('operator', $$SELECT * FROM etl_craft.pause_pipeline(p_pipeline_id => 1, p_reason => 'r',
                                           p_actor => 'dba:alice', p_actor_kind => 'ROBOT')$$,
  'EC001', 'the actor kind ''ROBOT'' is not one of HUMAN, SCHEDULE, ORCHESTRATOR, WORKER, SYSTEM',
  'p_actor_kind ROBOT is refused with EC001');
SELECT etl_test.refused($$SELECT set_config('etl_craft.actor_kind', 'ROBOT', true);
                          INSERT INTO etl_craft.aud_actions (started_at, command, arguments) VALUES (now(), 'robot', '{}')$$,
  'EC001', 'the actor kind etl_craft.actor_kind = ''ROBOT'' is not one of HUMAN, SCHEDULE, ORCHESTRATOR, WORKER, SYSTEM',
  'a marker kind ROBOT is refused with EC001, not by a CHECK constraint');

SELECT * FROM finish();
ROLLBACK;
