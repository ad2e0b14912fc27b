"""Dependency cycles: the one cycle finder that validate (a finding) and migrate (a refusal) share.

Edges are (node, upstream): the node waits for its upstream. `dependency_cycles` reads the two graphs etl-craft
runs by: the tasks of each pipeline (CFG_TASK_DEPENDENCY inside one pipeline) and the pipelines
(CFG_PIPELINE_DEPENDENCY, and a CFG_TASK_DEPENDENCY across pipelines, which makes its pipeline wait too).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TypeVar

N = TypeVar("N", bound=Hashable)


@dataclass(frozen=True)
class TaskDependency:
    """TASK of PIPELINE waits for UPSTREAM_TASK of UPSTREAM_PIPELINE (an active CFG_TASK_DEPENDENCY row)."""

    pipeline: str
    task: str
    upstream_pipeline: str
    upstream_task: str


@dataclass(frozen=True)
class Cycle:
    """Nodes that wait for each other: the tasks of one pipeline, or pipelines (`pipeline` is None)."""

    pipeline: str | None
    path: tuple[str, ...]  # ends where it starts: (a, b, a)
    text: str  # the path as a user reads it; a pipeline cycle says why each pipeline waits for the next

    @property
    def members(self) -> frozenset[str]:
        return frozenset(self.path)

    @property
    def arrows(self) -> str:
        return " -> ".join(self.path)


def dependency_cycles(pipelines: Sequence[str], tasks: Sequence[tuple[str, str]],
                      task_edges: Iterable[TaskDependency],
                      pipeline_edges: Iterable[tuple[str, str]]) -> list[Cycle]:
    """Every cycle of the active metadata: `pipelines` (codes, in order), `tasks` ((pipeline, task), in order),
    the active task dependencies whose upstream is active, and the active (pipeline, upstream pipeline) edges.
    Task cycles first, pipeline by pipeline, then pipeline cycles."""
    task_edges = list(task_edges)
    found: list[Cycle] = []
    for pipeline in pipelines:
        codes = [task for owner, task in tasks if owner == pipeline]
        edges = [(e.task, e.upstream_task) for e in task_edges
                 if e.pipeline == pipeline and e.upstream_pipeline == pipeline]
        found += [Cycle(pipeline, tuple(c), " -> ".join(c)) for c in find_cycles(codes, edges)]
    reasons: dict[tuple[str, str], str] = {}
    for edge in pipeline_edges:
        reasons.setdefault(edge, "pipeline dependency")
    for e in task_edges:
        if e.pipeline != e.upstream_pipeline:
            reasons.setdefault((e.pipeline, e.upstream_pipeline),
                               f"task {e.pipeline}.{e.task} waits for {e.upstream_pipeline}.{e.upstream_task}")
    for cycle in find_cycles(list(pipelines), reasons):
        text = cycle[0] + "".join(f" -> {b} ({reasons[(a, b)]})" for a, b in pairwise(cycle))
        found.append(Cycle(None, tuple(cycle), text))
    return found


def find_cycles(nodes: Sequence[N], edges: Iterable[tuple[N, N]]) -> list[list[N]]:
    """One cycle per group of nodes that depend on each other, as a path that ends where it starts
    ([a, b, a]: a waits for b, b waits for a). Deterministic for a given node order."""
    successors: dict[N, list[N]] = {n: [] for n in nodes}
    for node, up in edges:
        if node in successors and up in successors and up not in successors[node]:
            successors[node].append(up)
    order = {n: i for i, n in enumerate(nodes)}
    cycles = []
    for component in _components(list(nodes), successors):
        if len(component) == 1 and component[0] not in successors[component[0]]:
            continue
        members = set(component)
        start = min(component, key=order.__getitem__)
        cycles.append(_path_back(start, members, successors))
    return sorted(cycles, key=lambda c: order[c[0]])


def _components(nodes: list[N], successors: dict[N, list[N]]) -> list[list[N]]:
    """Strongly connected components (Tarjan's algorithm, iterative so deep graphs cannot overflow)."""
    index: dict[N, int] = {}
    low: dict[N, int] = {}
    stack: list[N] = []
    on_stack: set[N] = set()
    found: list[list[N]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if child < len(successors[node]):
                work.append((node, child + 1))
                nxt = successors[node][child]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def _path_back(start: N, members: set[N], successors: dict[N, list[N]]) -> list[N]:
    """The shortest path from `start` back to itself inside one component (breadth first)."""
    previous: dict[N, N] = {}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in successors[node]:
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if nxt in members and nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    raise AssertionError("a strongly connected component always has a cycle")
