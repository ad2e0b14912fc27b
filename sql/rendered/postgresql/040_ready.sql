-- 040_ready: the ready set of a run: which tasks to run next and which can never run, from the run's own task
-- runs and the pipeline's in-pipeline dependencies. Cross-pipeline edges are gates (045_gates), judged there.

-- @function ready_tasks
-- @args run_id bigint
-- @returns task_id bigint, task_code text, decision text, reason text
-- @purpose The run's ready set, ordered by task code: decision RUN for each task to queue now, SKIP for each
--   task whose dependencies can never be met (the caller records it with skip_task_run). Reads only; writes nothing.
--   Candidates are the pipeline's active tasks without a task run in this run, and those whose task run the engine
--   skipped (an operator's skip, by skip_task_run(by_operator) or a mark to SKIPPED, stands). Only in-pipeline edges
--   count (CFG_TASK_DEPENDENCY with both tasks active in this pipeline and ACTIVE_FLAG = 'Y'). An edge is settled
--   when its upstream task run is SUCCESS, FAILED, SKIPPED or CANCELLED, and met by type: SUCCESS an upstream
--   SUCCESS; FAILURE an upstream FAILED; HAS_DATA an upstream SUCCESS that wrote rows (ROWS_WRITTEN > 0, B42);
--   ALWAYS any settled upstream. RUN_CONDITION ALL: RUN when every edge is met, SKIP once one settled edge is unmet.
--   ANY: RUN once one edge is met, SKIP when every edge is settled and none is met. A task without edges is RUN.
--   An engine-skipped task that now qualifies is RUN again (a rerun of its failed upstream makes it run: B25); one
--   that still qualifies as SKIP is not returned again. A task whose task gate waits (an open AUD_GATE_WAITS row, see
--   queue_attempt) is not returned before its NEXT_CHECK_AT. Nothing is returned for a run that is not IN-PROGRESS, is
--   being cancelled, or whose pipeline is paused.
-- @transition none (reads only)
-- @locks none
-- @errors EC021 no such run
-- @readonly yes
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'ready_tasks' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.ready_tasks(
  p_run_id bigint,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (task_id bigint, task_code text, decision text, reason text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft.clock_now();
  v_rows bigint;
  v_failure text;
  v_pipeline_id bigint;
BEGIN
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  -- The run's pipeline, or NULL (nothing is ready) when the run is not running, is being cancelled, or is paused.
  SELECT r.PIPELINE_ID INTO v_pipeline_id
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r
   WHERE r.PIPELINE_RUN_ID = p_run_id AND r.STATUS = 'IN-PROGRESS' AND r.CANCEL_REQUESTED_AT IS NULL
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINE_PAUSES z WHERE z.PIPELINE_ID = r.PIPELINE_ID AND z.RESUMED_AT IS NULL);
  RETURN QUERY
  SELECT q.task_id::bigint, q.task_code::text, q.decision::text, q.reason::text
    FROM (
      WITH judged AS MATERIALIZED (
        -- One set-based statement. The edges of every task of the pipeline are judged once (MATERIALIZED: computed a
        -- single time even when the planner, before ANALYZE has seen new metadata, would rejoin them per task), then
        -- joined to the candidates. A 500-task pipeline takes milliseconds (about 0.1 s on never-analyzed tables).
        SELECT w.TASK_ID AS TASK_ID, COUNT(*) AS EDGES,
               SUM(CASE WHEN w.STATE = 'MET' THEN 1 ELSE 0 END) AS MET,
               SUM(CASE WHEN w.STATE = 'UNMET' THEN 1 ELSE 0 END) AS UNMET,
               MAX(CASE WHEN w.N = 1 AND w.STATE = 'UNMET' THEN w.WHY END) AS FIRST_UNMET
          FROM (
            SELECT e.TASK_ID AS TASK_ID, e.STATE AS STATE, e.WHY AS WHY,
                   ROW_NUMBER() OVER (PARTITION BY e.TASK_ID
                                      ORDER BY CASE WHEN e.STATE = 'UNMET' THEN 0 ELSE 1 END, e.UP_CODE) AS N
              FROM (
                -- Each edge judged: OPEN (upstream not settled), MET, or UNMET (it can never be met).
                SELECT d.TASK_ID AS TASK_ID, u.TASK_CODE AS UP_CODE, d.DEPENDENCY_TYPE AS DEPENDENCY_TYPE, ur.STATUS AS UP_STATUS,
                       ur.ROWS_WRITTEN AS UP_ROWS,
                       CASE WHEN ur.STATUS IS NULL OR ur.STATUS NOT IN ('SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED')
                            THEN 'OPEN'
                            WHEN d.DEPENDENCY_TYPE = 'ALWAYS'
                              OR (d.DEPENDENCY_TYPE = 'SUCCESS' AND ur.STATUS = 'SUCCESS')
                              OR (d.DEPENDENCY_TYPE = 'FAILURE' AND ur.STATUS = 'FAILED')
                              OR (d.DEPENDENCY_TYPE = 'HAS_DATA' AND ur.STATUS = 'SUCCESS' AND ur.ROWS_WRITTEN > 0)
                            THEN 'MET'
                            ELSE 'UNMET' END AS STATE,
                       u.TASK_CODE || ' ended ' || COALESCE(ur.STATUS, 'nothing')
                         || CASE WHEN d.DEPENDENCY_TYPE = 'HAS_DATA' AND ur.STATUS = 'SUCCESS'
                                 THEN ' having written ' || COALESCE(CAST(ur.ROWS_WRITTEN AS TEXT), 'no') || ' rows' ELSE '' END
                         || '; its ' || d.DEPENDENCY_TYPE || ' dependency can never be met' AS WHY
                  FROM etl_craft.CFG_TASKS dn
                  JOIN etl_craft.CFG_TASK_DEPENDENCY d ON d.TASK_ID = dn.TASK_ID AND d.ACTIVE_FLAG = 'Y'
                  JOIN etl_craft.CFG_TASKS u
                    ON u.TASK_ID = d.DEPENDS_ON_TASK_ID AND u.PIPELINE_ID = dn.PIPELINE_ID AND u.ACTIVE_FLAG = 'Y'
                  LEFT JOIN etl_craft.AUD_TASK_RUN_LOG ur ON ur.PIPELINE_RUN_ID = p_run_id AND ur.TASK_ID = u.TASK_ID
                 WHERE dn.PIPELINE_ID = v_pipeline_id AND dn.ACTIVE_FLAG = 'Y'
              ) e
          ) w
         GROUP BY w.TASK_ID
      )
      SELECT c.TASK_ID, c.TASK_CODE, c.DECISION,
             CASE WHEN c.DECISION = 'RUN' AND c.EDGES IS NULL THEN 'no dependencies'
                  WHEN c.DECISION = 'RUN' THEN 'dependencies met'
                  WHEN c.RUN_CONDITION = 'ANY' AND c.UNMET > 1
                  THEN c.FIRST_UNMET || ', nor can the other ' || (c.UNMET - 1) || ' of this ANY task'
                  ELSE c.FIRST_UNMET
             END
        FROM (
          SELECT t.TASK_ID AS TASK_ID, t.TASK_CODE AS TASK_CODE, t.RUN_CONDITION AS RUN_CONDITION,
                 tr.TASK_RUN_ID AS SKIPPED_ID, g.EDGES AS EDGES, g.UNMET AS UNMET, g.FIRST_UNMET AS FIRST_UNMET,
                 CASE WHEN g.TASK_ID IS NULL THEN 'RUN'
                      WHEN t.RUN_CONDITION = 'ANY' AND g.MET > 0 THEN 'RUN'
                      WHEN t.RUN_CONDITION = 'ANY' AND g.UNMET = g.EDGES THEN 'SKIP'
                      WHEN t.RUN_CONDITION <> 'ANY' AND g.MET = g.EDGES THEN 'RUN'
                      WHEN t.RUN_CONDITION <> 'ANY' AND g.UNMET > 0 THEN 'SKIP'
                 END AS DECISION
            FROM etl_craft.CFG_TASKS t
            LEFT JOIN etl_craft.AUD_TASK_RUN_LOG tr ON tr.PIPELINE_RUN_ID = p_run_id AND tr.TASK_ID = t.TASK_ID
            LEFT JOIN judged g ON g.TASK_ID = t.TASK_ID
           WHERE t.PIPELINE_ID = v_pipeline_id AND t.ACTIVE_FLAG = 'Y'
             -- Candidates: no task run yet, or one the engine skipped. An operator's skip (SKIP, or MARK to SKIPPED)
             -- stands.
             AND (tr.TASK_RUN_ID IS NULL
                  OR (tr.STATUS = 'SKIPPED'
                      AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_RUN_INTERVENTIONS i
                                       WHERE i.PIPELINE_RUN_ID = p_run_id AND i.TASK_RUN_ID = tr.TASK_RUN_ID
                                         AND i.INTERVENTION IN ('SKIP', 'MARK') AND i.TO_STATUS = 'SKIPPED')))
             -- A task whose gate waits (queue_attempt kept its wait) is left out until its next look.
             AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_GATE_WAITS w
                              WHERE w.PIPELINE_RUN_ID = p_run_id AND w.TASK_ID = t.TASK_ID
                                AND w.ENDED_AT IS NULL AND w.NEXT_CHECK_AT > v_now)
        ) c
       WHERE c.DECISION = 'RUN' OR (c.DECISION = 'SKIP' AND c.SKIPPED_ID IS NULL)
       ORDER BY c.TASK_CODE
    ) AS q(task_id, task_code, decision, reason);
