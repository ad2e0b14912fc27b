-- Alerts (issue 23): finalize_run raises RUN_FAILED under an active rule (a pipeline's own rule replacing its
-- project's default) with one PENDING delivery per channel, once per run and kind; lose_attempt raises
-- ATTEMPT_LOST; raise_overdue_alerts raises GATE_WAITING past the rule's threshold; claim_alert_deliveries claims
-- due deliveries once until the claim expires; record_alert_delivery is fenced by the claim and retries or ends.
BEGIN;
SELECT plan(20);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.gates_fixture();
SELECT etl_test.gates_at('2026-01-02 06:00:00+00');
INSERT INTO etl_craft.cfg_alert_rules (project_id, alert_kind, channels)
  SELECT project_id, 'RUN_FAILED', 'ops, chat' FROM etl_craft.cfg_projects WHERE project_code = 'gp';
INSERT INTO etl_craft.cfg_alert_rules (project_id, pipeline_id, alert_kind, channels)
  SELECT project_id, etl_test.gates_pipeline('g_down'), 'RUN_FAILED', 'down_team' FROM etl_craft.cfg_projects;
INSERT INTO etl_craft.cfg_alert_rules (project_id, alert_kind, channels, threshold_minutes)
  SELECT project_id, 'GATE_WAITING', 'ops', 30 FROM etl_craft.cfg_projects;
INSERT INTO etl_craft.cfg_alert_rules (project_id, alert_kind, channels)
  SELECT project_id, 'ATTEMPT_LOST', 'ops' FROM etl_craft.cfg_projects;

-- 1-3: a failed run of g_up raises RUN_FAILED on the project's channels, naming its failed task.
SELECT etl_test.gates_task_run(etl_test.gates_run('g_up', 'manual:f'), 'g_extract', 'FAILED');
SELECT is((SELECT status FROM etl_craft.finalize_run(
             p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:f'))),
          'FAILED', 'the run ends FAILED');
SELECT results_eq($$ SELECT a.alert_kind::text, a.task_id, a.status::text, d.channel::text, d.delivery_status::text
                       FROM etl_craft.aud_alerts a JOIN etl_craft.aud_alert_deliveries d USING (alert_id)
                      ORDER BY d.delivery_id $$,
                  $$ VALUES ('RUN_FAILED', etl_test.gates_task('g_extract'), 'FAILED', 'ops', 'PENDING'),
                            ('RUN_FAILED', etl_test.gates_task('g_extract'), 'FAILED', 'chat', 'PENDING') $$,
                  'RUN_FAILED with one PENDING delivery per channel of the project default');
SELECT is((SELECT count(*) FROM etl_craft.aud_v_alerts), 2::bigint, 'AUD_V_ALERTS shows the alert on each channel');

-- 4: g_down's own rule replaces the project default.
SELECT etl_test.gates_task_run(etl_test.gates_run('g_down', 'manual:d'), 'g_build', 'FAILED');
SELECT etl_test.gates_task_run((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:d'),
                               'g_ingest', 'SKIPPED');
SELECT * FROM etl_craft.finalize_run(
  p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:d'));
SELECT results_eq($$ SELECT a.channels::text FROM etl_craft.aud_alerts a
                      JOIN etl_craft.aud_pipelines_run_log r USING (pipeline_run_id) WHERE r.run_key = 'manual:d' $$,
                  $$ VALUES ('down_team') $$, 'a pipeline''s own rule replaces its project''s default');

-- 5: a second RUN_FAILED of the same run (reopened, failed again) is suppressed.
SELECT * FROM etl_craft.reopen_run(
  p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:f'), p_reason => 'again');
SELECT * FROM etl_craft.finalize_run(
  p_run_id => (SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:f'));
SELECT is((SELECT count(*) FROM etl_craft.aud_alerts a JOIN etl_craft.aud_pipelines_run_log r USING (pipeline_run_id)
            WHERE r.run_key = 'manual:f'), 1::bigint, 'one alert per run and kind');

-- 6: lose_attempt raises ATTEMPT_LOST naming the attempt.
SELECT etl_test.gates_attempt(etl_test.gates_task_run(etl_test.gates_run('g_up', 'manual:l'), 'g_extract',
                                                      'IN-PROGRESS'), 'RUNNING', 'host:1:a');
SELECT * FROM etl_craft.lose_attempt(
  p_attempt_id => (SELECT max(attempt_id) FROM etl_craft.aud_task_attempts), p_owner_id => 'host:1:a');
SELECT results_eq($$ SELECT alert_kind::text, attempt_id, status::text FROM etl_craft.aud_alerts
                      WHERE alert_kind = 'ATTEMPT_LOST' $$,
                  $$ SELECT 'ATTEMPT_LOST', max(attempt_id), 'LOST' FROM etl_craft.aud_task_attempts $$,
                  'lose_attempt raises ATTEMPT_LOST');

-- 7-8: raise_overdue_alerts raises GATE_WAITING once a wait passes the rule's threshold, once.
INSERT INTO etl_craft.aud_gate_waits (pipeline_run_id, task_id, first_check_at, last_check_at, next_check_at,
                                      wait_until, looks, waiting_for)
  VALUES ((SELECT pipeline_run_id FROM etl_craft.aud_pipelines_run_log WHERE run_key = 'manual:l'), NULL,
          etl_craft.clock_now(), etl_craft.clock_now(), etl_craft.clock_now(), etl_craft.clock_now(), 1, 'g_x');
SELECT etl_test.gates_at('2026-01-02 06:29:00+00');
SELECT is((SELECT count(*) FROM etl_craft.raise_overdue_alerts()), 0::bigint, 'nothing before the threshold');
SELECT etl_test.gates_at('2026-01-02 06:30:00+00');
SELECT results_eq($$ SELECT alert_kind FROM etl_craft.raise_overdue_alerts() $$, $$ VALUES ('GATE_WAITING') $$,
                  'GATE_WAITING at the threshold');

-- 9-11: claim_alert_deliveries claims the due deliveries once; a live claim is not claimed again.
SELECT is((SELECT count(*) FROM etl_craft.claim_alert_deliveries(p_owner_id => 'a', p_max_deliveries => 2,
                                                                 p_lease_seconds => 60)), 2::bigint,
          'claims up to max_deliveries');
SELECT is((SELECT count(*) FROM etl_craft.claim_alert_deliveries(p_owner_id => 'b', p_max_deliveries => 100)),
          3::bigint, 'another owner claims the others');
SELECT is((SELECT count(*) FROM etl_craft.claim_alert_deliveries(p_owner_id => 'c')), 0::bigint,
          'live claims are not claimed again');

-- 12-13: the first owner's claims expire; a third owner claims them.
SELECT etl_test.gates_at('2026-01-02 06:31:01+00');
SELECT is((SELECT count(*) FROM etl_craft.claim_alert_deliveries(p_owner_id => 'c', p_max_deliveries => 100)),
          5::bigint, 'expired claims are claimed again');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.record_alert_delivery(
                          p_delivery_id => (SELECT min(delivery_id) FROM etl_craft.aud_alert_deliveries),
                          p_owner_id => 'a', p_outcome => 'DELIVERED') $$,
                        'EC020', 'alert delivery % (channel ops) is PENDING claimed by c, expected PENDING claimed by a; nothing was recorded%',
                        'a stale owner records nothing (EC020)');

-- 14-18: record_alert_delivery: DELIVERED, FAILED with a retry (due again), FAILED for good.
SELECT results_eq($$ SELECT delivery_status, attempts FROM etl_craft.record_alert_delivery(
                       p_delivery_id => (SELECT min(delivery_id) FROM etl_craft.aud_alert_deliveries),
                       p_owner_id => 'c', p_outcome => 'DELIVERED', p_detail => '250 ok') $$,
                  $$ VALUES ('DELIVERED', 1) $$, 'DELIVERED');
SELECT results_eq($$ SELECT delivery_status, next_attempt_at FROM etl_craft.record_alert_delivery(
                       p_delivery_id => (SELECT min(delivery_id) + 1 FROM etl_craft.aud_alert_deliveries),
                       p_owner_id => 'c', p_outcome => 'FAILED', p_detail => '500', p_retry_after_seconds => 30) $$,
                  $$ VALUES ('PENDING', '2026-01-02 06:31:31+00'::timestamptz) $$, 'FAILED with a retry is due again');
SELECT results_eq($$ SELECT delivery_status FROM etl_craft.record_alert_delivery(
                       p_delivery_id => (SELECT min(delivery_id) + 2 FROM etl_craft.aud_alert_deliveries),
                       p_owner_id => 'c', p_outcome => 'FAILED', p_detail => '404') $$,
                  $$ VALUES ('FAILED') $$, 'FAILED without a retry ends FAILED');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.record_alert_delivery(p_delivery_id => -1, p_owner_id => 'c',
                                                                         p_outcome => 'DELIVERED') $$,
                        'EC021', 'alert delivery -1 does not exist%', 'an unknown delivery (EC021)');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.record_alert_delivery(
                          p_delivery_id => (SELECT max(delivery_id) FROM etl_craft.aud_alert_deliveries),
                          p_owner_id => 'c', p_outcome => 'SENT') $$,
                        'EC023', '%outcome is DELIVERED or FAILED%', 'an unknown outcome (EC023)');

-- 19-20: direct writes are refused; a bad channel list is refused by its rule.
SELECT etl_test.unmark();
SELECT etl_test.refused($$ UPDATE etl_craft.aud_alert_deliveries SET delivery_status = 'DELIVERED' $$,
                        'EC001', '%AUD_ALERT_DELIVERIES is written only by etl-craft%', 'a hand-written UPDATE is refused');
SELECT etl_test.act();
SELECT throws_like($$ INSERT INTO etl_craft.cfg_alert_rules (project_id, alert_kind, channels)
                      SELECT project_id, 'SLA_BREACHED', 'ops;drop' FROM etl_craft.cfg_projects $$,
                   '%channels_are_names%', 'CHANNELS is a comma list of names');

SELECT * FROM finish();
ROLLBACK;
