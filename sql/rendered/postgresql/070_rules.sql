-- 070_rules: the flags of business rules (AUD_BUSINESS_RULE_FLAGS). One open flag per rule and key; a flag closes
-- when its key meets the rule again (or is gone from the table). A BUSINESS_RULES attempt records what it found in
-- one of two ways (B52): a full check (--force, the weekly Full_check_day) judges the target table whole and hands
-- record_rule_flags every key that breaks the rule, so an open flag whose key is not among them closes; a normal
-- run judges only the keys its own run wrote and hands record_rule_scope those keys, in batches of at most 1,000,
-- so only the flags of those keys are judged again and every other flag is left as it stands. Both are fenced by
-- the attempt's owner, so a zombie attempt records nothing.

-- @function record_rule_flags
-- @args attempt_id bigint, owner_id text, business_rule_id bigint, failing_keys text
-- @returns business_rule_id bigint, flagged bigint, cleared bigint, active bigint
-- @purpose The owner of a RUNNING attempt of a BUSINESS_RULES task records what it found for one of the task's
--   active rules, having judged every current row of the task's table: failing_keys is a JSON array of the keys
--   (text) whose rows break the rule. Each such key without an open flag gets one (START_DATE, the run, task run and
--   attempt); each open flag of the rule whose key is not in the list closes (ACTIVE_FLAG N, END_DATE,
--   CLEARED_BY_ATTEMPT_ID), because its row meets the rule again or is no longer in the table (B21). The attempt's
--   heartbeat is renewed. Returns how many flags it opened and closed, and how many are open now.
-- @transition none
-- @locks the attempt row, then the rule's open flags
-- @errors EC023 failing_keys is not a JSON array of strings (or nulls) of at most 512 characters; EC021 no such attempt, or no active rule business_rule_id of the
--   attempt's task; EC020 the attempt is not RUNNING by owner_id
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'record_rule_flags' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.record_rule_flags(
  p_attempt_id bigint,
  p_owner_id text,
  p_business_rule_id bigint,
  p_failing_keys text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (business_rule_id bigint, flagged bigint, cleared bigint, active bigint)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_task_run_id bigint;
  v_pipeline_run_id bigint;
  v_task_id bigint;
  v_cleared bigint;
  v_flagged bigint;
BEGIN
  BEGIN
    PERFORM CAST(p_failing_keys AS jsonb);
  EXCEPTION WHEN invalid_text_representation THEN
    SELECT 'EC023: ' || ('failing_keys is a JSON array of the keys (strings of at most 512 characters) that break the rule, such as ["42", "57"], not ' || COALESCE(CAST(p_failing_keys AS text), 'NULL')) INTO v_failure;
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
    END IF;
  END;
  SELECT 'EC023: ' || ('failing_keys is a JSON array of the keys (strings of at most 512 characters) that break the rule, such as ["42", "57"], not ' || COALESCE(CAST(p_failing_keys AS text), 'NULL')) INTO v_failure
    WHERE p_failing_keys IS NULL OR jsonb_typeof(CAST(p_failing_keys AS jsonb)) <> 'array'
       OR EXISTS (SELECT 1 FROM jsonb_array_elements(CAST(p_failing_keys AS jsonb)) e
                   WHERE jsonb_typeof(e) NOT IN ('string', 'null')
                      OR (jsonb_typeof(e) = 'string' AND length(e #>> '{}') > 512));
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  UPDATE etl_craft.AUD_TASK_ATTEMPTS SET HEARTBEAT_AT = v_now
   WHERE ATTEMPT_ID = p_attempt_id AND STATUS = 'RUNNING' AND OWNER_ID = p_owner_id
  RETURNING TASK_RUN_ID INTO v_task_run_id;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC021: ' || ('attempt ' || COALESCE(CAST(p_attempt_id AS text), 'NULL') || ' does not exist; a run''s attempts are listed by etl-craft status --pipeline-code P') INTO v_failure
    WHERE v_rows = 0 AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC020: ' || ('attempt ' || ATTEMPT_ID || ' is ' || STATUS || COALESCE(' owned by ' || OWNER_ID, ' (unowned)') || ', expected RUNNING owned by ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || '; no flag was recorded: only the process running the attempt records what it found') INTO v_failure
    FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id AND v_rows = 0;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  SELECT t.PIPELINE_RUN_ID, t.TASK_ID INTO v_pipeline_run_id, v_task_id
    FROM etl_craft.AUD_TASK_RUN_LOG t WHERE t.TASK_RUN_ID = v_task_run_id;
  SELECT 'EC021: ' || ('business rule ' || COALESCE(CAST(p_business_rule_id AS text), 'NULL') || ' is not an active rule of task ' || v_task_id || '; the rules of a task are the rows of CFG_BUSINESS_RULES with its TASK_ID and ACTIVE_FLAG Y') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.CFG_BUSINESS_RULES r
                       WHERE r.BUSINESS_RULE_ID = p_business_rule_id AND r.TASK_ID = v_task_id
                         AND r.ACTIVE_FLAG = 'Y');
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  UPDATE etl_craft.AUD_BUSINESS_RULE_FLAGS
     SET ACTIVE_FLAG = 'N', END_DATE = v_now, CLEARED_BY_ATTEMPT_ID = p_attempt_id
   WHERE BUSINESS_RULE_ID = p_business_rule_id AND ACTIVE_FLAG = 'Y'
     AND BUSINESS_RULE_KEY NOT IN (SELECT k.value FROM (SELECT j.value FROM jsonb_array_elements_text(CAST(p_failing_keys AS jsonb)) AS j(value)) k WHERE k.value IS NOT NULL);
  GET DIAGNOSTICS v_cleared = ROW_COUNT;
  INSERT INTO etl_craft.AUD_BUSINESS_RULE_FLAGS
    (BUSINESS_RULE_ID, BUSINESS_RULE_KEY, ACTIVE_FLAG, START_DATE, PIPELINE_RUN_ID, TASK_RUN_ID, ATTEMPT_ID)
  SELECT DISTINCT p_business_rule_id, k.value, 'Y', v_now, v_pipeline_run_id,
         v_task_run_id, p_attempt_id
    FROM (SELECT j.value FROM jsonb_array_elements_text(CAST(p_failing_keys AS jsonb)) AS j(value)) k
   WHERE k.value IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_BUSINESS_RULE_FLAGS f
                      WHERE f.BUSINESS_RULE_ID = p_business_rule_id AND f.BUSINESS_RULE_KEY = k.value
                        AND f.ACTIVE_FLAG = 'Y');
  GET DIAGNOSTICS v_flagged = ROW_COUNT;
  RETURN QUERY
  SELECT q.business_rule_id::bigint, q.flagged::bigint, q.cleared::bigint, q.active::bigint
    FROM (
      SELECT p_business_rule_id, v_flagged, v_cleared,
             (SELECT COUNT(*) FROM etl_craft.AUD_BUSINESS_RULE_FLAGS WHERE BUSINESS_RULE_ID = p_business_rule_id AND ACTIVE_FLAG = 'Y')
    ) AS q(business_rule_id, flagged, cleared, active);
END
$fn$;
-- @end record_rule_flags
-- @function record_rule_scope
-- @args attempt_id bigint, owner_id text, business_rule_id bigint, scope_keys text, failing_keys text
-- @returns business_rule_id bigint, flagged bigint, cleared bigint, active bigint
-- @purpose The owner of a RUNNING attempt of a BUSINESS_RULES task records what it found for one of the task's
--   active rules, having judged only some keys of the task's table: those its own run wrote (B52). scope_keys is a
--   JSON array of at most 1,000 judged keys (text), failing_keys the JSON array of those of them whose rows break the
--   rule. Each failing key without an open flag gets one; each open flag of the rule whose key is in scope_keys but not
--   in failing_keys closes (ACTIVE_FLAG N, END_DATE, CLEARED_BY_ATTEMPT_ID): its row meets the rule again. The flags of
--   keys outside scope_keys are left as they stand. The caller sends more keys in further calls in the same
--   transaction, so a refusal of a later batch rolls back the earlier ones. The attempt's heartbeat is renewed. Returns
--   how many flags it opened and closed, and how many of the rule are open now.
-- @transition none
-- @locks the attempt row, then the open flags of the rule's keys in scope_keys
-- @errors EC023 scope_keys is not a JSON array of at most 1,000 strings of at most 512 characters, or failing_keys
--   is not a JSON array of strings of scope_keys; EC021 no such attempt, or no active rule business_rule_id of the
--   attempt's task; EC020 the attempt is not RUNNING by owner_id
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'record_rule_scope' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.record_rule_scope(
  p_attempt_id bigint,
  p_owner_id text,
  p_business_rule_id bigint,
  p_scope_keys text,
  p_failing_keys text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (business_rule_id bigint, flagged bigint, cleared bigint, active bigint)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_task_run_id bigint;
  v_pipeline_run_id bigint;
  v_task_id bigint;
  v_cleared bigint;
  v_flagged bigint;
BEGIN
  BEGIN
    PERFORM CAST(p_scope_keys AS jsonb);
  EXCEPTION WHEN invalid_text_representation THEN
    SELECT 'EC023: ' || ('scope_keys is a JSON array of at most 1000 keys (strings of at most 512 characters) that the run wrote and judged, such as ["42", "57"], not ' || COALESCE(CAST(p_scope_keys AS text), 'NULL')) INTO v_failure;
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
    END IF;
  END;
  SELECT 'EC023: ' || ('scope_keys is a JSON array of at most 1000 keys (strings of at most 512 characters) that the run wrote and judged, such as ["42", "57"], not ' || COALESCE(CAST(p_scope_keys AS text), 'NULL')) INTO v_failure
    WHERE p_scope_keys IS NULL OR jsonb_typeof(CAST(p_scope_keys AS jsonb)) <> 'array'
       OR jsonb_array_length(CAST(p_scope_keys AS jsonb)) > 1000
       OR EXISTS (SELECT 1 FROM jsonb_array_elements(CAST(p_scope_keys AS jsonb)) e
                   WHERE jsonb_typeof(e) <> 'string' OR length(e #>> '{}') > 512);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  BEGIN
    PERFORM CAST(p_failing_keys AS jsonb);
  EXCEPTION WHEN invalid_text_representation THEN
    SELECT 'EC023: ' || ('failing_keys is a JSON array of the keys of scope_keys that break the rule, such as ["42"], not ' || COALESCE(CAST(p_failing_keys AS text), 'NULL')) INTO v_failure;
    IF FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
    END IF;
  END;
  SELECT 'EC023: ' || ('failing_keys is a JSON array of the keys of scope_keys that break the rule, such as ["42"], not ' || COALESCE(CAST(p_failing_keys AS text), 'NULL')) INTO v_failure
    WHERE p_failing_keys IS NULL OR jsonb_typeof(CAST(p_failing_keys AS jsonb)) <> 'array'
       OR EXISTS (SELECT 1 FROM jsonb_array_elements(CAST(p_failing_keys AS jsonb)) e
                   WHERE jsonb_typeof(e) <> 'string'
                      OR (e #>> '{}') NOT IN (SELECT s.value
                                                FROM jsonb_array_elements_text(CAST(p_scope_keys AS jsonb)) AS s(value)));
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  UPDATE etl_craft.AUD_TASK_ATTEMPTS SET HEARTBEAT_AT = v_now
   WHERE ATTEMPT_ID = p_attempt_id AND STATUS = 'RUNNING' AND OWNER_ID = p_owner_id
  RETURNING TASK_RUN_ID INTO v_task_run_id;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC021: ' || ('attempt ' || COALESCE(CAST(p_attempt_id AS text), 'NULL') || ' does not exist; a run''s attempts are listed by etl-craft status --pipeline-code P') INTO v_failure
    WHERE v_rows = 0 AND NOT EXISTS (SELECT 1 FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  SELECT 'EC020: ' || ('attempt ' || ATTEMPT_ID || ' is ' || STATUS || COALESCE(' owned by ' || OWNER_ID, ' (unowned)') || ', expected RUNNING owned by ' || COALESCE(CAST(p_owner_id AS text), 'NULL') || '; no flag was recorded: only the process running the attempt records what it found') INTO v_failure
    FROM etl_craft.AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = p_attempt_id AND v_rows = 0;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC020', MESSAGE = COALESCE(v_failure, 'EC020');
  END IF;
  SELECT t.PIPELINE_RUN_ID, t.TASK_ID INTO v_pipeline_run_id, v_task_id
    FROM etl_craft.AUD_TASK_RUN_LOG t WHERE t.TASK_RUN_ID = v_task_run_id;
  SELECT 'EC021: ' || ('business rule ' || COALESCE(CAST(p_business_rule_id AS text), 'NULL') || ' is not an active rule of task ' || v_task_id || '; the rules of a task are the rows of CFG_BUSINESS_RULES with its TASK_ID and ACTIVE_FLAG Y') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.CFG_BUSINESS_RULES r
                       WHERE r.BUSINESS_RULE_ID = p_business_rule_id AND r.TASK_ID = v_task_id
                         AND r.ACTIVE_FLAG = 'Y');
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  UPDATE etl_craft.AUD_BUSINESS_RULE_FLAGS
     SET ACTIVE_FLAG = 'N', END_DATE = v_now, CLEARED_BY_ATTEMPT_ID = p_attempt_id
   WHERE BUSINESS_RULE_ID = p_business_rule_id AND ACTIVE_FLAG = 'Y'
     AND BUSINESS_RULE_KEY IN (SELECT k.value FROM (SELECT j.value FROM jsonb_array_elements_text(CAST(p_scope_keys AS jsonb)) AS j(value)) k)
     AND BUSINESS_RULE_KEY NOT IN (SELECT k.value FROM (SELECT j.value FROM jsonb_array_elements_text(CAST(p_failing_keys AS jsonb)) AS j(value)) k);
  GET DIAGNOSTICS v_cleared = ROW_COUNT;
  INSERT INTO etl_craft.AUD_BUSINESS_RULE_FLAGS
    (BUSINESS_RULE_ID, BUSINESS_RULE_KEY, ACTIVE_FLAG, START_DATE, PIPELINE_RUN_ID, TASK_RUN_ID, ATTEMPT_ID)
  SELECT DISTINCT p_business_rule_id, k.value, 'Y', v_now, v_pipeline_run_id,
         v_task_run_id, p_attempt_id
    FROM (SELECT j.value FROM jsonb_array_elements_text(CAST(p_failing_keys AS jsonb)) AS j(value)) k
   WHERE NOT EXISTS (SELECT 1 FROM etl_craft.AUD_BUSINESS_RULE_FLAGS f
                      WHERE f.BUSINESS_RULE_ID = p_business_rule_id AND f.BUSINESS_RULE_KEY = k.value
                        AND f.ACTIVE_FLAG = 'Y');
  GET DIAGNOSTICS v_flagged = ROW_COUNT;
  RETURN QUERY
  SELECT q.business_rule_id::bigint, q.flagged::bigint, q.cleared::bigint, q.active::bigint
    FROM (
      SELECT p_business_rule_id, v_flagged, v_cleared,
             (SELECT COUNT(*) FROM etl_craft.AUD_BUSINESS_RULE_FLAGS WHERE BUSINESS_RULE_ID = p_business_rule_id AND ACTIVE_FLAG = 'Y')
    ) AS q(business_rule_id, flagged, cleared, active);
END
$fn$;
-- @end record_rule_scope
