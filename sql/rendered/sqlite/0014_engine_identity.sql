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
ALTER TABLE ENG_SETTINGS RENAME TO ENG_SETTINGS_0013;
CREATE TABLE ENG_SETTINGS (
  SETTING VARCHAR(64) NOT NULL CONSTRAINT pk_eng_settings PRIMARY KEY
    CONSTRAINT setting_is_valid CHECK (SETTING IN ('TEST_MODE', 'ROLE_PREFIX', 'ENGINE_ID')),
  VALUE VARCHAR(256) NOT NULL,
  SET_AT TEXT NOT NULL,
  SET_BY VARCHAR(128) NOT NULL,
  SET_BY_KIND VARCHAR(16) NOT NULL CONSTRAINT set_by_kind_is_valid CHECK (SET_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM')),
  CONSTRAINT test_mode_is_y_or_n CHECK (SETTING <> 'TEST_MODE' OR VALUE = 'Y' OR VALUE = 'N'),
  CONSTRAINT role_prefix_is_a_name CHECK (SETTING <> 'ROLE_PREFIX' OR (
VALUE GLOB '[a-z_]*' AND VALUE NOT GLOB '*[^a-z0-9_]*' AND length(VALUE) <= 54)),
  CONSTRAINT engine_id_is_an_id CHECK (SETTING <> 'ENGINE_ID' OR (length(VALUE) = 32 AND VALUE NOT GLOB '*[^0-9a-f]*'))
);
INSERT INTO ENG_SETTINGS (SETTING, VALUE, SET_AT, SET_BY, SET_BY_KIND)
SELECT SETTING, VALUE, SET_AT, SET_BY, SET_BY_KIND FROM ENG_SETTINGS_0013;
DROP TABLE ENG_SETTINGS_0013;

ALTER TABLE AUD_TASK_OFFSETS RENAME TO AUD_TASK_OFFSETS_0013;
CREATE TABLE AUD_TASK_OFFSETS (
  TASK_ID BIGINT REFERENCES CFG_TASKS (TASK_ID) NOT NULL CONSTRAINT pk_task_offsets PRIMARY KEY,
  OFFSET_TYPE VARCHAR(16) NOT NULL CONSTRAINT offset_type_is_valid CHECK (OFFSET_TYPE IN ('INTEGER', 'DECIMAL', 'TEXT', 'DATE', 'TIMESTAMP')),
  OFFSET_VALUE TEXT NOT NULL,
  TASK_RUN_ID BIGINT REFERENCES AUD_TASK_RUN_LOG (TASK_RUN_ID),
  ATTEMPT_ID BIGINT REFERENCES AUD_TASK_ATTEMPTS (ATTEMPT_ID),
  STORED_AT TEXT NOT NULL,
  SOURCE_ENGINE_ID VARCHAR(32),
  SOURCE_ATTEMPT_ID BIGINT,
  CONSTRAINT offset_has_one_origin CHECK (
    (TASK_RUN_ID IS NOT NULL AND ATTEMPT_ID IS NOT NULL AND SOURCE_ENGINE_ID IS NULL AND SOURCE_ATTEMPT_ID IS NULL)
    OR (TASK_RUN_ID IS NULL AND ATTEMPT_ID IS NULL AND SOURCE_ENGINE_ID IS NOT NULL AND SOURCE_ATTEMPT_ID IS NOT NULL)),
  CONSTRAINT source_engine_id_is_an_id CHECK (length(SOURCE_ENGINE_ID) = 32 AND SOURCE_ENGINE_ID NOT GLOB '*[^0-9a-f]*')
);
INSERT INTO AUD_TASK_OFFSETS (TASK_ID, OFFSET_TYPE, OFFSET_VALUE, TASK_RUN_ID, ATTEMPT_ID, STORED_AT)
SELECT TASK_ID, OFFSET_TYPE, OFFSET_VALUE, TASK_RUN_ID, ATTEMPT_ID, STORED_AT FROM AUD_TASK_OFFSETS_0013;
DROP TABLE AUD_TASK_OFFSETS_0013;

INSERT INTO ENG_SETTINGS (SETTING, VALUE, SET_AT, SET_BY, SET_BY_KIND)
VALUES ('ENGINE_ID', lower(hex(randomblob(16))), etl_craft_now(), etl_craft_actor(), etl_craft_actor_kind());
