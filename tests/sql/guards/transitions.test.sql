-- Proves the transition guards enforce sql/state_machine.yaml: ENG_STATUSES and ENG_TRANSITIONS hold the YAML's
-- statuses and pairs; for runs, task runs and attempts every allowed (from, to) pair is accepted and every other pair
-- is refused (EC010; EC002 for an ended attempt), only initial statuses may be inserted, and the EC010 message names
-- the table, the key and both statuses.
BEGIN;
SELECT etl_test.serialize();
SELECT plan(23);

-- 1: ENG_STATUSES is the YAML's statuses, terminal flags and attempt summary statuses.
SELECT set_eq('SELECT entity, status, is_terminal, summary_status FROM etl_craft.eng_statuses',
  $$VALUES ('RUN', 'QUEUED', 'N', NULL), ('RUN', 'IN-PROGRESS', 'N', NULL), ('RUN', 'SUCCESS', 'Y', NULL),
           ('RUN', 'FAILED', 'Y', NULL), ('RUN', 'SKIPPED', 'Y', NULL), ('RUN', 'CANCELLED', 'Y', NULL),
           ('TASK_RUN', 'IN-PROGRESS', 'N', NULL), ('TASK_RUN', 'SUCCESS', 'Y', NULL), ('TASK_RUN', 'FAILED', 'Y', NULL),
           ('TASK_RUN', 'SKIPPED', 'Y', NULL), ('TASK_RUN', 'CANCELLED', 'Y', NULL),
           ('ATTEMPT', 'QUEUED', 'N', 'IN-PROGRESS'), ('ATTEMPT', 'CLAIMED', 'N', 'IN-PROGRESS'),
           ('ATTEMPT', 'RUNNING', 'N', 'IN-PROGRESS'), ('ATTEMPT', 'SUCCESS', 'Y', 'SUCCESS'),
           ('ATTEMPT', 'FAILED', 'Y', 'FAILED'), ('ATTEMPT', 'TIMED_OUT', 'Y', 'FAILED'),
           ('ATTEMPT', 'CANCELLED', 'Y', 'CANCELLED'), ('ATTEMPT', 'LOST', 'Y', 'FAILED'),
           ('WORKER', 'ACTIVE', 'N', NULL), ('WORKER', 'DRAINING', 'N', NULL), ('WORKER', 'GONE', 'Y', NULL)$$,
  'ENG_STATUSES holds the 6 RUN, 5 TASK_RUN, 8 ATTEMPT and 3 WORKER statuses of state_machine.yaml with their terminal flags and summaries');

-- 1: ENG_TRANSITIONS is the YAML's pairs (FROM_STATUS NULL: the statuses a row may be inserted with), with the table.
SELECT set_eq('SELECT entity, table_name, from_status, to_status FROM etl_craft.eng_transitions',
  $$SELECT 'RUN' AS entity, 'AUD_PIPELINES_RUN_LOG' AS table_name, f, t FROM (VALUES
      (NULL, 'QUEUED'), (NULL, 'IN-PROGRESS'),
      ('QUEUED', 'IN-PROGRESS'), ('QUEUED', 'SKIPPED'), ('QUEUED', 'CANCELLED'),
      ('IN-PROGRESS', 'SUCCESS'), ('IN-PROGRESS', 'FAILED'), ('IN-PROGRESS', 'SKIPPED'), ('IN-PROGRESS', 'CANCELLED'),
      ('SUCCESS', 'IN-PROGRESS'), ('SUCCESS', 'FAILED'), ('SUCCESS', 'SKIPPED'),
      ('FAILED', 'IN-PROGRESS'), ('FAILED', 'SUCCESS'), ('FAILED', 'SKIPPED'),
      ('SKIPPED', 'IN-PROGRESS'), ('SKIPPED', 'SUCCESS'), ('SKIPPED', 'FAILED'),
      ('CANCELLED', 'IN-PROGRESS'), ('CANCELLED', 'SUCCESS'), ('CANCELLED', 'FAILED'), ('CANCELLED', 'SKIPPED')
    ) AS run(f, t)
    UNION ALL
    SELECT 'TASK_RUN', 'AUD_TASK_RUN_LOG', f, t FROM (VALUES
      (NULL, 'IN-PROGRESS'), (NULL, 'SKIPPED'), (NULL, 'SUCCESS'), (NULL, 'FAILED'),
      ('IN-PROGRESS', 'SUCCESS'), ('IN-PROGRESS', 'FAILED'), ('IN-PROGRESS', 'SKIPPED'), ('IN-PROGRESS', 'CANCELLED'),
      ('SUCCESS', 'IN-PROGRESS'), ('SUCCESS', 'FAILED'), ('SUCCESS', 'SKIPPED'),
      ('FAILED', 'IN-PROGRESS'), ('FAILED', 'SUCCESS'), ('FAILED', 'SKIPPED'),
      ('SKIPPED', 'IN-PROGRESS'), ('SKIPPED', 'SUCCESS'), ('SKIPPED', 'FAILED'),
      ('CANCELLED', 'IN-PROGRESS'), ('CANCELLED', 'SUCCESS'), ('CANCELLED', 'FAILED'), ('CANCELLED', 'SKIPPED')
    ) AS task_run(f, t)
    UNION ALL
    SELECT 'ATTEMPT', 'AUD_TASK_ATTEMPTS', f, t FROM (VALUES
      (NULL, 'QUEUED'),
      ('QUEUED', 'CLAIMED'), ('QUEUED', 'FAILED'), ('QUEUED', 'CANCELLED'),
      ('CLAIMED', 'RUNNING'), ('CLAIMED', 'SUCCESS'), ('CLAIMED', 'FAILED'), ('CLAIMED', 'LOST'), ('CLAIMED', 'CANCELLED'),
      ('RUNNING', 'SUCCESS'), ('RUNNING', 'FAILED'), ('RUNNING', 'TIMED_OUT'), ('RUNNING', 'LOST'), ('RUNNING', 'CANCELLED')
    ) AS attempt(f, t)
    UNION ALL
    SELECT 'WORKER', 'AUD_WORKERS', f, t FROM (VALUES
      (NULL, 'ACTIVE'), ('ACTIVE', 'DRAINING'), ('ACTIVE', 'GONE'), ('DRAINING', 'GONE')
    ) AS worker(f, t)$$,
  'ENG_TRANSITIONS holds exactly the pairs of state_machine.yaml, each with its entity''s table');

