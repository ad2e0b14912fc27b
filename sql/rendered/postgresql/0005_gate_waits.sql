-- 0005_gate_waits: a gate that is not met yet but may still be met (its upstream has a run queued or in progress)
-- waits without holding a slot or a thread: the wait is a row here, with the time of its next look, so a supervisor
-- that restarts resumes it (same first look, same deadline) and etl-craft explain can show it (S4.D). One open wait
-- per run and task (TASK_ID NULL: the run's pipeline gate); it ends SATISFIED, BYPASSED (an operator ran it without
-- its dependencies), UNSATISFIED (the deadline passed, or the upstream can no longer meet it) or ABANDONED (the run
-- ended or was cancelled, or an operator settled the task, while it waited).
CREATE TABLE AUD_GATE_WAITS (
  GATE_WAIT_ID BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  PIPELINE_RUN_ID BIGINT REFERENCES AUD_PIPELINES_RUN_LOG (PIPELINE_RUN_ID) NOT NULL,
  TASK_ID BIGINT REFERENCES CFG_TASKS (TASK_ID),
  FIRST_CHECK_AT TIMESTAMPTZ NOT NULL,
  LAST_CHECK_AT TIMESTAMPTZ NOT NULL,
  NEXT_CHECK_AT TIMESTAMPTZ,
  WAIT_UNTIL TIMESTAMPTZ NOT NULL,
  LOOKS INT NOT NULL CONSTRAINT looks_is_positive CHECK (LOOKS >= 1),
  WAITING_FOR TEXT NOT NULL,
  OUTCOME VARCHAR(16) CONSTRAINT outcome_is_valid CHECK (OUTCOME IN ('SATISFIED', 'BYPASSED', 'UNSATISFIED', 'ABANDONED')),
  ENDED_AT TIMESTAMPTZ,
  CONSTRAINT open_wait_has_a_next_look CHECK (
    (OUTCOME IS NULL AND ENDED_AT IS NULL AND NEXT_CHECK_AT IS NOT NULL)
    OR (OUTCOME IS NOT NULL AND ENDED_AT IS NOT NULL AND NEXT_CHECK_AT IS NULL))
);
CREATE UNIQUE INDEX ux_gate_wait_open ON AUD_GATE_WAITS (PIPELINE_RUN_ID, COALESCE(TASK_ID, 0)) WHERE ENDED_AT IS NULL;
