-- 060_control: pausing and resuming pipelines, and recording each state-changing request (AUD_ACTIONS).


-- @function pause_pipeline
-- @args pipeline_id bigint, reason text
-- @returns pause_id bigint, paused_at timestamptz
-- @purpose Pause a pipeline: it starts no run and no task until it is resumed (create_run, admit_run and
--   queue_attempt refuse it); runs and attempts already going are left alone. Records the actor and the reason in
--   AUD_PIPELINE_PAUSES.
-- @transition PAUSE (none) -> open (RESUMED_AT NULL)
-- @locks the ux_one_open_pause entry of the pipeline (one open pause per pipeline)
-- @errors EC021 no such pipeline; EC023 the pipeline is already paused
-- @end pause_pipeline

-- @function resume_pipeline
-- @args pipeline_id bigint, reason text
-- @returns pause_id bigint, resumed_at timestamptz
-- @purpose Resume a paused pipeline: closes its open pause with RESUMED_AT, RESUMED_BY, RESUMED_BY_KIND and
--   RESUME_REASON. Runs and tasks that waited start on the next admission.
-- @transition PAUSE open -> closed (RESUMED_AT set)
-- @locks the open pause row of the pipeline
-- @errors EC021 no such pipeline; EC023 the pipeline is not paused
-- @end resume_pipeline

-- @function record_action
-- @args command text, arguments text, pipeline_id bigint = NULL, run_id bigint = NULL, task_id bigint = NULL, host text = NULL
-- @returns action_id bigint
-- @purpose Record one state-changing request in AUD_ACTIONS, once: the command, its arguments (a JSON object,
--   as text; sensitive values already masked by the caller), the pipeline, run and task it names, the host, and the
--   actor. The request is the action: STARTED_AT = ENDED_AT = now, OUTCOME REQUESTED, no exit code; what it led to
--   is recorded on runs and attempts.
-- @transition none (appends an AUD_ACTIONS row)
-- @locks none
-- @errors none of its own; arguments that are not JSON are refused by the database
-- @end record_action



-- @function pause_project
-- @args project_code text, reason text
-- @returns pipeline_id bigint, pipeline_code text, pause_id bigint, paused_at timestamptz
-- @purpose Pause every active pipeline of a project at once (etl-craft pause --project-code P): one pause per
--   pipeline in AUD_PIPELINE_PAUSES, with the actor and the reason, as pause_pipeline records it. A pipeline already
--   paused keeps its pause. Returns the pauses this call recorded, one row per pipeline.
-- @transition PAUSE (none) -> open (RESUMED_AT NULL), for each active pipeline of the project not paused
-- @locks the ux_one_open_pause entries of the project's pipelines
-- @errors EC021 no such active project; EC023 every active pipeline of the project is already paused (or it has
--   none)
-- @end pause_project

-- @function resume_project
-- @args project_code text, reason text
-- @returns pipeline_id bigint, pipeline_code text, pause_id bigint, resumed_at timestamptz
-- @purpose Resume every paused active pipeline of a project at once (etl-craft resume --project-code P): closes
--   each open pause as resume_pipeline does. Returns the pauses this call closed, one row per pipeline.
-- @transition PAUSE open -> closed (RESUMED_AT set), for each paused active pipeline of the project
-- @locks the open pause rows of the project's pipelines
-- @errors EC021 no such active project; EC023 no active pipeline of the project is paused
-- @end resume_project
