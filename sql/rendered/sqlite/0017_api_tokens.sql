-- 0017_api_tokens: the bearer tokens of the HTTP API (etl-craft token create/list/revoke). A row keeps the token's
-- name (the actor of every request made with it), its role (viewer reads; operator also triggers, backfills,
-- cancels, pauses, resumes, marks and reruns; admin also manages tokens), the SHA-256 of the token in hex and never
-- the token itself, when it expires and when and by whom it was revoked. Rows are written only through the
-- functions of sql/functions/037_api_tokens.sql.j2; a revoked token keeps its row (and its name) as history.
-- LAST_USED_AT is touched at most once a minute per token, so a busy client does not fill AUD_METADATA_CHANGES.
CREATE TABLE CFG_API_TOKENS (
  TOKEN_ID INTEGER PRIMARY KEY AUTOINCREMENT,
  TOKEN_NAME VARCHAR(128) NOT NULL CONSTRAINT token_name_is_a_name CHECK (TOKEN_NAME GLOB '[A-Za-z0-9]*' AND TOKEN_NAME NOT GLOB '*[^A-Za-z0-9_.:@-]*' AND length(TOKEN_NAME) <= 128),
  TOKEN_ROLE VARCHAR(16) NOT NULL CONSTRAINT token_role_is_valid CHECK (TOKEN_ROLE IN ('viewer', 'operator', 'admin')),
  TOKEN_SHA256 VARCHAR(64) NOT NULL CONSTRAINT token_sha256_is_hex CHECK (length(TOKEN_SHA256) = 64 AND TOKEN_SHA256 NOT GLOB '*[^0-9a-f]*'),
  EXPIRES_AT TEXT,
  REVOKED_AT TEXT,
  REVOKED_BY VARCHAR(128),
  LAST_USED_AT TEXT,
CREATED_BY VARCHAR(128) NOT NULL DEFAULT (etl_craft_actor()),
  CREATED_DATE TEXT NOT NULL DEFAULT (etl_craft_now()),
  UPDATED_BY VARCHAR(128) NOT NULL DEFAULT (etl_craft_actor()),
  UPDATED_DATE TEXT NOT NULL DEFAULT (etl_craft_now()),
  CONSTRAINT revoked_names_its_actor CHECK ((REVOKED_AT IS NULL) = (REVOKED_BY IS NULL))
);
CREATE UNIQUE INDEX ux_api_tokens_name ON CFG_API_TOKENS (TOKEN_NAME);
CREATE UNIQUE INDEX ux_api_tokens_sha256 ON CFG_API_TOKENS (TOKEN_SHA256);
