-- Run the example pipeline customer_orders by hand with the Engine DB's functions (psql).
-- Every call names its actor with p_actor; the Engine DB records it on everything it writes.
\set actor 'dba:alice'
\set owner 'dba:alice:psql'

-- 1. Create the run QUEUED (its key identifies it), then admit it through its pipeline gate and take it over
--    with a ten-minute lease. admit_run judges every dependency on another pipeline and records each decision in
--    AUD_GATE_DECISIONS; customer_orders has none, so it is admitted at once (satisfied 0, unsatisfied 0).
SELECT pipeline_run_id AS run_id, status, created
  FROM etl_craft.create_run(
         p_pipeline_id => (SELECT pipeline_id FROM etl_craft.cfg_pipelines
                            WHERE pipeline_code = 'customer_orders' AND active_flag = 'Y'),
         p_run_key => 'manual:sql-api-guide', p_run_date => DATE '2026-01-02', p_status => 'QUEUED',
         p_reason => 'a run by hand', p_actor => :'actor') \gset
SELECT * FROM etl_craft.admit_run(p_run_id => :run_id, p_owner_id => :'owner', p_lease_seconds => 600,
                                  p_actor => :'actor');
SELECT result, reason FROM etl_craft.aud_v_gate_decisions WHERE pipeline_run_id = :run_id;

-- 2. What can run now? The two loads; customer_totals waits for both.
SELECT * FROM etl_craft.ready_tasks(p_run_id => :run_id);

-- 3. Queue every ready task.
SELECT q.*
  FROM etl_craft.ready_tasks(p_run_id => :run_id) r
 CROSS JOIN LATERAL etl_craft.queue_attempt(p_run_id => :run_id, p_task_id => r.task_id, p_actor => :'actor') q
 WHERE r.decision = 'RUN';

-- 4. Claim an attempt, say its process started, and record its outcome. Twice: one per load.
SELECT attempt_id AS attempt FROM etl_craft.claim_attempt(
         p_pool => 'default', p_slot_kinds => 'warehouse', p_owner_id => :'owner', p_actor => :'actor') \gset
SELECT * FROM etl_craft.start_attempt(p_attempt_id => :attempt, p_owner_id => :'owner', p_host => 'dba-laptop',
                                      p_pid => 4242, p_process_start => 'by hand', p_actor => :'actor');
SELECT * FROM etl_craft.finish_attempt(p_attempt_id => :attempt, p_owner_id => :'owner', p_status => 'SUCCESS',
                                       p_rows_written => 3, p_actor => :'actor');

SELECT attempt_id AS attempt FROM etl_craft.claim_attempt(
         p_pool => 'default', p_slot_kinds => 'warehouse', p_owner_id => :'owner', p_actor => :'actor') \gset
SELECT * FROM etl_craft.start_attempt(p_attempt_id => :attempt, p_owner_id => :'owner', p_host => 'dba-laptop',
                                      p_pid => 4243, p_process_start => 'by hand', p_actor => :'actor');
SELECT * FROM etl_craft.finish_attempt(p_attempt_id => :attempt, p_owner_id => :'owner', p_status => 'SUCCESS',
                                       p_rows_written => 3, p_actor => :'actor');

-- 5. Both loads succeeded: customer_totals is ready. Queue it, run it, record it.
SELECT q.*
  FROM etl_craft.ready_tasks(p_run_id => :run_id) r
 CROSS JOIN LATERAL etl_craft.queue_attempt(p_run_id => :run_id, p_task_id => r.task_id, p_actor => :'actor') q
 WHERE r.decision = 'RUN';
SELECT attempt_id AS attempt FROM etl_craft.claim_attempt(
         p_pool => 'default', p_slot_kinds => 'warehouse', p_owner_id => :'owner', p_actor => :'actor') \gset
SELECT * FROM etl_craft.start_attempt(p_attempt_id => :attempt, p_owner_id => :'owner', p_host => 'dba-laptop',
                                      p_pid => 4244, p_process_start => 'by hand', p_actor => :'actor');
SELECT * FROM etl_craft.finish_attempt(p_attempt_id => :attempt, p_owner_id => :'owner', p_status => 'SUCCESS',
                                       p_rows_written => 2, p_actor => :'actor');

-- 6. Nothing is left to run: end the run. Its status comes from its task runs.
SELECT * FROM etl_craft.finalize_run(p_run_id => :run_id, p_actor => :'actor');
