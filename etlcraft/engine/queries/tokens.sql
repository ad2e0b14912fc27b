-- The HTTP API's tokens (CFG_API_TOKENS). No query here returns TOKEN_SHA256 except token_by_sha256, which
-- authentication compares in constant time.

-- name: token_by_sha256 :one
SELECT t.TOKEN_ID, t.TOKEN_NAME, t.TOKEN_ROLE, t.TOKEN_SHA256, t.EXPIRES_AT, t.REVOKED_AT, t.REVOKED_BY,
       t.LAST_USED_AT
  FROM {CFG_API_TOKENS} t
 WHERE t.TOKEN_SHA256 = :token_sha256;

-- name: token_list :many
SELECT t.TOKEN_ID, t.TOKEN_NAME, t.TOKEN_ROLE, t.CREATED_DATE, t.CREATED_BY, t.EXPIRES_AT, t.REVOKED_AT,
       t.REVOKED_BY, t.LAST_USED_AT
  FROM {CFG_API_TOKENS} t
 ORDER BY t.TOKEN_NAME;
