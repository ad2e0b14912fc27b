-- 0013_roles: the Engine DB's own settings, which only the schema owner writes (no role is granted any write on it,
-- and its rows carry the actor who set them). TEST_MODE = Y: the database is a test database, where a session may
-- pin etl_craft.clock_now() with etl_craft.now; in any other database a pinned clock is refused, so nobody can push
-- the clock ahead of the server's and have live attempts reconciled LOST. ROLE_PREFIX: the prefix of the reader,
-- operator and engine roles `etl-craft grant` set up, whose grants migrate applies again to re-created functions
-- and views. SQLite has the table too (the schema is the same on both dialects) and leaves it empty: it is
-- single-user, and its clock is etl-craft's own.
CREATE TABLE ENG_SETTINGS (
  SETTING VARCHAR(64) NOT NULL CONSTRAINT pk_eng_settings PRIMARY KEY
    CONSTRAINT setting_is_valid CHECK (SETTING IN ('TEST_MODE', 'ROLE_PREFIX')),
  VALUE VARCHAR(256) NOT NULL,
  SET_AT TEXT NOT NULL,
  SET_BY VARCHAR(128) NOT NULL,
  SET_BY_KIND VARCHAR(16) NOT NULL CONSTRAINT set_by_kind_is_valid CHECK (SET_BY_KIND IN ('HUMAN', 'SCHEDULE', 'ORCHESTRATOR', 'WORKER', 'SYSTEM')),
  CONSTRAINT test_mode_is_y_or_n CHECK (SETTING <> 'TEST_MODE' OR VALUE = 'Y' OR VALUE = 'N'),
  CONSTRAINT role_prefix_is_a_name CHECK (SETTING <> 'ROLE_PREFIX' OR (VALUE GLOB '[a-z_]*' AND VALUE NOT GLOB '*[^a-z0-9_]*' AND length(VALUE) <= 54))
);