-- 2: the counts, as the YAML gives them: RUN 6 statuses, 2 initial + 20 changes; TASK_RUN 5, 4 + 17; ATTEMPT 8, 1 + 13;
-- WORKER 3, 1 + 3.
SELECT set_eq(
  $$SELECT entity, count(*) FILTER (WHERE from_status IS NULL) AS initial,
           count(*) FILTER (WHERE from_status IS NOT NULL) AS changes
      FROM etl_craft.eng_transitions GROUP BY entity$$,
  $$VALUES ('RUN', 2::bigint, 20::bigint), ('TASK_RUN', 4, 17), ('ATTEMPT', 1, 13), ('WORKER', 1, 3)$$,
  'ENG_TRANSITIONS has RUN 2 initial + 20 changes, TASK_RUN 4 + 17, ATTEMPT 1 + 13, WORKER 1 + 3');
SELECT set_eq('SELECT entity, count(*) FROM etl_craft.eng_statuses GROUP BY entity',
  $$VALUES ('RUN', 6::bigint), ('TASK_RUN', 5), ('ATTEMPT', 8), ('WORKER', 3)$$,
  'ENG_STATUSES has 6 RUN, 5 TASK_RUN, 8 ATTEMPT and 3 WORKER statuses');

-- The rows the guards are tried on: run manual:up1, its task run of extract and attempt 1 from the seed, plus a task
-- run of load in manual:down1 without attempts (for attempt inserts), and pipeline empty_pl (for run inserts).
SELECT etl_test.act();
SELECT etl_test.seed();
INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status)
  VALUES ((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'),
          (SELECT task_id FROM etl_craft.cfg_tasks WHERE task_code = 'load'), 'IN-PROGRESS');
-- a pipeline without runs for run inserts: a pipeline has at most one IN-PROGRESS run (ux_one_running_run)
INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code)
  SELECT project_id, 'empty_pl' FROM etl_craft.cfg_projects WHERE project_code = 'tp';

