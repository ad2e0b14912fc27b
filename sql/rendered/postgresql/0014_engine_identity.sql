-- 0014_engine_identity: every Engine DB gets an identity of its own, created once, here: ENG_SETTINGS ENGINE_ID, 32
-- random hex digits. Attempt ids start at 1 in every Engine DB, so whatever lives outside the database and is named
-- after an attempt (the task log files under .etl-craft/logs) is kept under the identity of the database that ran
-- it, and two Engine DBs of one project never write into each other's files. A copy of the database's files (or
-- CREATE DATABASE ... TEMPLATE) keeps the identity; etl-craft engine copy gives its target its own.
-- An offset can now come from another Engine DB: etl-craft engine copy carries each task's last offset over to a new
-- Engine DB (carry_offset), where no task run or attempt stored it. Such a row names the Engine DB and the attempt
-- that stored it (SOURCE_ENGINE_ID, SOURCE_ATTEMPT_ID) instead of a task run and attempt of its own; every row has
-- exactly one of the two origins, and the next SUCCESS of the task replaces it with a local one.
-- SQLite cannot change a column's NOT NULL or a CHECK constraint in place: it makes both tables again (the old one
-- renamed, the new one created, the rows copied, the old one dropped); migrate then creates their triggers again.
ALTER TABLE ENG_SETTINGS DROP CONSTRAINT setting_is_valid,
  ADD CONSTRAINT setting_is_valid CHECK (SETTING IN ('TEST_MODE', 'ROLE_PREFIX', 'ENGINE_ID')),
  ADD CONSTRAINT engine_id_is_an_id CHECK (SETTING <> 'ENGINE_ID' OR VALUE ~ '^[0-9a-f]{32}$');

ALTER TABLE AUD_TASK_OFFSETS ALTER COLUMN TASK_RUN_ID DROP NOT NULL,
  ALTER COLUMN ATTEMPT_ID DROP NOT NULL,
  ADD COLUMN SOURCE_ENGINE_ID VARCHAR(32),
  ADD COLUMN SOURCE_ATTEMPT_ID BIGINT,
  ADD CONSTRAINT offset_has_one_origin CHECK (
    (TASK_RUN_ID IS NOT NULL AND ATTEMPT_ID IS NOT NULL AND SOURCE_ENGINE_ID IS NULL AND SOURCE_ATTEMPT_ID IS NULL)
    OR (TASK_RUN_ID IS NULL AND ATTEMPT_ID IS NULL AND SOURCE_ENGINE_ID IS NOT NULL AND SOURCE_ATTEMPT_ID IS NOT NULL)),
  ADD CONSTRAINT source_engine_id_is_an_id CHECK (SOURCE_ENGINE_ID ~ '^[0-9a-f]{32}$');

INSERT INTO ENG_SETTINGS (SETTING, VALUE, SET_AT, SET_BY, SET_BY_KIND)
VALUES ('ENGINE_ID', replace(gen_random_uuid()::text, '-', ''), now(),
        NULLIF(current_setting('etl_craft.actor', true), ''),
        COALESCE(NULLIF(current_setting('etl_craft.actor_kind', true), ''), 'HUMAN'));