END
$fn$;
-- @end ready_tasks

-- @function ready_successors
-- @args run_id bigint, task_id bigint
-- @returns task_id bigint, task_code text, decision text, reason text
-- @purpose What ready_tasks(run_id) decides for the successors of task task_id (the active tasks of the run's
--   pipeline with an active CFG_TASK_DEPENDENCY edge on it), and nothing else: the same rows, decisions and reasons,
--   by the same rules, ordered by task code. Called when an attempt of task_id ended, it judges only the edges of
--   those successors (all their upstreams, read through ix_task_dependency_upstream and the task keys), so its work
--   does not grow with the pipeline: a link of a 1,000-task chain costs what a link of a 10-task one does. A task with
--   no successor in the run's pipeline returns nothing; so does a run that ready_tasks would return nothing for (not
--   IN-PROGRESS, being cancelled, or paused). Tasks that were ready before task_id ended are ready_tasks' to find (the
--   first call of a run, and etl-craft explain). Reads only; writes nothing.
-- @transition none (reads only)
-- @locks none
-- @errors EC021 no such run
-- @readonly yes
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'ready_successors' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.ready_successors(
  p_run_id bigint,
  p_task_id bigint,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (task_id bigint, task_code text, decision text, reason text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft.clock_now();
  v_rows bigint;
  v_failure text;
  v_pipeline_id bigint;
  v_successors bigint[];
BEGIN
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  -- The run's pipeline, or NULL (nothing is ready) when the run is not running, is being cancelled, or is paused.
  SELECT r.PIPELINE_ID INTO v_pipeline_id
    FROM etl_craft.AUD_PIPELINES_RUN_LOG r
   WHERE r.PIPELINE_RUN_ID = p_run_id AND r.STATUS = 'IN-PROGRESS' AND r.CANCEL_REQUESTED_AT IS NULL
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINE_PAUSES z WHERE z.PIPELINE_ID = r.PIPELINE_ID AND z.RESUMED_AT IS NULL);
  -- The successors, by ix_task_dependency_upstream, held as a set of ids so that the ready set below starts from
  -- them (by the tasks' keys) whatever the planner believes of tables it has no statistics for.
  SELECT array_agg(s.TASK_ID) INTO v_successors
    FROM etl_craft.CFG_TASK_DEPENDENCY s
   WHERE s.DEPENDS_ON_TASK_ID = p_task_id AND s.ACTIVE_FLAG = 'Y';
  RETURN QUERY
  SELECT q.task_id::bigint, q.task_code::text, q.decision::text, q.reason::text
    FROM (
      SELECT c.TASK_ID, c.TASK_CODE, c.DECISION,
             CASE WHEN c.DECISION = 'RUN' AND c.EDGES IS NULL THEN 'no dependencies'
                  WHEN c.DECISION = 'RUN' THEN 'dependencies met'
                  WHEN c.RUN_CONDITION = 'ANY' AND c.UNMET > 1
                  THEN c.FIRST_UNMET || ', nor can the other ' || (c.UNMET - 1) || ' of this ANY task'
                  ELSE c.FIRST_UNMET
             END
        FROM (
          SELECT t.TASK_ID AS TASK_ID, t.TASK_CODE AS TASK_CODE, t.RUN_CONDITION AS RUN_CONDITION,
                 tr.TASK_RUN_ID AS SKIPPED_ID, g.EDGES AS EDGES, g.UNMET AS UNMET, g.FIRST_UNMET AS FIRST_UNMET,
                 CASE WHEN g.TASK_ID IS NULL THEN 'RUN'
                      WHEN t.RUN_CONDITION = 'ANY' AND g.MET > 0 THEN 'RUN'
                      WHEN t.RUN_CONDITION = 'ANY' AND g.UNMET = g.EDGES THEN 'SKIP'
                      WHEN t.RUN_CONDITION <> 'ANY' AND g.MET = g.EDGES THEN 'RUN'
                      WHEN t.RUN_CONDITION <> 'ANY' AND g.UNMET > 0 THEN 'SKIP'
                 END AS DECISION
            -- Each candidate by its key: a scan of the tasks in code order that filters the ids is what a plan made
            -- once per session, not knowing how many ids it will get, would otherwise take (it read every task).
            FROM unnest(v_successors) AS o(TASK_ID)
            JOIN LATERAL (SELECT x.TASK_ID, x.TASK_CODE, x.PIPELINE_ID, x.RUN_CONDITION, x.ACTIVE_FLAG FROM etl_craft.CFG_TASKS x
               WHERE x.TASK_ID = o.TASK_ID OFFSET 0) t ON true
            LEFT JOIN LATERAL (SELECT x.TASK_RUN_ID, x.STATUS, x.ROWS_WRITTEN FROM etl_craft.AUD_TASK_RUN_LOG x
               WHERE x.PIPELINE_RUN_ID = p_run_id AND x.TASK_ID = t.TASK_ID OFFSET 0) tr ON true
            -- Each candidate's edges judged apart, by their index (ux_task_dependency_active): joined to a set judged
            -- once instead, a plan made once per session (not knowing how many ids it gets) walked the whole set for
            -- each candidate, 3,000 x 3,000 rows for a fan-out's root.
            LEFT JOIN LATERAL (SELECT w.TASK_ID AS TASK_ID, COUNT(*) AS EDGES,
                     SUM(CASE WHEN w.STATE = 'MET' THEN 1 ELSE 0 END) AS MET,
                     SUM(CASE WHEN w.STATE = 'UNMET' THEN 1 ELSE 0 END) AS UNMET,
                     MAX(CASE WHEN w.N = 1 AND w.STATE = 'UNMET' THEN w.WHY END) AS FIRST_UNMET
                FROM (
                  SELECT e.TASK_ID AS TASK_ID, e.STATE AS STATE, e.WHY AS WHY,
                         ROW_NUMBER() OVER (PARTITION BY e.TASK_ID
                                            ORDER BY CASE WHEN e.STATE = 'UNMET' THEN 0 ELSE 1 END, e.UP_CODE) AS N
                    FROM (
                      -- Each edge judged: OPEN (upstream not settled), MET, or UNMET (it can never be met).
                      SELECT d.TASK_ID AS TASK_ID, u.TASK_CODE AS UP_CODE, d.DEPENDENCY_TYPE AS DEPENDENCY_TYPE, ur.STATUS AS UP_STATUS,
                             ur.ROWS_WRITTEN AS UP_ROWS,
                             CASE WHEN ur.STATUS IS NULL OR ur.STATUS NOT IN ('SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED')
                                  THEN 'OPEN'
                                  WHEN d.DEPENDENCY_TYPE = 'ALWAYS'
                                    OR (d.DEPENDENCY_TYPE = 'SUCCESS' AND ur.STATUS = 'SUCCESS')
                                    OR (d.DEPENDENCY_TYPE = 'FAILURE' AND ur.STATUS = 'FAILED')
                                    OR (d.DEPENDENCY_TYPE = 'HAS_DATA' AND ur.STATUS = 'SUCCESS' AND ur.ROWS_WRITTEN > 0)
                                  THEN 'MET'
                                  ELSE 'UNMET' END AS STATE,
                             u.TASK_CODE || ' ended ' || COALESCE(ur.STATUS, 'nothing')
                               || CASE WHEN d.DEPENDENCY_TYPE = 'HAS_DATA' AND ur.STATUS = 'SUCCESS'
                                       THEN ' having written ' || COALESCE(CAST(ur.ROWS_WRITTEN AS TEXT), 'no') || ' rows' ELSE '' END
                               || '; its ' || d.DEPENDENCY_TYPE || ' dependency can never be met' AS WHY
                        -- Probes (ready_successors): from the few edges `where` picks, each task and task run fetched by its key.
                        FROM etl_craft.CFG_TASK_DEPENDENCY d
                        JOIN LATERAL (SELECT x.TASK_ID, x.TASK_CODE, x.PIPELINE_ID, x.RUN_CONDITION, x.ACTIVE_FLAG FROM etl_craft.CFG_TASKS x
                           WHERE x.TASK_ID = d.TASK_ID OFFSET 0) dn ON true
                        JOIN LATERAL (SELECT x.TASK_ID, x.TASK_CODE, x.PIPELINE_ID, x.RUN_CONDITION, x.ACTIVE_FLAG FROM etl_craft.CFG_TASKS x
                           WHERE x.TASK_ID = d.DEPENDS_ON_TASK_ID OFFSET 0) u
                          ON u.PIPELINE_ID = dn.PIPELINE_ID AND u.ACTIVE_FLAG = 'Y'
                        LEFT JOIN LATERAL (SELECT x.TASK_RUN_ID, x.STATUS, x.ROWS_WRITTEN FROM etl_craft.AUD_TASK_RUN_LOG x
                           WHERE x.PIPELINE_RUN_ID = p_run_id AND x.TASK_ID = u.TASK_ID OFFSET 0) ur ON true
                       WHERE dn.PIPELINE_ID + 0 = v_pipeline_id AND d.TASK_ID = t.TASK_ID AND d.ACTIVE_FLAG = 'Y' AND dn.ACTIVE_FLAG = 'Y'
                    ) e
                ) w
               GROUP BY w.TASK_ID) g ON true
           WHERE t.PIPELINE_ID + 0 = v_pipeline_id AND t.ACTIVE_FLAG = 'Y'
             -- Candidates: no task run yet, or one the engine skipped. An operator's skip (SKIP, or MARK to SKIPPED)
             -- stands.
             AND (tr.TASK_RUN_ID IS NULL
                  OR (tr.STATUS = 'SKIPPED'
                      AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_RUN_INTERVENTIONS i
                                       WHERE i.PIPELINE_RUN_ID = p_run_id AND i.TASK_RUN_ID = tr.TASK_RUN_ID
                                         AND i.INTERVENTION IN ('SKIP', 'MARK') AND i.TO_STATUS = 'SKIPPED')))
             -- A task whose gate waits (queue_attempt kept its wait) is left out until its next look.
             AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_GATE_WAITS w
                              WHERE w.PIPELINE_RUN_ID = p_run_id AND w.TASK_ID = t.TASK_ID
                                AND w.ENDED_AT IS NULL AND w.NEXT_CHECK_AT > v_now)
        ) c
       WHERE c.DECISION = 'RUN' OR (c.DECISION = 'SKIP' AND c.SKIPPED_ID IS NULL)
       ORDER BY c.TASK_CODE
    ) AS q(task_id, task_code, decision, reason);
