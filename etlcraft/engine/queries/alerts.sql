-- Reads of the alert outbox (etlcraft/alerts/outbox.py) and of `etl-craft alerts list`.
-- {TABLE} names are qualified for the Engine DB's dialect by etlcraft.engine.queries; binds are :name.

-- name: alert_message :one
-- One alert with what a channel shows of it: project, pipeline, run, task.
SELECT a.ALERT_ID, a.ALERT_KIND, pr.PROJECT_CODE, p.PIPELINE_CODE, a.PIPELINE_RUN_ID, r.RUN_DATE, r.RUN_KEY,
       t.TASK_CODE, a.TASK_RUN_ID, a.ATTEMPT_ID, a.STATUS, a.ERROR_MESSAGE, a.RAISED_AT
  FROM {AUD_ALERTS} a
  JOIN {AUD_PIPELINES_RUN_LOG} r ON r.PIPELINE_RUN_ID = a.PIPELINE_RUN_ID
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID
  JOIN {CFG_PROJECTS} pr ON pr.PROJECT_ID = p.PROJECT_ID
  LEFT JOIN {CFG_TASKS} t ON t.TASK_ID = a.TASK_ID
 WHERE a.ALERT_ID = :alert_id;

-- name: alerts_list :many
-- Alerts, newest first, with one row per delivery (channel): optionally of one pipeline (its code within project
-- :project_code: codes are unique per project), and only those with a delivery in one status.
SELECT a.ALERT_ID, a.ALERT_KIND, p.PIPELINE_CODE, a.PIPELINE_RUN_ID, r.RUN_KEY, t.TASK_CODE, a.ATTEMPT_ID,
       a.STATUS, a.ERROR_MESSAGE, a.RAISED_AT, d.DELIVERY_ID, d.CHANNEL, d.DELIVERY_STATUS, d.ATTEMPTS,
       d.NEXT_ATTEMPT_AT, d.LAST_ATTEMPT_AT, d.LAST_DETAIL, d.WARNING, d.DELIVERED_AT
  FROM {AUD_ALERTS} a
  JOIN {AUD_PIPELINES_RUN_LOG} r ON r.PIPELINE_RUN_ID = a.PIPELINE_RUN_ID
  JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = r.PIPELINE_ID
  JOIN {CFG_PROJECTS} pr ON pr.PROJECT_ID = p.PROJECT_ID
  LEFT JOIN {CFG_TASKS} t ON t.TASK_ID = a.TASK_ID
  LEFT JOIN {AUD_ALERT_DELIVERIES} d ON d.ALERT_ID = a.ALERT_ID
 WHERE (CAST(:pipeline_code AS VARCHAR(128)) IS NULL
        OR (p.PIPELINE_CODE = :pipeline_code AND pr.PROJECT_CODE = :project_code))
   AND (CAST(:status AS VARCHAR(16)) IS NULL OR EXISTS (SELECT 1 FROM {AUD_ALERT_DELIVERIES} s
                                    WHERE s.ALERT_ID = a.ALERT_ID AND s.DELIVERY_STATUS = :status))
 ORDER BY a.ALERT_ID DESC, d.DELIVERY_ID
 LIMIT :limit;

-- name: alert_rules :many
-- Every CFG_ALERT_RULES row with its project and pipeline codes (etl-craft validate).
SELECT ar.ALERT_RULE_ID, pr.PROJECT_CODE, p.PIPELINE_CODE, ar.ALERT_KIND, ar.CHANNELS, ar.THRESHOLD_MINUTES,
       ar.ACTIVE_FLAG
  FROM {CFG_ALERT_RULES} ar
  JOIN {CFG_PROJECTS} pr ON pr.PROJECT_ID = ar.PROJECT_ID
  LEFT JOIN {CFG_PIPELINES} p ON p.PIPELINE_ID = ar.PIPELINE_ID
 ORDER BY ar.ALERT_RULE_ID;
