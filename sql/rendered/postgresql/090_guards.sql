-- 090_guards: the rules the Engine DB keeps by itself, whoever writes to it.
--   * engine-only writes: every AUD_, CFG_ and ENG_ table and SCHEMA_MIGRATIONS refuse a write that does not
--     carry etl-craft's actor marker (EC001);
--   * migrate-only writes (PostgreSQL): ENG_STATUSES, ENG_TRANSITIONS, ENG_ERROR_CODES and SCHEMA_MIGRATIONS are
--     written only by etl-craft migrate, which holds the migration lock, so they never disagree with the triggers
--     and functions rendered from the same files (EC001);
--   * append-only history: audit rows and ended attempts never change (EC002), nor does the Engine DB's identity
--     (ENG_SETTINGS ENGINE_ID, created once by migration 0014);
--   * stamps: CREATED_BY/CREATED_DATE/UPDATED_BY/UPDATED_DATE of CFG_ rows hold the actor, never a hand-set
--     value (EC003), and every CFG_ change is recorded in AUD_METADATA_CHANGES with before/after images;
--   * actor columns (PostgreSQL): the *_BY and ACTOR columns of the other tables, with their *_KIND, are set to
--     the actor the transaction is marked with, never to a name a statement gives; a malformed marker is refused
--     (EC001) before it reaches a column;
--   * transitions: a STATUS change not listed in sql/state_machine.yaml is refused (EC010);
--   * derived columns: an attempt's PIPELINE_RUN_ID is its task run's, whatever the insert gave.
-- Rendered against the live catalog (tables), so the SQLite images list every column of each CFG_ table.
-- tg_engine_only(remedy): statement trigger; refuses INSERT, UPDATE, DELETE and TRUNCATE in a transaction that
-- etl-craft did not mark with set_config('etl_craft.actor', <actor>, true). TRUNCATE is refused even then: it
-- would remove rows without a record (row triggers do not fire for it).
CREATE OR REPLACE FUNCTION etl_craft.tg_engine_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF etl_craft._actor() IS NULL THEN
    RAISE EXCEPTION 'EC001: % on % refused: % is written only by etl-craft; %',
      TG_OP, upper(TG_TABLE_NAME), upper(TG_TABLE_NAME), TG_ARGV[0]
      USING ERRCODE = 'EC001';
  END IF;
  IF TG_OP = 'TRUNCATE' THEN
    RAISE EXCEPTION 'EC002: TRUNCATE of % refused: it would remove rows without a record; etl-craft removes rows one by one',
      upper(TG_TABLE_NAME)
      USING ERRCODE = 'EC002';
  END IF;
  RETURN NULL;
END
$$;

-- tg_append_only(key column, why): refuses UPDATE, DELETE and TRUNCATE of rows that record history, even
-- from etl-craft itself.
CREATE OR REPLACE FUNCTION etl_craft.tg_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'EC002: % of % % refused: %',
    TG_OP, upper(TG_TABLE_NAME),
    CASE WHEN TG_LEVEL = 'ROW' THEN TG_ARGV[0] || '=' || (to_jsonb(OLD) ->> lower(TG_ARGV[0])) ELSE '(every row)' END,
    TG_ARGV[1]
    USING ERRCODE = 'EC002';
END
$$;

-- tg_cfg__stamp(): BEFORE INSERT OR UPDATE on CFG_ tables; refuses hand-set stamps (other than the acting actor
-- and the time) and writes the actor and the time into CREATED_BY/CREATED_DATE (insert) and
-- UPDATED_BY/UPDATED_DATE (insert, and updates that change any column).
CREATE OR REPLACE FUNCTION etl_craft.tg_cfg__stamp() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_actor text := etl_craft._marked_actor();
  v_now timestamptz := etl_craft.clock_now();
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.CREATED_BY <> v_actor OR NEW.UPDATED_BY <> v_actor OR NEW.CREATED_DATE <> v_now OR NEW.UPDATED_DATE <> v_now THEN
      RAISE EXCEPTION 'EC003: %', TG_ARGV[0] USING ERRCODE = 'EC003';
    END IF;
    NEW.CREATED_BY := v_actor;
    NEW.CREATED_DATE := v_now;
  ELSE
    IF NEW.CREATED_BY IS DISTINCT FROM OLD.CREATED_BY OR NEW.CREATED_DATE IS DISTINCT FROM OLD.CREATED_DATE
       OR (NEW.UPDATED_BY IS DISTINCT FROM OLD.UPDATED_BY AND NEW.UPDATED_BY IS DISTINCT FROM v_actor)
       OR (NEW.UPDATED_DATE IS DISTINCT FROM OLD.UPDATED_DATE AND NEW.UPDATED_DATE IS DISTINCT FROM v_now) THEN
      RAISE EXCEPTION 'EC003: %', TG_ARGV[0] USING ERRCODE = 'EC003';
    END IF;
    IF NEW IS NOT DISTINCT FROM OLD THEN
      RETURN NEW;
    END IF;
  END IF;
  NEW.UPDATED_BY := v_actor;
  NEW.UPDATED_DATE := v_now;
  RETURN NEW;
END
$$;

-- tg_cfg__record_change(key column): AFTER row trigger on CFG_ tables; one AUD_METADATA_CHANGES row per
-- inserted, changed or deleted row, with full before/after images, the actor and the project migration.
CREATE OR REPLACE FUNCTION etl_craft.tg_cfg__record_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_before jsonb;
  v_after jsonb;
BEGIN
  IF TG_OP = 'UPDATE' AND NEW IS NOT DISTINCT FROM OLD THEN
    RETURN NULL;
  END IF;
  IF TG_OP <> 'INSERT' THEN
    v_before := (SELECT jsonb_object_agg(upper(key), value) FROM jsonb_each(to_jsonb(OLD)));
  END IF;
  IF TG_OP <> 'DELETE' THEN
    v_after := (SELECT jsonb_object_agg(upper(key), value) FROM jsonb_each(to_jsonb(NEW)));
  END IF;
  INSERT INTO etl_craft.AUD_METADATA_CHANGES
    (CHANGED_AT, ACTOR, ACTOR_KIND, TABLE_NAME, ROW_KEY, OPERATION, BEFORE_JSON, AFTER_JSON, MIGRATION)
  VALUES (etl_craft.clock_now(), etl_craft._actor(), etl_craft._actor_kind(), upper(TG_TABLE_NAME),
          TG_ARGV[0] || '=' || (COALESCE(v_after, v_before) ->> TG_ARGV[0]), TG_OP, v_before, v_after,
          etl_craft._migration());
  RETURN NULL;
