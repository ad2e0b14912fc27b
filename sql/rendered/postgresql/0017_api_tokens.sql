-- 0017_api_tokens: the bearer tokens of the HTTP API (etl-craft token create/list/revoke). A row keeps the token's
-- name (the actor of every request made with it), its role (viewer reads; operator also triggers, backfills,
-- cancels, pauses, resumes, marks and reruns; admin also manages tokens), the SHA-256 of the token in hex and never
-- the token itself, when it expires and when and by whom it was revoked. Rows are written only through the
-- functions of sql/functions/037_api_tokens.sql.j2; a revoked token keeps its row (and its name) as history.
-- LAST_USED_AT is touched at most once a minute per token, so a busy client does not fill AUD_METADATA_CHANGES.
CREATE TABLE CFG_API_TOKENS (
  TOKEN_ID BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  TOKEN_NAME VARCHAR(128) NOT NULL CONSTRAINT token_name_is_a_name CHECK (TOKEN_NAME ~ '^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$'),
  TOKEN_ROLE VARCHAR(16) NOT NULL CONSTRAINT token_role_is_valid CHECK (TOKEN_ROLE IN ('viewer', 'operator', 'admin')),
  TOKEN_SHA256 VARCHAR(64) NOT NULL CONSTRAINT token_sha256_is_hex CHECK (TOKEN_SHA256 ~ '^[0-9a-f]{64}$'),
  EXPIRES_AT TIMESTAMPTZ,
  REVOKED_AT TIMESTAMPTZ,
  REVOKED_BY VARCHAR(128),
  LAST_USED_AT TIMESTAMPTZ,
CREATED_BY VARCHAR(128) NOT NULL,
  CREATED_DATE TIMESTAMPTZ NOT NULL,
  UPDATED_BY VARCHAR(128) NOT NULL,
  UPDATED_DATE TIMESTAMPTZ NOT NULL,
  CONSTRAINT revoked_names_its_actor CHECK ((REVOKED_AT IS NULL) = (REVOKED_BY IS NULL))
);
CREATE UNIQUE INDEX ux_api_tokens_name ON CFG_API_TOKENS (TOKEN_NAME);
CREATE UNIQUE INDEX ux_api_tokens_sha256 ON CFG_API_TOKENS (TOKEN_SHA256);
