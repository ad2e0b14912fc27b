-- 036_schedules: the runs of a schedule tick, for every due pipeline in one call. A server creates up to a
-- thousand runs at one tick; one call per run spends most of its time on round trips and statement starts, so the
-- tick's runs are created, skipped and admitted here as sets, by the same rules as create_run and admit_run.

-- @function create_scheduled_runs
-- @args ticks text, owner_id text = NULL, lease_seconds int = 60, config_sha256 text = NULL, retries int = NULL, retry_delay_seconds int = NULL, retry_backoff float = NULL, durable bool = true
-- @returns ord bigint, pipeline_id bigint, run_key text, pipeline_run_id bigint, status text, created bool, message text
-- @purpose Create the SCHEDULE runs of due ticks, many pipelines at once. ticks is a JSON array of objects
--   {ord, pipeline_id, run_key, run_date, skip_reason, catching_up}, ord numbering them in the order their runs are
--   to be created (a pipeline's ticks oldest first). Each tick's run is created QUEUED as create_run creates it (the
--   key schedule:<tick> is unique per pipeline, so a tick already created returns its run with created false; a
--   pipeline switched off or paused gets no run, and its row says why). A new run then ends SKIPPED at once when its
--   tick has a skip_reason (missed while no server ran), or when its pipeline's OVERLAP_POLICY is SKIP and an earlier
--   run of the pipeline is QUEUED or IN-PROGRESS, unless catching_up (a missed tick CATCHUP keeps). With owner_id, each
--   new QUEUED run that is its pipeline's oldest, of a pipeline without an active pipeline dependency (no gate to judge)
--   and with no run IN-PROGRESS, is admitted here: IN-PROGRESS, owned by owner_id with a lease of lease_seconds, as
--   admit_run would admit it; the others stay QUEUED for admit_run. With durable false (PostgreSQL; SQLite ignores it)
--   the commit does not wait for the WAL flush: a server creates the runs of a tick again (same keys) if a crash of the
--   database loses them. One row per tick, in ord order.
-- @transition RUN (none) -> QUEUED; QUEUED -> SKIPPED (a missed tick, or the overlap policy); QUEUED ->
--   IN-PROGRESS (a pipeline without a gate)
-- @locks PostgreSQL: the rows of the ticks' pipelines (FOR NO KEY UPDATE, as admit_run takes them), then the
--   ux_run_key entries of the keys. SQLite: the database (BEGIN IMMEDIATE)
-- @errors EC023 ticks is not a JSON array of tick objects, a retry default is out of range, or lease_seconds is
--   below 1
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'create_scheduled_runs' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.create_scheduled_runs(
  p_ticks text,
  p_owner_id text DEFAULT NULL,
  p_lease_seconds integer DEFAULT 60,
  p_config_sha256 text DEFAULT NULL,
  p_retries integer DEFAULT NULL,
  p_retry_delay_seconds integer DEFAULT NULL,
  p_retry_backoff double precision DEFAULT NULL,
  p_durable boolean DEFAULT true,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (ord bigint, pipeline_id bigint, run_key text, pipeline_run_id bigint, status text, created boolean, message text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_existing bigint[];
  v_durability text;
BEGIN
  IF NOT COALESCE(p_durable, true) THEN
    v_durability := set_config('synchronous_commit', 'off', true);  -- an expression: no executor, unlike PERFORM
  END IF;
  BEGIN
    PERFORM CAST(p_ticks AS jsonb);
  EXCEPTION WHEN invalid_text_representation THEN
    SELECT 'EC023: ' || ('ticks is a JSON array of objects {ord, pipeline_id, run_key, run_date, skip_reason, catching_up}, not ' || left(p_ticks, 200)) INTO v_failure;
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
    END IF;
  END;
  SELECT 'EC023: ' || ('ticks is a JSON array of objects {ord, pipeline_id, run_key, run_date, skip_reason, catching_up}, not ' || left(p_ticks, 200)) INTO v_failure
    WHERE p_ticks IS NULL OR jsonb_typeof(CAST(p_ticks AS jsonb)) <> 'array'
       OR EXISTS (SELECT 1 FROM jsonb_array_elements(CAST(p_ticks AS jsonb)) e
                   WHERE jsonb_typeof(e) <> 'object' OR e->>'pipeline_id' IS NULL OR e->>'run_key' IS NULL
                      OR e->>'run_date' IS NULL OR e->>'ord' IS NULL);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  IF p_retries < 0 OR p_retry_delay_seconds < 0 OR p_retry_backoff < 1 THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('the retry defaults are retries >= 0, retry_delay_seconds >= 0 and retry_backoff >= 1, not ' || COALESCE(CAST(p_retries AS text), 'NULL') || ', ' || COALESCE(CAST(p_retry_delay_seconds AS text), 'NULL') || ' and ' || COALESCE(CAST(p_retry_backoff AS text), 'NULL') || '; fix Orchestration: Retries, Retry_delay_seconds or Retry_backoff in craft-connector.yml'), 'EC023');
  END IF;
  IF p_lease_seconds IS NULL OR p_lease_seconds < 1 THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('lease_seconds must be at least 1, not ' || COALESCE(CAST(p_lease_seconds AS text), 'NULL')), 'EC023');
  END IF;
  -- Admissions of one pipeline take turns on its pipeline row (as in admit_run), so the runs IN-PROGRESS read below
  -- are every one there is.
  PERFORM 1 FROM etl_craft.CFG_PIPELINES p WHERE p.PIPELINE_ID IN (SELECT t.pipeline_id FROM (SELECT x.ord, x.pipeline_id, x.run_key, x.run_date, x.skip_reason,
          CASE WHEN COALESCE(x.catching_up, false) THEN 1 ELSE 0 END AS catching_up
     FROM jsonb_to_recordset(CAST(p_ticks AS jsonb))
       AS x(ord bigint, pipeline_id bigint, run_key text, run_date date, skip_reason text, catching_up boolean)) t)
   ORDER BY p.PIPELINE_ID FOR NO KEY UPDATE;
  SELECT array_agg(r.PIPELINE_RUN_ID) INTO v_existing FROM (SELECT x.ord, x.pipeline_id, x.run_key, x.run_date, x.skip_reason,
          CASE WHEN COALESCE(x.catching_up, false) THEN 1 ELSE 0 END AS catching_up
     FROM jsonb_to_recordset(CAST(p_ticks AS jsonb))
       AS x(ord bigint, pipeline_id bigint, run_key text, run_date date, skip_reason text, catching_up boolean)) t JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_ID = t.pipeline_id AND r.RUN_KEY = t.run_key;
  INSERT INTO etl_craft.AUD_PIPELINES_RUN_LOG
    (PIPELINE_ID, RUN_KEY, TRIGGER_KIND, RUN_DATE, STATUS, QUEUED_AT, CONFIG_SHA256, STARTED_BY, STARTED_BY_KIND,
     DEFAULT_RETRIES, DEFAULT_RETRY_DELAY_SECONDS, DEFAULT_RETRY_BACKOFF, BUNDLE_ID)
  SELECT t.pipeline_id, t.run_key, 'SCHEDULE', t.run_date, 'QUEUED', v_now, p_config_sha256,
         etl_craft._actor(), etl_craft._actor_kind(), p_retries, p_retry_delay_seconds,
         p_retry_backoff,
         -- the bundle each run pins, as create_run pins it: its project's latest
         (SELECT max(b.BUNDLE_ID) FROM etl_craft.AUD_PROJECT_BUNDLES b WHERE b.PROJECT_ID = p.PROJECT_ID)
    FROM (SELECT x.ord, x.pipeline_id, x.run_key, x.run_date, x.skip_reason,
          CASE WHEN COALESCE(x.catching_up, false) THEN 1 ELSE 0 END AS catching_up
     FROM jsonb_to_recordset(CAST(p_ticks AS jsonb))
       AS x(ord bigint, pipeline_id bigint, run_key text, run_date date, skip_reason text, catching_up boolean)) t JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = t.pipeline_id AND p.ACTIVE_FLAG = 'Y'
   WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINE_PAUSES z WHERE z.PIPELINE_ID = t.pipeline_id AND z.RESUMED_AT IS NULL)
   ORDER BY t.ord
  ON CONFLICT DO NOTHING;
  -- A missed tick, or one the overlap policy skips: it ends at once, its reason as its message.
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG AS u
     SET STATUS = 'SKIPPED', END_DATE = v_now, ENDED_BY = etl_craft._actor(), ENDED_BY_KIND = etl_craft._actor_kind(),
         MESSAGE = (SELECT COALESCE(t.skip_reason,
                      (SELECT 'previous run still active: run ' || o.PIPELINE_RUN_ID || ' (' || o.RUN_KEY || ') is '
                              || o.STATUS || ' and the pipeline''s OVERLAP_POLICY is SKIP'
                         FROM etl_craft.AUD_PIPELINES_RUN_LOG o JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = o.PIPELINE_ID
                        WHERE o.PIPELINE_ID = t.pipeline_id AND o.PIPELINE_RUN_ID < u.PIPELINE_RUN_ID
                          AND o.STATUS IN ('QUEUED', 'IN-PROGRESS') AND p.OVERLAP_POLICY = 'SKIP' AND t.catching_up = 0
                        ORDER BY o.PIPELINE_RUN_ID LIMIT 1))
                      FROM (SELECT x.ord, x.pipeline_id, x.run_key, x.run_date, x.skip_reason,
          CASE WHEN COALESCE(x.catching_up, false) THEN 1 ELSE 0 END AS catching_up
     FROM jsonb_to_recordset(CAST(p_ticks AS jsonb))
       AS x(ord bigint, pipeline_id bigint, run_key text, run_date date, skip_reason text, catching_up boolean)) t
                     WHERE t.pipeline_id = u.PIPELINE_ID AND t.run_key = u.RUN_KEY)
   WHERE STATUS = 'QUEUED' AND TRIGGER_KIND = 'SCHEDULE'
     AND PIPELINE_RUN_ID IN (SELECT r.PIPELINE_RUN_ID FROM (SELECT x.ord, x.pipeline_id, x.run_key, x.run_date, x.skip_reason,
          CASE WHEN COALESCE(x.catching_up, false) THEN 1 ELSE 0 END AS catching_up
     FROM jsonb_to_recordset(CAST(p_ticks AS jsonb))
       AS x(ord bigint, pipeline_id bigint, run_key text, run_date date, skip_reason text, catching_up boolean)) t JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_ID = t.pipeline_id AND r.RUN_KEY = t.run_key)
     AND NOT COALESCE(PIPELINE_RUN_ID = ANY (v_existing), false)
     AND EXISTS (SELECT 1 FROM (SELECT x.ord, x.pipeline_id, x.run_key, x.run_date, x.skip_reason,
          CASE WHEN COALESCE(x.catching_up, false) THEN 1 ELSE 0 END AS catching_up
     FROM jsonb_to_recordset(CAST(p_ticks AS jsonb))
       AS x(ord bigint, pipeline_id bigint, run_key text, run_date date, skip_reason text, catching_up boolean)) t
                  WHERE t.pipeline_id = u.PIPELINE_ID AND t.run_key = u.RUN_KEY
                    AND (t.skip_reason IS NOT NULL
                         OR (t.catching_up = 0 AND EXISTS (
                               SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG o JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = o.PIPELINE_ID
                                WHERE o.PIPELINE_ID = t.pipeline_id AND o.PIPELINE_RUN_ID < u.PIPELINE_RUN_ID
                                  AND o.STATUS IN ('QUEUED', 'IN-PROGRESS') AND p.OVERLAP_POLICY = 'SKIP'))));
  -- A new run with no gate to judge, its pipeline's oldest QUEUED and none IN-PROGRESS, is admitted as admit_run
  -- admits it (no decision to record: its pipeline has no active pipeline dependency).
  UPDATE etl_craft.AUD_PIPELINES_RUN_LOG AS u
     SET STATUS = 'IN-PROGRESS', START_DATE = v_now, OWNER_ID = p_owner_id,
         LEASE_EXPIRES_AT = (v_now + make_interval(secs => p_lease_seconds)), HEARTBEAT_AT = v_now
   WHERE p_owner_id IS NOT NULL AND STATUS = 'QUEUED'
     AND PIPELINE_RUN_ID IN (SELECT r.PIPELINE_RUN_ID FROM (SELECT x.ord, x.pipeline_id, x.run_key, x.run_date, x.skip_reason,
          CASE WHEN COALESCE(x.catching_up, false) THEN 1 ELSE 0 END AS catching_up
     FROM jsonb_to_recordset(CAST(p_ticks AS jsonb))
       AS x(ord bigint, pipeline_id bigint, run_key text, run_date date, skip_reason text, catching_up boolean)) t JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_ID = t.pipeline_id AND r.RUN_KEY = t.run_key)
     AND NOT COALESCE(PIPELINE_RUN_ID = ANY (v_existing), false)
     AND PIPELINE_RUN_ID = (SELECT MIN(q.PIPELINE_RUN_ID) FROM etl_craft.AUD_PIPELINES_RUN_LOG q
                             WHERE q.PIPELINE_ID = u.PIPELINE_ID AND q.STATUS = 'QUEUED')
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG i WHERE i.PIPELINE_ID = u.PIPELINE_ID AND i.STATUS = 'IN-PROGRESS')
     AND NOT EXISTS (SELECT 1 FROM etl_craft.CFG_PIPELINE_DEPENDENCY d
                      WHERE d.PIPELINE_ID = u.PIPELINE_ID AND d.ACTIVE_FLAG = 'Y');
  PERFORM pg_notify('etl_craft_events', 'create_run:scheduled');
  RETURN QUERY
  SELECT q.ord::bigint, q.pipeline_id::bigint, q.run_key::text, q.pipeline_run_id::bigint, q.status::text, q.created::boolean, q.message::text
    FROM (
      SELECT t.ord, t.pipeline_id, t.run_key, r.PIPELINE_RUN_ID, r.STATUS,
             CASE WHEN r.PIPELINE_RUN_ID IS NULL THEN NULL
                  ELSE NOT COALESCE(r.PIPELINE_RUN_ID = ANY (v_existing), false) END,
             CASE WHEN r.PIPELINE_RUN_ID IS NOT NULL THEN r.MESSAGE
                  WHEN p.PIPELINE_ID IS NULL OR p.ACTIVE_FLAG <> 'Y'
                    THEN 'pipeline ' || t.pipeline_id || ' does not exist or is switched off (ACTIVE_FLAG = N): no run'
                  ELSE 'pipeline ' || p.PIPELINE_CODE || ' is paused: a paused pipeline starts no run' END
        FROM (SELECT x.ord, x.pipeline_id, x.run_key, x.run_date, x.skip_reason,
              CASE WHEN COALESCE(x.catching_up, false) THEN 1 ELSE 0 END AS catching_up
         FROM jsonb_to_recordset(CAST(p_ticks AS jsonb))
           AS x(ord bigint, pipeline_id bigint, run_key text, run_date date, skip_reason text, catching_up boolean)) t
        LEFT JOIN etl_craft.AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_ID = t.pipeline_id AND r.RUN_KEY = t.run_key
        LEFT JOIN etl_craft.CFG_PIPELINES p ON p.PIPELINE_ID = t.pipeline_id
       ORDER BY t.ord
    ) AS q(ord, pipeline_id, run_key, pipeline_run_id, status, created, message);
END
$fn$;
-- @end create_scheduled_runs