CREATE TEMP TABLE subjects (entity text, tbl text, key text, id bigint, insert_sql text) ON COMMIT DROP;
INSERT INTO subjects VALUES
  ('RUN', 'aud_pipelines_run_log', 'pipeline_run_id',
   (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:up1'),
   $$INSERT INTO etl_craft.aud_pipelines_run_log
       (pipeline_id, run_key, trigger_kind, run_date, status, queued_at, started_by, started_by_kind)
     VALUES ((SELECT pipeline_id FROM etl_craft.cfg_pipelines WHERE pipeline_code = 'empty_pl'), 'manual:new', 'MANUAL',
             DATE '2026-01-02', %L, now(), 'pgtap', 'HUMAN')$$),
  ('TASK_RUN', 'aud_task_run_log', 'task_run_id',
   (SELECT task_run_id FROM etl_craft.aud_task_run_log JOIN etl_craft.cfg_tasks USING (task_id) WHERE task_code = 'extract'),
   $$INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status)
     VALUES ((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:down1'),
             (SELECT task_id FROM etl_craft.cfg_tasks WHERE task_code = 'extract'), %L)$$),
  ('ATTEMPT', 'aud_task_attempts', 'attempt_id', (SELECT attempt_id FROM etl_craft.aud_task_attempts),
   $$INSERT INTO etl_craft.aud_task_attempts
       (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
     VALUES ((SELECT task_run_id FROM etl_craft.aud_task_run_log JOIN etl_craft.cfg_tasks USING (task_id)
               WHERE task_code = 'load'), 1, %L, now(), 'pgtap', 'HUMAN')$$);

-- Try every (from, to) pair of distinct statuses and every inserted status, each in a probe that is rolled back.
-- To start a pair from any status, the row is first put there with triggers off (session_replication_role =
-- replica); the guard then judges only the (from, to) change, with triggers back on.
CREATE TEMP TABLE outcomes (op text, entity text, from_status text, to_status text, code text, message text)
  ON COMMIT DROP;
DO $$
DECLARE
  s record; f text; t text; p record;
BEGIN
  FOR s IN SELECT * FROM subjects LOOP
    FOR f, t IN SELECT a.status, b.status FROM etl_craft.eng_statuses a JOIN etl_craft.eng_statuses b
                    ON b.entity = a.entity AND b.status <> a.status WHERE a.entity = s.entity LOOP
      p := etl_test.probe(format(
        'SET LOCAL session_replication_role = replica; UPDATE etl_craft.%1$I SET status = %3$L WHERE %2$I = %5$s; '
        'SET LOCAL session_replication_role = origin; UPDATE etl_craft.%1$I SET status = %4$L WHERE %2$I = %5$s',
        s.tbl, s.key, f, t, s.id));
      INSERT INTO outcomes VALUES ('UPDATE', s.entity, f, t, p.code, p.message);
    END LOOP;
    FOR t IN SELECT status FROM etl_craft.eng_statuses WHERE entity = s.entity LOOP
      p := etl_test.probe(format(s.insert_sql, t));
      INSERT INTO outcomes VALUES ('INSERT', s.entity, NULL, t, p.code, p.message);
    END LOOP;
  END LOOP;
END
$$;

-- What each outcome should have been: allowed pairs (and initial statuses) succeed; an ended attempt is final, so
-- any change of it is refused by _020_ended_rows_are_final (EC002) before the guard; the rest are refused by EC010.
CREATE TEMP VIEW judged AS
SELECT o.*, x.allowed,
       CASE WHEN x.allowed THEN '00000'
            WHEN o.entity = 'ATTEMPT' AND o.op = 'UPDATE' AND st.is_terminal = 'Y' THEN 'EC002'
            ELSE 'EC010' END AS expected
  FROM outcomes o
  LEFT JOIN etl_craft.eng_statuses st ON st.entity = o.entity AND st.status = o.from_status
  CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM etl_craft.eng_transitions tr
                                      WHERE tr.entity = o.entity AND tr.from_status IS NOT DISTINCT FROM o.from_status
                                        AND tr.to_status = o.to_status) AS allowed) x;

-- 1: every pair and every status was tried (RUN 6 x 5, TASK_RUN 5 x 4, ATTEMPT 8 x 7 pairs), and as many were allowed
-- as ENG_TRANSITIONS lists.
SELECT set_eq(
  'SELECT op, entity, count(*) AS tried, count(*) FILTER (WHERE allowed) AS allowed FROM judged GROUP BY op, entity',
  $$VALUES ('UPDATE', 'RUN', 30::bigint, 20::bigint), ('UPDATE', 'TASK_RUN', 20, 17), ('UPDATE', 'ATTEMPT', 56, 13),
           ('INSERT', 'RUN', 6, 2), ('INSERT', 'TASK_RUN', 5, 4), ('INSERT', 'ATTEMPT', 8, 1)$$,
  'all 106 status pairs and 19 inserted statuses were tried, 50 pairs and 7 statuses of them allowed');

-- 3: every allowed pair is accepted.
SELECT is_empty(format($$SELECT from_status, to_status, code, message FROM judged
                           WHERE op = 'UPDATE' AND entity = %L AND allowed AND code <> '00000'$$, entity),
  format('every allowed %s (from, to) pair of ENG_TRANSITIONS is accepted on %s', entity, tbl))
  FROM subjects ORDER BY entity DESC;
