-- 037_api_tokens: the HTTP API's bearer tokens (CFG_API_TOKENS): create, revoke, and note a token's last use.
-- The Engine DB keeps only the SHA-256 of a token; etl-craft (etlcraft/services/tokens.py) makes the token, prints
-- it once, and compares a presented token's hash with the stored one in constant time.


-- @function create_api_token
-- @args name text, role text, token_sha256 text, expires_at timestamptz = NULL
-- @returns token_id bigint, created_at timestamptz
-- @purpose Record a new API token: its name (the actor of every request made with it), its role (viewer,
--   operator or admin), the SHA-256 of the token in hex (never the token) and when it expires (NULL: never). The
--   actor who creates it is CREATED_BY.
-- @transition TOKEN (none) -> in use
-- @locks the ux_api_tokens_name entry of the name (one token per name, revoked ones included)
-- @errors EC023 the name is taken (by a token in use or a revoked one), or the expiry is not in the future
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'create_api_token' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.create_api_token(
  p_name text,
  p_role text,
  p_token_sha256 text,
  p_expires_at timestamptz DEFAULT NULL,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (token_id bigint, created_at timestamptz)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_token_id bigint;
BEGIN
  IF p_expires_at <= v_now THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE('EC023: ' || ('the expiry of API token ' || p_name || ' is ' || COALESCE(to_char(p_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ', expected a time after now (' || COALESCE(to_char(v_now AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || '); give a later expiry'), 'EC023');
  END IF;
  SELECT 'EC023: ' || ('an API token named ' || t.TOKEN_NAME || ' exists already (role ' || t.TOKEN_ROLE || ', created ' || COALESCE(to_char(t.CREATED_DATE AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' by ' || t.CREATED_BY || CASE WHEN t.REVOKED_AT IS NULL THEN '' ELSE ', revoked ' || COALESCE(to_char(t.REVOKED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') END || '), expected a name not used before; choose another name (etl-craft token list shows the names in use)') INTO v_failure
    FROM etl_craft.CFG_API_TOKENS t WHERE t.TOKEN_NAME = p_name;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  -- ON CONFLICT: a token of this name another caller committed meanwhile wins, and this call is refused below.
  INSERT INTO etl_craft.CFG_API_TOKENS (TOKEN_NAME, TOKEN_ROLE, TOKEN_SHA256, EXPIRES_AT)
  VALUES (p_name, p_role, p_token_sha256, p_expires_at)
  ON CONFLICT (TOKEN_NAME) DO NOTHING
  RETURNING TOKEN_ID INTO v_token_id;
  SELECT 'EC023: ' || ('an API token named ' || t.TOKEN_NAME || ' exists already (role ' || t.TOKEN_ROLE || ', created ' || COALESCE(to_char(t.CREATED_DATE AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' by ' || t.CREATED_BY || CASE WHEN t.REVOKED_AT IS NULL THEN '' ELSE ', revoked ' || COALESCE(to_char(t.REVOKED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') END || '), expected a name not used before; choose another name (etl-craft token list shows the names in use)') INTO v_failure
    FROM etl_craft.CFG_API_TOKENS t WHERE t.TOKEN_NAME = p_name AND v_token_id IS NULL;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  RETURN QUERY
  SELECT q.token_id::bigint, q.created_at::timestamptz
    FROM (
      SELECT t.TOKEN_ID, t.CREATED_DATE FROM etl_craft.CFG_API_TOKENS t WHERE t.TOKEN_ID = v_token_id
    ) AS q(token_id, created_at);
END
$fn$;
-- @end create_api_token

-- @function revoke_api_token
-- @args name text
-- @returns token_id bigint, revoked_at timestamptz
-- @purpose Revoke the API token of this name: from now on a request presenting it is refused. The row stays,
--   with REVOKED_AT and REVOKED_BY (the actor), and its name is not given to another token.
-- @transition TOKEN in use -> revoked
-- @locks the token's row
-- @errors EC021 no token of this name; EC023 the token is revoked already
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'revoke_api_token' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.revoke_api_token(
  p_name text,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (token_id bigint, revoked_at timestamptz)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = etl_craft, pg_catalog, pg_temp
SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  v_now timestamptz := etl_craft._begin(p_actor, p_actor_kind);
  v_rows bigint;
  v_failure text;
  v_token_id bigint;
BEGIN
  SELECT 'EC021: ' || ('there is no API token named ' || p_name || '; etl-craft token list shows the tokens') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.CFG_API_TOKENS WHERE TOKEN_NAME = p_name);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  UPDATE etl_craft.CFG_API_TOKENS
     SET REVOKED_AT = v_now, REVOKED_BY = etl_craft._actor()
   WHERE TOKEN_NAME = p_name AND REVOKED_AT IS NULL
  RETURNING TOKEN_ID INTO v_token_id;
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  SELECT 'EC023: ' || ('API token ' || t.TOKEN_NAME || ' is revoked already (since ' || COALESCE(to_char(t.REVOKED_AT AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC', 'never') || ' by ' || t.REVOKED_BY || '), expected a token in use; there is nothing to revoke') INTO v_failure
    FROM etl_craft.CFG_API_TOKENS t WHERE t.TOKEN_NAME = p_name AND v_rows = 0;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC023', MESSAGE = COALESCE(v_failure, 'EC023');
  END IF;
  RETURN QUERY
  SELECT q.token_id::bigint, q.revoked_at::timestamptz
    FROM (
      SELECT t.TOKEN_ID, t.REVOKED_AT FROM etl_craft.CFG_API_TOKENS t WHERE t.TOKEN_ID = v_token_id
    ) AS q(token_id, revoked_at);
END
$fn$;
-- @end revoke_api_token

-- @function touch_api_token
-- @args token_id bigint
-- @returns last_used_at timestamptz
-- @purpose Note that the API token was used now: LAST_USED_AT is set when it is unset or more than a minute
--   old, so a busy client writes (and records in AUD_METADATA_CHANGES) at most one change a minute.
-- @transition none (LAST_USED_AT of a token)
-- @locks the token's row, when it is written
-- @errors EC021 no token of this id
-- A signature that changed leaves no stale overload behind: drop every function of this name first.
DO $drop$
DECLARE
  v_function regprocedure;
BEGIN
  FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p
                     WHERE p.proname = 'touch_api_token' AND p.pronamespace = 'etl_craft'::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || v_function;
  END LOOP;
END
$drop$;
CREATE FUNCTION etl_craft.touch_api_token(
  p_token_id bigint,
  p_actor text DEFAULT NULL,
  p_actor_kind text DEFAULT NULL
) RETURNS TABLE (last_used_at timestamptz)
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
  SELECT 'EC021: ' || ('there is no API token ' || COALESCE(CAST(p_token_id AS text), 'NULL') || '; etl-craft token list shows the tokens') INTO v_failure
    WHERE NOT EXISTS (SELECT 1 FROM etl_craft.CFG_API_TOKENS WHERE TOKEN_ID = p_token_id);
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'EC021', MESSAGE = COALESCE(v_failure, 'EC021');
  END IF;
  UPDATE etl_craft.CFG_API_TOKENS
     SET LAST_USED_AT = v_now
   WHERE TOKEN_ID = p_token_id
     AND (LAST_USED_AT IS NULL OR LAST_USED_AT <= (v_now + make_interval(secs => -60)));
  RETURN QUERY
  SELECT q.last_used_at::timestamptz
    FROM (
      SELECT t.LAST_USED_AT FROM etl_craft.CFG_API_TOKENS t WHERE t.TOKEN_ID = p_token_id
    ) AS q(last_used_at);
END
$fn$;
-- @end touch_api_token