END
$fn$;
-- @end ready_successors

-- @function task_dependencies
-- @args run_id bigint, task_id bigint
-- @returns upstream_task_code text, dependency_type text, upstream_status text, upstream_rows_written bigint, state text, reason text
-- @purpose Why ready_tasks decides what it decides for one task: each active in-pipeline dependency of the task
--   (both tasks active), ordered by upstream code, judged by the same rule ready_tasks applies: state OPEN while the
--   upstream has not settled in the run, MET, or UNMET (it can never be met), with the upstream's status and rows
--   written, and for UNMET the reason ready_tasks gives. Dependencies on other pipelines' tasks are the task gate's
--   (queue_attempt; their decisions are in AUD_GATE_DECISIONS). Reads only; etl-craft explain shows it.
-- @transition none (reads only)
-- @locks none
-- @errors EC021 no such run
-- @readonly yes
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'task_dependencies' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.task_dependencies(
  p_run_id bigint,
  p_task_id bigint,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (upstream_task_code text, dependency_type text, upstream_status text, upstream_rows_written bigint, state text, reason text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft.clock_now();
  v_rows bigint;
  v_failure text;
BEGIN
  SELECT 'EC021: ' || ('run ' || COALESCE(CAST(p_run_id AS text), 'NULL') || ' does not exist; list runs with etl-craft history --pipeline-code P') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = p_run_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  RETURN QUERY
  SELECT q.upstream_task_code::text, q.dependency_type::text, q.upstream_status::text, q.upstream_rows_written::bigint, q.state::text, q.reason::text
    FROM (
      SELECT e.UP_CODE, e.DEPENDENCY_TYPE, e.UP_STATUS, e.UP_ROWS, e.STATE, CASE WHEN e.STATE = 'UNMET' THEN e.WHY END
        FROM (SELECT d.TASK_ID AS TASK_ID, u.TASK_CODE AS UP_CODE, d.DEPENDENCY_TYPE AS DEPENDENCY_TYPE, ur.STATUS AS UP_STATUS,
                     ur.ROWS_WRITTEN AS UP_ROWS,
                     CASE WHEN ur.STATUS IS NULL OR ur.STATUS NOT IN ('SUCCESS', 'FAILED', 'SKIPPED', 'CANCELLED')
                          THEN 'OPEN'
                          WHEN d.DEPENDENCY_TYPE = 'ALWAYS'
                            OR (d.DEPENDENCY_TYPE = 'SUCCESS' AND ur.STATUS = 'SUCCESS')
                            OR (d.DEPENDENCY_TYPE = 'FAILURE' AND ur.STATUS = 'FAILED')
                            OR (d.DEPENDENCY_TYPE = 'HAS_DATA' AND ur.STATUS = 'SUCCESS' AND ur.ROWS_WRITTEN > 0)
                          THEN 'MET'
                          ELSE 'UNMET' END AS STATE,
                     u.TASK_CODE || ' ended ' || COALESCE(ur.STATUS, 'nothing')
                       || CASE WHEN d.DEPENDENCY_TYPE = 'HAS_DATA' AND ur.STATUS = 'SUCCESS'
                               THEN ' having written ' || COALESCE(CAST(ur.ROWS_WRITTEN AS TEXT), 'no') || ' rows' ELSE '' END
                       || '; its ' || d.DEPENDENCY_TYPE || ' dependency can never be met' AS WHY
                FROM etl_craft.CFG_TASKS dn
                JOIN etl_craft.CFG_TASK_DEPENDENCY d ON d.TASK_ID = dn.TASK_ID AND d.ACTIVE_FLAG = 'Y'
                JOIN etl_craft.CFG_TASKS u
                  ON u.TASK_ID = d.DEPENDS_ON_TASK_ID AND u.PIPELINE_ID = dn.PIPELINE_ID AND u.ACTIVE_FLAG = 'Y'
                LEFT JOIN etl_craft.AUD_TASK_RUN_LOG ur ON ur.PIPELINE_RUN_ID = p_run_id AND ur.TASK_ID = u.TASK_ID
               WHERE dn.TASK_ID = p_task_id AND dn.ACTIVE_FLAG = 'Y') e
       ORDER BY e.UP_CODE
    ) AS q(upstream_task_code, dependency_type, upstream_status, upstream_rows_written, state, reason);
END
$fn$;
-- @end task_dependencies
