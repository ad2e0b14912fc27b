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
-- @end create_api_token

-- @function revoke_api_token
-- @args name text
-- @returns token_id bigint, revoked_at timestamptz
-- @purpose Revoke the API token of this name: from now on a request presenting it is refused. The row stays,
--   with REVOKED_AT and REVOKED_BY (the actor), and its name is not given to another token.
-- @transition TOKEN in use -> revoked
-- @locks the token's row
-- @errors EC021 no token of this name; EC023 the token is revoked already
-- @end revoke_api_token

-- @function touch_api_token
-- @args token_id bigint
-- @returns last_used_at timestamptz
-- @purpose Note that the API token was used now: LAST_USED_AT is set when it is unset or more than a minute
--   old, so a busy client writes (and records in AUD_METADATA_CHANGES) at most one change a minute.
-- @transition none (LAST_USED_AT of a token)
-- @locks the token's row, when it is written
-- @errors EC021 no token of this id
-- @end touch_api_token