-- 3: every other pair is refused with EC010 (by the guard) or, from an ended attempt, EC002.
SELECT is_empty(format($$SELECT from_status, to_status, code, expected, message FROM judged
                           WHERE op = 'UPDATE' AND entity = %L AND NOT allowed AND code <> expected$$, entity),
  format('every %s (from, to) pair not in ENG_TRANSITIONS is refused on %s (EC010%s)', entity, tbl,
         CASE WHEN entity = 'ATTEMPT' THEN '; EC002 from an ended attempt' ELSE '' END))
  FROM subjects ORDER BY entity DESC;
-- 3: only the initial statuses may be inserted; any other is refused with EC010.
SELECT is_empty(format($$SELECT to_status, code, expected, message FROM judged
                           WHERE op = 'INSERT' AND entity = %L AND code <> expected$$, entity),
  format('a new %s row starts only in an initial status of ENG_TRANSITIONS; any other is refused (EC010)', entity))
  FROM subjects ORDER BY entity DESC;

-- 3: setting a row to the status it already has is no transition and passes.
SELECT lives_ok(format('UPDATE etl_craft.%I SET status = status WHERE %I = %s', tbl, key, id),
  format('%s: an UPDATE that keeps STATUS unchanged is not a transition and is accepted', upper(tbl)))
  FROM subjects ORDER BY entity DESC;

-- 3: the EC010 message names the table, the key, both statuses and what the state machine allows instead.
SELECT etl_test.refused(
  format($$UPDATE etl_craft.aud_pipelines_run_log SET status = 'QUEUED' WHERE pipeline_run_id = %s$$, id), 'EC010',
  format('AUD_PIPELINES_RUN_LOG PIPELINE_RUN_ID=%s: status IN-PROGRESS -> QUEUED is not an allowed transition (from IN-PROGRESS the state machine allows: SUCCESS, FAILED, SKIPPED, CANCELLED)%%', id),
  'AUD_PIPELINES_RUN_LOG IN-PROGRESS -> QUEUED is refused (EC010) with a message naming the table, the key and both statuses')
  FROM subjects WHERE entity = 'RUN';
SELECT etl_test.refused(
  format($$UPDATE etl_craft.aud_task_attempts SET status = 'RUNNING' WHERE attempt_id = %s$$, id), 'EC010',
  format('AUD_TASK_ATTEMPTS ATTEMPT_ID=%s: status QUEUED -> RUNNING is not an allowed transition (from QUEUED the state machine allows: CLAIMED, FAILED, CANCELLED)%%', id),
  'AUD_TASK_ATTEMPTS QUEUED -> RUNNING is refused (EC010) with a message naming the table, the key and both statuses')
  FROM subjects WHERE entity = 'ATTEMPT';
UPDATE etl_craft.aud_task_run_log SET status = 'SUCCESS'
 WHERE task_run_id = (SELECT id FROM subjects WHERE entity = 'TASK_RUN');
SELECT etl_test.refused(
  format($$UPDATE etl_craft.aud_task_run_log SET status = 'CANCELLED' WHERE task_run_id = %s$$, id), 'EC010',
  format('AUD_TASK_RUN_LOG TASK_RUN_ID=%s: status SUCCESS -> CANCELLED is not an allowed transition (from SUCCESS the state machine allows: IN-PROGRESS, FAILED, SKIPPED)%%', id),
  'AUD_TASK_RUN_LOG SUCCESS -> CANCELLED is refused (EC010) with a message naming the table, the key and both statuses')
  FROM subjects WHERE entity = 'TASK_RUN';

-- 3: an insert in a non-initial status is refused with a message naming the table, the status and the initial ones.
SELECT throws_like(format(insert_sql, bad),
  format('EC010: %s %s=%%: a new row cannot start in status %s; it starts in %s', upper(tbl), upper(key), bad, initial),
  format('a new %s row in status %s is refused with a message naming the table, the status and %s', upper(tbl), bad,
         initial))
  FROM subjects JOIN (VALUES ('RUN', 'SUCCESS', 'QUEUED or IN-PROGRESS'),
                             ('TASK_RUN', 'CANCELLED', 'IN-PROGRESS or SKIPPED or SUCCESS or FAILED'),
                             ('ATTEMPT', 'RUNNING', 'QUEUED')) AS b(entity, bad, initial) USING (entity)
 ORDER BY entity DESC;

SELECT * FROM finish();
ROLLBACK;
