"""Metadata built in memory for the generate-yml tests: pipelines, tasks and edges without an Engine DB."""

from __future__ import annotations

from collections.abc import Sequence

from etlcraft.services.metadata import Metadata, ParameterValue, PipelineEdge, PipelineView, TaskEdge, TaskView


def pipeline(code: str, pipeline_id: int = 1, tasks: int = 0) -> PipelineView:
    return PipelineView(pipeline_id, "proj", code, f"{code} name", None, "0 6 * * *", "Europe/Paris", False, "SKIP", 0,
                        None, tasks, False, None)


def task(p: PipelineView, task_id: int, code: str, condition: str = "ALL", **parameters: str) -> TaskView:
    return TaskView(task_id, p.pipeline_id, p.code, code, None, "PYTHON", None, None, f"{code}.py", None, condition,
                    tuple(ParameterValue(k, v) for k, v in parameters.items()))


def edge(number: int, down: TaskView, up: TaskView, kind: str = "SUCCESS") -> TaskEdge:
    return TaskEdge(number, down.task_id, down.code, down.pipeline_code, up.task_id, up.code, up.pipeline_code,
                    up.pipeline_id, down.pipeline_id, kind, True, True)


def pipeline_edge(number: int, down: PipelineView, up: PipelineView, kind: str = "SUCCESS") -> PipelineEdge:
    return PipelineEdge(number, down.pipeline_id, down.code, up.pipeline_id, up.code, kind, True, True)


def metadata(pipelines: Sequence[PipelineView], tasks: Sequence[TaskView], edges: Sequence[TaskEdge] = (),
             pipeline_edges: Sequence[PipelineEdge] = ()) -> Metadata:
    return Metadata((), tuple(pipelines), tuple(tasks), tuple(edges), tuple(pipeline_edges))