END
$$;
-- tg_migrate_only(remedy): statement trigger on the tables etl-craft migrate keeps (ENG_STATUSES, ENG_TRANSITIONS,
-- ENG_ERROR_CODES, SCHEMA_MIGRATIONS); refuses a write from a transaction that does not hold the migration lock
-- (etlcraft/engine/migrations.py takes it first), so a hand edit cannot make them disagree with the triggers.
CREATE OR REPLACE FUNCTION etl_craft.tg_migrate_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_locks
                  WHERE locktype = 'advisory' AND pid = pg_catalog.pg_backend_pid() AND granted
                    AND classid = '1180321334'::oid AND objid = '4227414358'::oid
                    AND objsubid = 1) THEN
    RAISE EXCEPTION 'EC001: % on % refused: % is written only by etl-craft migrate; %',
      TG_OP, upper(TG_TABLE_NAME), upper(TG_TABLE_NAME), TG_ARGV[0]
      USING ERRCODE = 'EC001';
  END IF;
  RETURN NULL;
END
$$;

-- tg_aud_actions__stamp_actor(): BEFORE INSERT, or UPDATE of an actor column. ACTOR
-- (and each one's kind) are set to the actor the transaction is marked with, whatever the statement gave.
-- ACTOR is who created the row: an UPDATE keeps it.
CREATE OR REPLACE FUNCTION etl_craft.tg_aud_actions__stamp_actor() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_actor text := etl_craft._marked_actor();
  v_kind text := etl_craft._actor_kind();
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.ACTOR := v_actor;
    NEW.ACTOR_KIND := v_kind;
  ELSE
    NEW.ACTOR := OLD.ACTOR;
    NEW.ACTOR_KIND := OLD.ACTOR_KIND;
  END IF;
  RETURN NEW;
END
$$;

-- tg_aud_gate_decisions__stamp_actor(): BEFORE INSERT, or UPDATE of an actor column. DECIDED_BY
-- (and each one's kind) are set to the actor the transaction is marked with, whatever the statement gave.
-- DECIDED_BY is who created the row: an UPDATE keeps it.
CREATE OR REPLACE FUNCTION etl_craft.tg_aud_gate_decisions__stamp_actor() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_actor text := etl_craft._marked_actor();
  v_kind text := etl_craft._actor_kind();
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.DECIDED_BY := v_actor;
    NEW.DECIDED_BY_KIND := v_kind;
  ELSE
    NEW.DECIDED_BY := OLD.DECIDED_BY;
    NEW.DECIDED_BY_KIND := OLD.DECIDED_BY_KIND;
  END IF;
  RETURN NEW;
END
$$;

-- tg_aud_metadata_changes__stamp_actor(): BEFORE INSERT, or UPDATE of an actor column. ACTOR
-- (and each one's kind) are set to the actor the transaction is marked with, whatever the statement gave.
-- ACTOR is who created the row: an UPDATE keeps it.
CREATE OR REPLACE FUNCTION etl_craft.tg_aud_metadata_changes__stamp_actor() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_actor text := etl_craft._marked_actor();
  v_kind text := etl_craft._actor_kind();
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.ACTOR := v_actor;
    NEW.ACTOR_KIND := v_kind;
  ELSE
    NEW.ACTOR := OLD.ACTOR;
    NEW.ACTOR_KIND := OLD.ACTOR_KIND;
  END IF;
  RETURN NEW;
END
$$;

-- tg_aud_overseers__stamp_actor(): BEFORE INSERT, or UPDATE of an actor column. STARTED_BY
-- (and each one's kind) are set to the actor the transaction is marked with, whatever the statement gave.
-- STARTED_BY is who created the row: an UPDATE keeps it.
CREATE OR REPLACE FUNCTION etl_craft.tg_aud_overseers__stamp_actor() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_actor text := etl_craft._marked_actor();
  v_kind text := etl_craft._actor_kind();
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.STARTED_BY := v_actor;
    NEW.STARTED_BY_KIND := v_kind;
  ELSE
    NEW.STARTED_BY := OLD.STARTED_BY;
    NEW.STARTED_BY_KIND := OLD.STARTED_BY_KIND;
  END IF;
  RETURN NEW;
END
$$;

-- tg_aud_pipelines_run_log__stamp_actor(): BEFORE INSERT, or UPDATE of an actor column. STARTED_BY, ENDED_BY
-- (and each one's kind) are set to the actor the transaction is marked with, whatever the statement gave.
-- STARTED_BY is who created the row: an UPDATE keeps it.
-- ENDED_BY is NULL until an ending, and may be set back to NULL (an ending undone).
CREATE OR REPLACE FUNCTION etl_craft.tg_aud_pipelines_run_log__stamp_actor() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_actor text := etl_craft._marked_actor();
  v_kind text := etl_craft._actor_kind();
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.STARTED_BY := v_actor;
    NEW.STARTED_BY_KIND := v_kind;
  ELSE
    NEW.STARTED_BY := OLD.STARTED_BY;
    NEW.STARTED_BY_KIND := OLD.STARTED_BY_KIND;
  END IF;
  IF NEW.ENDED_BY IS NULL THEN
    NEW.ENDED_BY_KIND := NULL;
  ELSIF TG_OP = 'INSERT' OR NEW.ENDED_BY IS DISTINCT FROM OLD.ENDED_BY OR NEW.ENDED_BY_KIND IS DISTINCT FROM OLD.ENDED_BY_KIND THEN
    NEW.ENDED_BY := v_actor;
    NEW.ENDED_BY_KIND := v_kind;
  END IF;
  RETURN NEW;
END
$$;

-- tg_aud_pipeline_pauses__stamp_actor(): BEFORE INSERT, or UPDATE of an actor column. PAUSED_BY, RESUMED_BY
-- (and each one's kind) are set to the actor the transaction is marked with, whatever the statement gave.
-- PAUSED_BY is who created the row: an UPDATE keeps it.
-- RESUMED_BY is NULL until an ending, and may be set back to NULL (an ending undone).
CREATE OR REPLACE FUNCTION etl_craft.tg_aud_pipeline_pauses__stamp_actor() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_actor text := etl_craft._marked_actor();
  v_kind text := etl_craft._actor_kind();
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.PAUSED_BY := v_actor;
    NEW.PAUSED_BY_KIND := v_kind;
  ELSE
    NEW.PAUSED_BY := OLD.PAUSED_BY;
    NEW.PAUSED_BY_KIND := OLD.PAUSED_BY_KIND;
  END IF;
  IF NEW.RESUMED_BY IS NULL THEN
    NEW.RESUMED_BY_KIND := NULL;
  ELSIF TG_OP = 'INSERT' OR NEW.RESUMED_BY IS DISTINCT FROM OLD.RESUMED_BY OR NEW.RESUMED_BY_KIND IS DISTINCT FROM OLD.RESUMED_BY_KIND THEN
    NEW.RESUMED_BY := v_actor;
    NEW.RESUMED_BY_KIND := v_kind;
  END IF;
  RETURN NEW;
END
$$;

-- tg_aud_run_interventions__stamp_actor(): BEFORE INSERT, or UPDATE of an actor column. REQUESTED_BY
-- (and each one's kind) are set to the actor the transaction is marked with, whatever the statement gave.
-- REQUESTED_BY is who created the row: an UPDATE keeps it.
CREATE OR REPLACE FUNCTION etl_craft.tg_aud_run_interventions__stamp_actor() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_actor text := etl_craft._marked_actor();
  v_kind text := etl_craft._actor_kind();
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.REQUESTED_BY := v_actor;
    NEW.REQUESTED_BY_KIND := v_kind;
  ELSE
    NEW.REQUESTED_BY := OLD.REQUESTED_BY;
    NEW.REQUESTED_BY_KIND := OLD.REQUESTED_BY_KIND;
  END IF;
  RETURN NEW;
END
$$;

-- tg_aud_target_hash_version__stamp_actor(): BEFORE INSERT, or UPDATE of an actor column. RECOMPUTED_BY
-- (and each one's kind) are set to the actor the transaction is marked with, whatever the statement gave.
CREATE OR REPLACE FUNCTION etl_craft.tg_aud_target_hash_version__stamp_actor() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_actor text := etl_craft._marked_actor();
  v_kind text := etl_craft._actor_kind();
BEGIN
  IF TG_OP = 'INSERT' OR NEW.RECOMPUTED_BY IS DISTINCT FROM OLD.RECOMPUTED_BY OR NEW.RECOMPUTED_BY_KIND IS DISTINCT FROM OLD.RECOMPUTED_BY_KIND THEN
    NEW.RECOMPUTED_BY := v_actor;
    NEW.RECOMPUTED_BY_KIND := v_kind;
  END IF;
  RETURN NEW;
END
$$;

-- tg_aud_task_attempts__stamp_actor(): BEFORE INSERT, or UPDATE of an actor column. REQUESTED_BY
-- (and each one's kind) are set to the actor the transaction is marked with, whatever the statement gave.
-- REQUESTED_BY is who created the row: an UPDATE keeps it.
CREATE OR REPLACE FUNCTION etl_craft.tg_aud_task_attempts__stamp_actor() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_actor text := etl_craft._marked_actor();
  v_kind text := etl_craft._actor_kind();
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.REQUESTED_BY := v_actor;
    NEW.REQUESTED_BY_KIND := v_kind;
  ELSE
    NEW.REQUESTED_BY := OLD.REQUESTED_BY;
    NEW.REQUESTED_BY_KIND := OLD.REQUESTED_BY_KIND;
  END IF;
  RETURN NEW;
END
$$;

-- tg_aud_workers__stamp_actor(): BEFORE INSERT, or UPDATE of an actor column. STARTED_BY
-- (and each one's kind) are set to the actor the transaction is marked with, whatever the statement gave.
-- STARTED_BY is who created the row: an UPDATE keeps it.
CREATE OR REPLACE FUNCTION etl_craft.tg_aud_workers__stamp_actor() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_actor text := etl_craft._marked_actor();
  v_kind text := etl_craft._actor_kind();
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.STARTED_BY := v_actor;
    NEW.STARTED_BY_KIND := v_kind;
  ELSE
    NEW.STARTED_BY := OLD.STARTED_BY;
    NEW.STARTED_BY_KIND := OLD.STARTED_BY_KIND;
  END IF;
  RETURN NEW;
END
$$;

-- tg_eng_settings__stamp_actor(): BEFORE INSERT, or UPDATE of an actor column. SET_BY
-- (and each one's kind) are set to the actor the transaction is marked with, whatever the statement gave.
CREATE OR REPLACE FUNCTION etl_craft.tg_eng_settings__stamp_actor() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_actor text := etl_craft._marked_actor();
  v_kind text := etl_craft._actor_kind();
BEGIN
  IF TG_OP = 'INSERT' OR NEW.SET_BY IS DISTINCT FROM OLD.SET_BY OR NEW.SET_BY_KIND IS DISTINCT FROM OLD.SET_BY_KIND THEN
    NEW.SET_BY := v_actor;
    NEW.SET_BY_KIND := v_kind;
  END IF;
  RETURN NEW;
END
$$;

-- tg_schema_migrations__stamp_actor(): BEFORE INSERT, or UPDATE of an actor column. APPLIED_BY
-- (and each one's kind) are set to the actor the transaction is marked with, whatever the statement gave.
CREATE OR REPLACE FUNCTION etl_craft.tg_schema_migrations__stamp_actor() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_actor text := etl_craft._marked_actor();
  v_kind text := etl_craft._actor_kind();
BEGIN
  IF TG_OP = 'INSERT' OR NEW.APPLIED_BY IS DISTINCT FROM OLD.APPLIED_BY THEN
    NEW.APPLIED_BY := v_actor;
  END IF;
  RETURN NEW;
END
$$;

-- tg_aud_pipelines_run_log__guard_transition(): refuses a RUN status that sql/state_machine.yaml does not
-- allow: on INSERT one of QUEUED, IN-PROGRESS; on UPDATE a listed (from, to) pair.
CREATE OR REPLACE FUNCTION etl_craft.tg_aud_pipelines_run_log__guard_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.STATUS NOT IN ('QUEUED', 'IN-PROGRESS') THEN
      RAISE EXCEPTION 'EC010: AUD_PIPELINES_RUN_LOG PIPELINE_RUN_ID=%: a new row cannot start in status %; it starts in QUEUED or IN-PROGRESS',
        NEW.PIPELINE_RUN_ID, NEW.STATUS
        USING ERRCODE = 'EC010';
    END IF;
  ELSIF NEW.STATUS IS DISTINCT FROM OLD.STATUS
        AND (OLD.STATUS::text, NEW.STATUS::text) NOT IN (
          ('QUEUED', 'IN-PROGRESS'),
          ('QUEUED', 'SKIPPED'),
          ('QUEUED', 'CANCELLED'),
          ('IN-PROGRESS', 'SUCCESS'),
          ('IN-PROGRESS', 'FAILED'),
          ('IN-PROGRESS', 'SKIPPED'),
          ('IN-PROGRESS', 'CANCELLED'),
          ('SUCCESS', 'IN-PROGRESS'),
          ('SUCCESS', 'FAILED'),
          ('SUCCESS', 'SKIPPED'),
          ('FAILED', 'IN-PROGRESS'),
          ('FAILED', 'SUCCESS'),
          ('FAILED', 'SKIPPED'),
          ('SKIPPED', 'IN-PROGRESS'),
          ('SKIPPED', 'SUCCESS'),
          ('SKIPPED', 'FAILED'),
          ('CANCELLED', 'IN-PROGRESS'),
          ('CANCELLED', 'SUCCESS'),
          ('CANCELLED', 'FAILED'),
          ('CANCELLED', 'SKIPPED')) THEN
    RAISE EXCEPTION 'EC010: AUD_PIPELINES_RUN_LOG PIPELINE_RUN_ID=%: status % -> % is not an allowed transition (from % the state machine allows: %); status changes go through etl-craft''s functions',
      NEW.PIPELINE_RUN_ID, OLD.STATUS, NEW.STATUS, OLD.STATUS,
      CASE OLD.STATUS
        WHEN 'QUEUED' THEN 'IN-PROGRESS, SKIPPED, CANCELLED'
        WHEN 'IN-PROGRESS' THEN 'SUCCESS, FAILED, SKIPPED, CANCELLED'
        WHEN 'SUCCESS' THEN 'IN-PROGRESS, FAILED, SKIPPED'
        WHEN 'FAILED' THEN 'IN-PROGRESS, SUCCESS, SKIPPED'
        WHEN 'SKIPPED' THEN 'IN-PROGRESS, SUCCESS, FAILED'
        WHEN 'CANCELLED' THEN 'IN-PROGRESS, SUCCESS, FAILED, SKIPPED'
      END
      USING ERRCODE = 'EC010';
  END IF;
  RETURN NEW;
END
$$;

-- tg_aud_task_run_log__guard_transition(): refuses a TASK_RUN status that sql/state_machine.yaml does not
-- allow: on INSERT one of IN-PROGRESS, SKIPPED, SUCCESS, FAILED; on UPDATE a listed (from, to) pair.
CREATE OR REPLACE FUNCTION etl_craft.tg_aud_task_run_log__guard_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.STATUS NOT IN ('IN-PROGRESS', 'SKIPPED', 'SUCCESS', 'FAILED') THEN
      RAISE EXCEPTION 'EC010: AUD_TASK_RUN_LOG TASK_RUN_ID=%: a new row cannot start in status %; it starts in IN-PROGRESS or SKIPPED or SUCCESS or FAILED',
        NEW.TASK_RUN_ID, NEW.STATUS
        USING ERRCODE = 'EC010';
    END IF;
  ELSIF NEW.STATUS IS DISTINCT FROM OLD.STATUS
        AND (OLD.STATUS::text, NEW.STATUS::text) NOT IN (
          ('IN-PROGRESS', 'SUCCESS'),
          ('IN-PROGRESS', 'FAILED'),
          ('IN-PROGRESS', 'SKIPPED'),
          ('IN-PROGRESS', 'CANCELLED'),
          ('SUCCESS', 'IN-PROGRESS'),
          ('SUCCESS', 'FAILED'),
          ('SUCCESS', 'SKIPPED'),
          ('FAILED', 'IN-PROGRESS'),
          ('FAILED', 'SUCCESS'),
          ('FAILED', 'SKIPPED'),
          ('SKIPPED', 'IN-PROGRESS'),
          ('SKIPPED', 'SUCCESS'),
          ('SKIPPED', 'FAILED'),
          ('CANCELLED', 'IN-PROGRESS'),
          ('CANCELLED', 'SUCCESS'),
          ('CANCELLED', 'FAILED'),
          ('CANCELLED', 'SKIPPED')) THEN
    RAISE EXCEPTION 'EC010: AUD_TASK_RUN_LOG TASK_RUN_ID=%: status % -> % is not an allowed transition (from % the state machine allows: %); status changes go through etl-craft''s functions',
      NEW.TASK_RUN_ID, OLD.STATUS, NEW.STATUS, OLD.STATUS,
      CASE OLD.STATUS
        WHEN 'IN-PROGRESS' THEN 'SUCCESS, FAILED, SKIPPED, CANCELLED'
        WHEN 'SUCCESS' THEN 'IN-PROGRESS, FAILED, SKIPPED'
        WHEN 'FAILED' THEN 'IN-PROGRESS, SUCCESS, SKIPPED'
        WHEN 'SKIPPED' THEN 'IN-PROGRESS, SUCCESS, FAILED'
        WHEN 'CANCELLED' THEN 'IN-PROGRESS, SUCCESS, FAILED, SKIPPED'
      END
      USING ERRCODE = 'EC010';
  END IF;
  RETURN NEW;
END
$$;

-- tg_aud_task_attempts__guard_transition(): refuses a ATTEMPT status that sql/state_machine.yaml does not
-- allow: on INSERT one of QUEUED; on UPDATE a listed (from, to) pair.
CREATE OR REPLACE FUNCTION etl_craft.tg_aud_task_attempts__guard_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.STATUS NOT IN ('QUEUED') THEN
      RAISE EXCEPTION 'EC010: AUD_TASK_ATTEMPTS ATTEMPT_ID=%: a new row cannot start in status %; it starts in QUEUED',
        NEW.ATTEMPT_ID, NEW.STATUS
        USING ERRCODE = 'EC010';
    END IF;
  ELSIF NEW.STATUS IS DISTINCT FROM OLD.STATUS
        AND (OLD.STATUS::text, NEW.STATUS::text) NOT IN (
          ('QUEUED', 'CLAIMED'),
          ('QUEUED', 'FAILED'),
          ('QUEUED', 'CANCELLED'),
          ('CLAIMED', 'RUNNING'),
          ('CLAIMED', 'SUCCESS'),
          ('CLAIMED', 'FAILED'),
          ('CLAIMED', 'LOST'),
          ('CLAIMED', 'CANCELLED'),
          ('RUNNING', 'SUCCESS'),
          ('RUNNING', 'FAILED'),
          ('RUNNING', 'TIMED_OUT'),
          ('RUNNING', 'LOST'),
          ('RUNNING', 'CANCELLED')) THEN
    RAISE EXCEPTION 'EC010: AUD_TASK_ATTEMPTS ATTEMPT_ID=%: status % -> % is not an allowed transition (from % the state machine allows: %); status changes go through etl-craft''s functions',
      NEW.ATTEMPT_ID, OLD.STATUS, NEW.STATUS, OLD.STATUS,
      CASE OLD.STATUS
        WHEN 'QUEUED' THEN 'CLAIMED, FAILED, CANCELLED'
        WHEN 'CLAIMED' THEN 'RUNNING, SUCCESS, FAILED, LOST, CANCELLED'
        WHEN 'RUNNING' THEN 'SUCCESS, FAILED, TIMED_OUT, LOST, CANCELLED'
        WHEN 'SUCCESS' THEN 'nothing, it is final'
        WHEN 'FAILED' THEN 'nothing, it is final'
        WHEN 'TIMED_OUT' THEN 'nothing, it is final'
        WHEN 'CANCELLED' THEN 'nothing, it is final'
        WHEN 'LOST' THEN 'nothing, it is final'
      END
      USING ERRCODE = 'EC010';
  END IF;
  RETURN NEW;
END
$$;

-- tg_aud_workers__guard_transition(): refuses a WORKER status that sql/state_machine.yaml does not
-- allow: on INSERT one of ACTIVE; on UPDATE a listed (from, to) pair.
CREATE OR REPLACE FUNCTION etl_craft.tg_aud_workers__guard_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.STATUS NOT IN ('ACTIVE') THEN
      RAISE EXCEPTION 'EC010: AUD_WORKERS WORKER_ID=%: a new row cannot start in status %; it starts in ACTIVE',
        NEW.WORKER_ID, NEW.STATUS
        USING ERRCODE = 'EC010';
    END IF;
  ELSIF NEW.STATUS IS DISTINCT FROM OLD.STATUS
        AND (OLD.STATUS::text, NEW.STATUS::text) NOT IN (
          ('ACTIVE', 'DRAINING'),
          ('ACTIVE', 'GONE'),
          ('DRAINING', 'GONE')) THEN
    RAISE EXCEPTION 'EC010: AUD_WORKERS WORKER_ID=%: status % -> % is not an allowed transition (from % the state machine allows: %); status changes go through etl-craft''s functions',
      NEW.WORKER_ID, OLD.STATUS, NEW.STATUS, OLD.STATUS,
      CASE OLD.STATUS
        WHEN 'ACTIVE' THEN 'DRAINING, GONE'
        WHEN 'DRAINING' THEN 'GONE'
        WHEN 'GONE' THEN 'nothing, it is final'
      END
      USING ERRCODE = 'EC010';
  END IF;
  RETURN NEW;
END
$$;

-- tg_aud_task_attempts__run(): BEFORE INSERT OR UPDATE OF TASK_RUN_ID on AUD_TASK_ATTEMPTS; copies the task run's
-- PIPELINE_RUN_ID onto the attempt, so that a run's queue is one range of ix_attempts_run_queue (claim_attempt
-- with run_id).
CREATE OR REPLACE FUNCTION etl_craft.tg_aud_task_attempts__run() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.PIPELINE_RUN_ID := (SELECT t.PIPELINE_RUN_ID FROM etl_craft.AUD_TASK_RUN_LOG t WHERE t.TASK_RUN_ID = NEW.TASK_RUN_ID);
  RETURN NEW;
END
$$;

-- AUD_ACTIONS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_ACTIONS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');
CREATE OR REPLACE TRIGGER _200_stamp_actor
  BEFORE INSERT OR UPDATE OF ACTOR, ACTOR_KIND
  ON etl_craft.AUD_ACTIONS FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_aud_actions__stamp_actor();
CREATE OR REPLACE TRIGGER _020_append_only BEFORE UPDATE OR DELETE ON etl_craft.AUD_ACTIONS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_append_only('ACTION_ID', 'AUD_ACTIONS is append-only: its rows record history and never change');
CREATE OR REPLACE TRIGGER _020_append_only_truncate BEFORE TRUNCATE ON etl_craft.AUD_ACTIONS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_append_only('ACTION_ID', 'AUD_ACTIONS is append-only: its rows record history and never change');

-- AUD_ALERTS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_ALERTS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');

-- AUD_ALERT_DELIVERIES
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_ALERT_DELIVERIES
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');

-- AUD_BUSINESS_RULE_FLAGS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_BUSINESS_RULE_FLAGS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');

-- AUD_DEPENDENCY_CONSUMPTION
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_DEPENDENCY_CONSUMPTION
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');
CREATE OR REPLACE TRIGGER _020_append_only BEFORE UPDATE OR DELETE ON etl_craft.AUD_DEPENDENCY_CONSUMPTION
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_append_only('CONSUMPTION_ID', 'AUD_DEPENDENCY_CONSUMPTION is append-only: its rows record history and never change');
CREATE OR REPLACE TRIGGER _020_append_only_truncate BEFORE TRUNCATE ON etl_craft.AUD_DEPENDENCY_CONSUMPTION
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_append_only('CONSUMPTION_ID', 'AUD_DEPENDENCY_CONSUMPTION is append-only: its rows record history and never change');

-- AUD_GATE_DECISIONS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_GATE_DECISIONS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');
CREATE OR REPLACE TRIGGER _200_stamp_actor
  BEFORE INSERT OR UPDATE OF DECIDED_BY, DECIDED_BY_KIND
  ON etl_craft.AUD_GATE_DECISIONS FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_aud_gate_decisions__stamp_actor();
CREATE OR REPLACE TRIGGER _020_append_only BEFORE UPDATE OR DELETE ON etl_craft.AUD_GATE_DECISIONS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_append_only('DECISION_ID', 'AUD_GATE_DECISIONS is append-only: its rows record history and never change');
CREATE OR REPLACE TRIGGER _020_append_only_truncate BEFORE TRUNCATE ON etl_craft.AUD_GATE_DECISIONS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_append_only('DECISION_ID', 'AUD_GATE_DECISIONS is append-only: its rows record history and never change');

-- AUD_GATE_WAITS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_GATE_WAITS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');

-- AUD_METADATA_CHANGES
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_METADATA_CHANGES
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');
CREATE OR REPLACE TRIGGER _200_stamp_actor
  BEFORE INSERT OR UPDATE OF ACTOR, ACTOR_KIND
  ON etl_craft.AUD_METADATA_CHANGES FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_aud_metadata_changes__stamp_actor();
CREATE OR REPLACE TRIGGER _020_append_only BEFORE UPDATE OR DELETE ON etl_craft.AUD_METADATA_CHANGES
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_append_only('CHANGE_ID', 'AUD_METADATA_CHANGES is append-only: its rows record history and never change');
CREATE OR REPLACE TRIGGER _020_append_only_truncate BEFORE TRUNCATE ON etl_craft.AUD_METADATA_CHANGES
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_append_only('CHANGE_ID', 'AUD_METADATA_CHANGES is append-only: its rows record history and never change');

-- AUD_OVERSEERS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_OVERSEERS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');
CREATE OR REPLACE TRIGGER _200_stamp_actor
  BEFORE INSERT OR UPDATE OF STARTED_BY, STARTED_BY_KIND
  ON etl_craft.AUD_OVERSEERS FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_aud_overseers__stamp_actor();

-- AUD_PIPELINES_RUN_LOG
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_PIPELINES_RUN_LOG
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');
CREATE OR REPLACE TRIGGER _200_stamp_actor
  BEFORE INSERT OR UPDATE OF STARTED_BY, STARTED_BY_KIND, ENDED_BY, ENDED_BY_KIND
  ON etl_craft.AUD_PIPELINES_RUN_LOG FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_aud_pipelines_run_log__stamp_actor();
CREATE OR REPLACE TRIGGER _100_guard_transition BEFORE INSERT OR UPDATE OF STATUS ON etl_craft.AUD_PIPELINES_RUN_LOG
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_aud_pipelines_run_log__guard_transition();

-- AUD_PIPELINE_PAUSES
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_PIPELINE_PAUSES
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');
CREATE OR REPLACE TRIGGER _200_stamp_actor
  BEFORE INSERT OR UPDATE OF PAUSED_BY, PAUSED_BY_KIND, RESUMED_BY, RESUMED_BY_KIND
  ON etl_craft.AUD_PIPELINE_PAUSES FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_aud_pipeline_pauses__stamp_actor();

-- AUD_RUN_INTERVENTIONS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_RUN_INTERVENTIONS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');
CREATE OR REPLACE TRIGGER _200_stamp_actor
  BEFORE INSERT OR UPDATE OF REQUESTED_BY, REQUESTED_BY_KIND
  ON etl_craft.AUD_RUN_INTERVENTIONS FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_aud_run_interventions__stamp_actor();
CREATE OR REPLACE TRIGGER _020_append_only BEFORE UPDATE OR DELETE ON etl_craft.AUD_RUN_INTERVENTIONS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_append_only('INTERVENTION_ID', 'AUD_RUN_INTERVENTIONS is append-only: its rows record history and never change');
CREATE OR REPLACE TRIGGER _020_append_only_truncate BEFORE TRUNCATE ON etl_craft.AUD_RUN_INTERVENTIONS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_append_only('INTERVENTION_ID', 'AUD_RUN_INTERVENTIONS is append-only: its rows record history and never change');

-- AUD_TARGET_HASH_VERSION
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_TARGET_HASH_VERSION
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');
CREATE OR REPLACE TRIGGER _200_stamp_actor
  BEFORE INSERT OR UPDATE OF RECOMPUTED_BY, RECOMPUTED_BY_KIND
  ON etl_craft.AUD_TARGET_HASH_VERSION FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_aud_target_hash_version__stamp_actor();

-- AUD_TASK_ATTEMPTS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_TASK_ATTEMPTS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');
CREATE OR REPLACE TRIGGER _200_stamp_actor
  BEFORE INSERT OR UPDATE OF REQUESTED_BY, REQUESTED_BY_KIND
  ON etl_craft.AUD_TASK_ATTEMPTS FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_aud_task_attempts__stamp_actor();
CREATE OR REPLACE TRIGGER _100_guard_transition BEFORE INSERT OR UPDATE OF STATUS ON etl_craft.AUD_TASK_ATTEMPTS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_aud_task_attempts__guard_transition();
CREATE OR REPLACE TRIGGER _020_ended_rows_are_final BEFORE UPDATE ON etl_craft.AUD_TASK_ATTEMPTS
  FOR EACH ROW WHEN (OLD.STATUS::text = ANY ('{SUCCESS,FAILED,TIMED_OUT,CANCELLED,LOST}'::text[]))
  EXECUTE FUNCTION etl_craft.tg_append_only('ATTEMPT_ID', 'the attempt has ended and its row is final; a new attempt records a new execution');
CREATE OR REPLACE TRIGGER _020_append_only BEFORE DELETE ON etl_craft.AUD_TASK_ATTEMPTS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_append_only('ATTEMPT_ID', 'attempts are history and are never deleted');
CREATE OR REPLACE TRIGGER _050_run_of_task_run BEFORE INSERT OR UPDATE OF TASK_RUN_ID ON etl_craft.AUD_TASK_ATTEMPTS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_aud_task_attempts__run();

-- AUD_TASK_OFFSETS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_TASK_OFFSETS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');

-- AUD_TASK_RUN_LOG
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_TASK_RUN_LOG
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');
CREATE OR REPLACE TRIGGER _100_guard_transition BEFORE INSERT OR UPDATE OF STATUS ON etl_craft.AUD_TASK_RUN_LOG
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_aud_task_run_log__guard_transition();

-- AUD_WORKERS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.AUD_WORKERS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('runs and their history change only through etl-craft commands and functions');
CREATE OR REPLACE TRIGGER _200_stamp_actor
  BEFORE INSERT OR UPDATE OF STARTED_BY, STARTED_BY_KIND
  ON etl_craft.AUD_WORKERS FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_aud_workers__stamp_actor();
CREATE OR REPLACE TRIGGER _100_guard_transition BEFORE INSERT OR UPDATE OF STATUS ON etl_craft.AUD_WORKERS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_aud_workers__guard_transition();

-- CFG_ALERT_RULES
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.CFG_ALERT_RULES
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('change metadata with a project migration (etl-craft migrate)');
CREATE OR REPLACE TRIGGER _200_stamp BEFORE INSERT OR UPDATE ON etl_craft.CFG_ALERT_RULES
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__stamp('CFG_ALERT_RULES: CREATED_BY, CREATED_DATE, UPDATED_BY and UPDATED_DATE are written by etl-craft with the actor and the time; leave them out of INSERT and UPDATE statements');
CREATE OR REPLACE TRIGGER _900_record_change AFTER INSERT OR UPDATE OR DELETE ON etl_craft.CFG_ALERT_RULES
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__record_change('ALERT_RULE_ID');

-- CFG_API_TOKENS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.CFG_API_TOKENS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('change metadata with a project migration (etl-craft migrate)');
CREATE OR REPLACE TRIGGER _200_stamp BEFORE INSERT OR UPDATE ON etl_craft.CFG_API_TOKENS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__stamp('CFG_API_TOKENS: CREATED_BY, CREATED_DATE, UPDATED_BY and UPDATED_DATE are written by etl-craft with the actor and the time; leave them out of INSERT and UPDATE statements');
CREATE OR REPLACE TRIGGER _900_record_change AFTER INSERT OR UPDATE OR DELETE ON etl_craft.CFG_API_TOKENS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__record_change('TOKEN_ID');

-- CFG_BUSINESS_RULES
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.CFG_BUSINESS_RULES
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('change metadata with a project migration (etl-craft migrate)');
CREATE OR REPLACE TRIGGER _200_stamp BEFORE INSERT OR UPDATE ON etl_craft.CFG_BUSINESS_RULES
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__stamp('CFG_BUSINESS_RULES: CREATED_BY, CREATED_DATE, UPDATED_BY and UPDATED_DATE are written by etl-craft with the actor and the time; leave them out of INSERT and UPDATE statements');
CREATE OR REPLACE TRIGGER _900_record_change AFTER INSERT OR UPDATE OR DELETE ON etl_craft.CFG_BUSINESS_RULES
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__record_change('BUSINESS_RULE_ID');

-- CFG_PIPELINES
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.CFG_PIPELINES
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('change metadata with a project migration (etl-craft migrate)');
CREATE OR REPLACE TRIGGER _200_stamp BEFORE INSERT OR UPDATE ON etl_craft.CFG_PIPELINES
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__stamp('CFG_PIPELINES: CREATED_BY, CREATED_DATE, UPDATED_BY and UPDATED_DATE are written by etl-craft with the actor and the time; leave them out of INSERT and UPDATE statements');
CREATE OR REPLACE TRIGGER _900_record_change AFTER INSERT OR UPDATE OR DELETE ON etl_craft.CFG_PIPELINES
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__record_change('PIPELINE_ID');

-- CFG_PIPELINE_DEPENDENCY
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.CFG_PIPELINE_DEPENDENCY
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('change metadata with a project migration (etl-craft migrate)');
CREATE OR REPLACE TRIGGER _200_stamp BEFORE INSERT OR UPDATE ON etl_craft.CFG_PIPELINE_DEPENDENCY
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__stamp('CFG_PIPELINE_DEPENDENCY: CREATED_BY, CREATED_DATE, UPDATED_BY and UPDATED_DATE are written by etl-craft with the actor and the time; leave them out of INSERT and UPDATE statements');
CREATE OR REPLACE TRIGGER _900_record_change AFTER INSERT OR UPDATE OR DELETE ON etl_craft.CFG_PIPELINE_DEPENDENCY
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__record_change('PIPELINE_DEPENDENCY_ID');

-- CFG_POOLS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.CFG_POOLS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('change metadata with a project migration (etl-craft migrate)');
CREATE OR REPLACE TRIGGER _200_stamp BEFORE INSERT OR UPDATE ON etl_craft.CFG_POOLS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__stamp('CFG_POOLS: CREATED_BY, CREATED_DATE, UPDATED_BY and UPDATED_DATE are written by etl-craft with the actor and the time; leave them out of INSERT and UPDATE statements');
CREATE OR REPLACE TRIGGER _900_record_change AFTER INSERT OR UPDATE OR DELETE ON etl_craft.CFG_POOLS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__record_change('POOL_ID');

-- CFG_PROJECTS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.CFG_PROJECTS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('change metadata with a project migration (etl-craft migrate)');
CREATE OR REPLACE TRIGGER _200_stamp BEFORE INSERT OR UPDATE ON etl_craft.CFG_PROJECTS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__stamp('CFG_PROJECTS: CREATED_BY, CREATED_DATE, UPDATED_BY and UPDATED_DATE are written by etl-craft with the actor and the time; leave them out of INSERT and UPDATE statements');
CREATE OR REPLACE TRIGGER _900_record_change AFTER INSERT OR UPDATE OR DELETE ON etl_craft.CFG_PROJECTS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__record_change('PROJECT_ID');

-- CFG_TASKS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.CFG_TASKS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('change metadata with a project migration (etl-craft migrate)');
CREATE OR REPLACE TRIGGER _200_stamp BEFORE INSERT OR UPDATE ON etl_craft.CFG_TASKS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__stamp('CFG_TASKS: CREATED_BY, CREATED_DATE, UPDATED_BY and UPDATED_DATE are written by etl-craft with the actor and the time; leave them out of INSERT and UPDATE statements');
CREATE OR REPLACE TRIGGER _900_record_change AFTER INSERT OR UPDATE OR DELETE ON etl_craft.CFG_TASKS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__record_change('TASK_ID');

-- CFG_TASK_DEPENDENCY
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.CFG_TASK_DEPENDENCY
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('change metadata with a project migration (etl-craft migrate)');
CREATE OR REPLACE TRIGGER _200_stamp BEFORE INSERT OR UPDATE ON etl_craft.CFG_TASK_DEPENDENCY
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__stamp('CFG_TASK_DEPENDENCY: CREATED_BY, CREATED_DATE, UPDATED_BY and UPDATED_DATE are written by etl-craft with the actor and the time; leave them out of INSERT and UPDATE statements');
CREATE OR REPLACE TRIGGER _900_record_change AFTER INSERT OR UPDATE OR DELETE ON etl_craft.CFG_TASK_DEPENDENCY
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__record_change('TASK_DEPENDENCY_ID');

-- CFG_TASK_PARAMETERS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.CFG_TASK_PARAMETERS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('change metadata with a project migration (etl-craft migrate)');
CREATE OR REPLACE TRIGGER _200_stamp BEFORE INSERT OR UPDATE ON etl_craft.CFG_TASK_PARAMETERS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__stamp('CFG_TASK_PARAMETERS: CREATED_BY, CREATED_DATE, UPDATED_BY and UPDATED_DATE are written by etl-craft with the actor and the time; leave them out of INSERT and UPDATE statements');
CREATE OR REPLACE TRIGGER _900_record_change AFTER INSERT OR UPDATE OR DELETE ON etl_craft.CFG_TASK_PARAMETERS
  FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_cfg__record_change('PARAMETER_ID');

-- ENG_ERROR_CODES
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.ENG_ERROR_CODES
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('it is maintained by etl-craft init-db and etl-craft migrate');
CREATE OR REPLACE TRIGGER _015_migrate_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.ENG_ERROR_CODES
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_migrate_only('etl-craft migrate rewrites it from sql/errors.yaml, the file the functions'' error codes come from');

-- ENG_SETTINGS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.ENG_SETTINGS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('it is maintained by etl-craft init-db and etl-craft migrate');
CREATE OR REPLACE TRIGGER _200_stamp_actor
  BEFORE INSERT OR UPDATE OF SET_BY, SET_BY_KIND
  ON etl_craft.ENG_SETTINGS FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_eng_settings__stamp_actor();
CREATE OR REPLACE TRIGGER _020_engine_id_is_final BEFORE UPDATE OR DELETE ON etl_craft.ENG_SETTINGS
  FOR EACH ROW WHEN (OLD.SETTING = 'ENGINE_ID')
  EXECUTE FUNCTION etl_craft.tg_append_only('SETTING', 'the Engine DB''s identity is created once (migration 0014) and never changes: the task logs of its attempts are kept under it; a database with another identity is another Engine DB (etl-craft engine copy makes one)');

-- ENG_STATUSES
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.ENG_STATUSES
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('it is maintained by etl-craft init-db and etl-craft migrate');
CREATE OR REPLACE TRIGGER _015_migrate_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.ENG_STATUSES
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_migrate_only('etl-craft migrate rewrites it from sql/state_machine.yaml, the file the transition guards are rendered from');

-- ENG_TRANSITIONS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.ENG_TRANSITIONS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('it is maintained by etl-craft init-db and etl-craft migrate');
CREATE OR REPLACE TRIGGER _015_migrate_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.ENG_TRANSITIONS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_migrate_only('etl-craft migrate rewrites it from sql/state_machine.yaml, the file the transition guards are rendered from');

-- SCHEMA_MIGRATIONS
CREATE OR REPLACE TRIGGER _010_engine_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.SCHEMA_MIGRATIONS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_engine_only('it is maintained by etl-craft init-db and etl-craft migrate');
CREATE OR REPLACE TRIGGER _015_migrate_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON etl_craft.SCHEMA_MIGRATIONS
  FOR EACH STATEMENT EXECUTE FUNCTION etl_craft.tg_migrate_only('it is the ledger of what etl-craft migrate applied; run etl-craft migrate');
CREATE OR REPLACE TRIGGER _200_stamp_actor
  BEFORE INSERT OR UPDATE OF APPLIED_BY
  ON etl_craft.SCHEMA_MIGRATIONS FOR EACH ROW EXECUTE FUNCTION etl_craft.tg_schema_migrations__stamp_actor();
