-- 076_carried_offsets: the offsets etl-craft engine copy carries from one Engine DB into a new one, so that the
-- first ingestion attempt in the new database goes on from where the old one stopped. A carried offset names the
-- Engine DB and the attempt that stored it (migration 0014); the task's next SUCCESS replaces it with its own.

-- @function carry_offset
-- @args task_id bigint, offset_type text, offset_value text, stored_at timestamptz, source_engine_id text, source_attempt_id bigint
-- @returns task_id bigint, offset_type text, offset_value text, stored_at timestamptz
-- @purpose Give task task_id the offset that attempt source_attempt_id of another Engine DB (ENG_SETTINGS ENGINE_ID
--   source_engine_id) stored at stored_at, as that database's last offset of the same task: etl-craft engine copy
--   calls it for each task, so the task's next attempt here goes on from there. Only an Engine DB where nothing has run
--   yet takes one (an offset stored here is newer than any other database's), and each task takes one only once. The
--   row keeps stored_at and names its source instead of a task run and attempt of this database; the task's next
--   SUCCESS replaces it (finish_attempt).
-- @transition none (writes the task's AUD_TASK_OFFSETS row)
-- @locks the task's AUD_TASK_OFFSETS row
-- @errors EC021 no such task; EC023 this Engine DB has runs, the task has an offset already, the source is this
--   Engine DB itself or not an Engine DB identity, or offset_type is not an offset type
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'carry_offset' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.carry_offset(
  p_task_id bigint,
  p_offset_type text,
  p_offset_value text,
  p_stored_at timestamptz,
  p_source_engine_id text,
  p_source_attempt_id bigint,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (task_id bigint, offset_type text, offset_value text, stored_at timestamptz)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
BEGIN
  IF EXISTS (SELECT 1 FROM etl_craft.AUD_PIPELINES_RUN_LOG) THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('carry_offset writes only into an Engine DB where nothing has run yet; this one has ' || (SELECT COUNT(*) FROM etl_craft.AUD_PIPELINES_RUN_LOG) || ' run(s), whose offsets are newer than any other database''s: carry offsets into a new Engine DB (etl-craft engine copy --to URL)'), 'EC023');
  END IF;
  IF NOT EXISTS (SELECT 1 FROM etl_craft.CFG_TASKS WHERE TASK_ID = p_task_id) THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE('EC021: ' || ('task ' || COALESCE(CAST(p_task_id AS text), 'NULL') || ' does not exist in this Engine DB; apply the project''s migrations first (etl-craft migrate) and name the task by the id it has here'), 'EC021');
  END IF;
  IF p_source_engine_id IS NULL OR p_source_engine_id !~ '^[0-9a-f]{32}$' THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('the source ' || COALESCE(CAST(p_source_engine_id AS text), 'NULL') || ' is not an Engine DB identity (ENG_SETTINGS ENGINE_ID: 32 hex digits); read it from the database the offset comes from'), 'EC023');
  END IF;
  IF EXISTS (SELECT 1 FROM etl_craft.ENG_SETTINGS WHERE SETTING = 'ENGINE_ID' AND VALUE = p_source_engine_id) THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('the offset of task ' || p_task_id || ' comes from Engine DB ' || p_source_engine_id || ', which is this one: an Engine DB already has its own offsets; carry them into another Engine DB'), 'EC023');
  END IF;
  IF p_offset_value IS NULL OR p_offset_type IS NULL OR p_offset_type NOT IN ('INTEGER', 'DECIMAL', 'TEXT', 'DATE', 'TIMESTAMP') THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('the offset ' || COALESCE(CAST(p_offset_value AS text), 'NULL') || ' needs an offset_type of INTEGER, DECIMAL, TEXT, DATE, TIMESTAMP, not ' || COALESCE(CAST(p_offset_type AS text), 'NULL') || '; nothing was recorded'), 'EC023');
  END IF;
  IF p_stored_at IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('carry_offset needs the time the offset was stored in its source (stored_at), not NULL'), 'EC023');
  END IF;
  IF EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_OFFSETS WHERE TASK_ID = p_task_id) THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('task ' || p_task_id || ' has an offset already (' || (SELECT o.OFFSET_VALUE || ', stored ' || COALESCE(to_char(o.STORED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') FROM etl_craft.AUD_TASK_OFFSETS o WHERE o.TASK_ID = p_task_id) || '): a task takes a carried offset only once, into an Engine DB where it has none'), 'EC023');
  END IF;
  INSERT INTO etl_craft.AUD_TASK_OFFSETS (TASK_ID, OFFSET_TYPE, OFFSET_VALUE, STORED_AT, SOURCE_ENGINE_ID, SOURCE_ATTEMPT_ID)
  VALUES (p_task_id, p_offset_type, p_offset_value, p_stored_at,
          p_source_engine_id, p_source_attempt_id);
  RETURN QUERY
  SELECT q.task_id::bigint, q.offset_type::text, q.offset_value::text, q.stored_at::timestamptz
    FROM (
      SELECT o.TASK_ID, o.OFFSET_TYPE, o.OFFSET_VALUE, o.STORED_AT FROM etl_craft.AUD_TASK_OFFSETS o WHERE o.TASK_ID = p_task_id
    ) AS q(task_id, offset_type, offset_value, stored_at);
END
$fn$;
-- @end carry_offset
