-- pause_project and resume_project: one pause per active pipeline of the project, none for another project's
-- pipelines (even one with the same code); a pipeline already paused keeps its pause; an unknown project or nothing
-- left to pause or resume is refused with nothing written.
BEGIN;
SELECT plan(7);
SELECT etl_test.serialize();
SELECT etl_test.act();
SELECT etl_test.gates_fixture();
SELECT etl_test.gates_at('2026-01-02 06:00:00+00');
INSERT INTO etl_craft.cfg_projects (project_code) VALUES ('other');
INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code)
  SELECT project_id, 'g_up' FROM etl_craft.cfg_projects WHERE project_code = 'other';
SELECT * FROM etl_craft.pause_pipeline(p_pipeline_id => etl_test.gates_pipeline('g_down'), p_reason => 'earlier');

SELECT is((SELECT array_agg(pipeline_code ORDER BY pipeline_code)::text
             FROM etl_craft.pause_project(p_project_code => 'gp', p_reason => 'move', p_actor => 'alice@host')),
          '{g_up}', 'the project''s pipelines not paused yet are paused; g_down keeps its earlier pause');
SELECT is((SELECT count(*)::int FROM etl_craft.aud_pipeline_pauses z JOIN etl_craft.cfg_pipelines p USING (pipeline_id)
            JOIN etl_craft.cfg_projects pr USING (project_id) WHERE pr.project_code = 'other'),
          0, 'the other project''s pipeline of the same code is not paused');
SELECT is((SELECT row(z.paused_by, z.pause_reason)::text FROM etl_craft.aud_pipeline_pauses z
             JOIN etl_craft.cfg_pipelines p USING (pipeline_id) JOIN etl_craft.cfg_projects pr USING (project_id)
            WHERE pr.project_code = 'gp' AND p.pipeline_code = 'g_up'),
          '(alice@host,move)', 'the pause records actor and reason');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.pause_project(p_project_code => 'gp', p_reason => 'again') $$,
                        'EC023', 'project gp has no active pipeline that is not paused%',
                        'a project whose pipelines are all paused is refused (EC023)');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.pause_project(p_project_code => 'nope', p_reason => 'x') $$,
                        'EC021', 'project nope is not an active project%', 'an unknown project is not found (EC021)');
SELECT is((SELECT count(*)::int FROM etl_craft.resume_project(p_project_code => 'gp', p_reason => 'moved')),
          2, 'resume_project closes both open pauses of the project');
SELECT etl_test.refused($$ SELECT * FROM etl_craft.resume_project(p_project_code => 'gp', p_reason => 'again') $$,
                        'EC023', 'project gp has no paused active pipeline%', 'nothing left to resume is refused (EC023)');

SELECT * FROM finish();
ROLLBACK;
