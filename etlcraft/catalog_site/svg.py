"""Pictures for the catalog, drawn as inline SVG in Python: a pipeline's DAG in layers, and a run-health sparkline.

No system binary (Graphviz) and no JavaScript: the layers come from the dependency levels etl-craft already derives
(a task sits one layer right of its furthest upstream), the order within a layer from a few barycentre sweeps that
pull each task next to its neighbours, which keeps edge crossings low on the pipelines people write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from etlcraft.services.metadata import dependency_levels

NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 168, 34, 64, 18, 12
#: Fill colour of a task by the status of its task run in the latest run; NOT_RUN when it has none.
STATUS_COLOURS = {"SUCCESS": "#2e7d32", "FAILED": "#c62828", "IN-PROGRESS": "#1565c0", "QUEUED": "#6a1b9a",
                  "SKIPPED": "#757575", "CANCELLED": "#ef6c00"}
NOT_RUN = "#b0bec5"
_SWEEPS = 4
#: A sparkline bar's height, as a share of the line's: full for a run that succeeded, half for any other.
_BAR_HEIGHT = {"SUCCESS": 1.0}


@dataclass(frozen=True)
class Placed:
    code: str
    x: int
    y: int


def layout(nodes: Sequence[str], edges: Sequence[tuple[str, str]]) -> dict[str, Placed]:
    """Each node's top-left corner. `edges` are (node, upstream). Nodes on a cycle go in a last layer of their own."""
    levels, cyclic = dependency_levels(list(nodes), list(edges))
    layers = [list(level) for level in levels] + ([list(cyclic)] if cyclic else [])
    ups: dict[str, list[str]] = {n: [] for n in nodes}
    downs: dict[str, list[str]] = {n: [] for n in nodes}
    for node, up in edges:
        if node in ups and up in ups:
            ups[node].append(up)
            downs[up].append(node)
    for sweep in range(_SWEEPS):
        order = layers[1:] if sweep % 2 == 0 else list(reversed(layers[:-1]))
        for layer in order:
            _reorder(layer, ups if sweep % 2 == 0 else downs, _positions(layers))
    return {code: Placed(code, PAD + i * (NODE_W + GAP_X), PAD + j * (NODE_H + GAP_Y))
            for i, layer in enumerate(layers) for j, code in enumerate(layer)}


def _positions(layers: list[list[str]]) -> dict[str, int]:
    return {code: j for layer in layers for j, code in enumerate(layer)}


def _reorder(layer: list[str], neighbours: Mapping[str, list[str]], position: Mapping[str, int]) -> None:
    """Sort `layer` in place by the mean position of each node's neighbours (a node without any keeps its own)."""
    def centre(item: tuple[int, str]) -> tuple[float, int]:
        j, code = item
        near = [position[n] for n in neighbours[code]]
        return (sum(near) / len(near) if near else float(j), j)
    layer[:] = [code for _, code in sorted(enumerate(layer), key=centre)]


def dag_svg(nodes: Sequence[str], edges: Sequence[tuple[str, str]], statuses: Mapping[str, str],
            links: Mapping[str, str], edge_types: Mapping[tuple[str, str], str] | None = None) -> str:
    """The DAG as one <svg> element: a box per task coloured by `statuses` (code to status; absent: not run),
    linking to `links[code]`, and an arrow per edge, dashed unless its type is SUCCESS."""
    placed = layout(nodes, edges)
    width = max((p.x for p in placed.values()), default=0) + NODE_W + PAD
    height = max((p.y for p in placed.values()), default=0) + NODE_H + PAD
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="dag" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="task graph">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
             'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#546e7a"/></marker></defs>']
    for node, up in edges:
        if node in placed and up in placed:
            kind = (edge_types or {}).get((node, up), "SUCCESS")
            parts.append(_edge(placed[up], placed[node], kind))
    for code in nodes:
        parts.append(_node(placed[code], statuses.get(code), links.get(code)))
    parts.append("</svg>")
    return "\n".join(parts)


def _edge(start: Placed, end: Placed, kind: str) -> str:
    x1, y1 = start.x + NODE_W, start.y + NODE_H // 2
    x2, y2 = end.x, end.y + NODE_H // 2
    bend = max(24, (x2 - x1) // 2)
    dash = "" if kind == "SUCCESS" else ' stroke-dasharray="5 3"'
    return (f'<path class="edge" d="M {x1} {y1} C {x1 + bend} {y1}, {x2 - bend} {y2}, {x2} {y2}" fill="none" '
            f'stroke="#546e7a" stroke-width="1.4"{dash} marker-end="url(#arrow)"><title>{escape(kind)}</title></path>')


def _node(p: Placed, status: str | None, href: str | None) -> str:
    fill = STATUS_COLOURS.get(status or "", NOT_RUN)
    label = p.code if len(p.code) <= 22 else p.code[:21] + "…"
    box = (f'<g class="task" data-status="{escape(status or "NOT RUN")}">'
           f'<title>{escape(p.code)}: {escape(status or "not run")}</title>'
           f'<rect x="{p.x}" y="{p.y}" width="{NODE_W}" height="{NODE_H}" rx="6" fill="{fill}"/>'
           f'<text x="{p.x + NODE_W // 2}" y="{p.y + NODE_H // 2 + 5}" text-anchor="middle" fill="#fff" '
           f'font-size="13">{escape(label)}</text></g>')
    return f'<a href="{escape(href)}">{box}</a>' if href else box


def sparkline_svg(statuses: Sequence[str], width: int = 120, height: int = 22) -> str:
    """The statuses of the last runs, oldest first, as bars: full height when the run succeeded, short when not,
    coloured by status. An empty history draws a grey line."""
    if not statuses:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" class="spark" width="{width}" height="{height}" '
                f'role="img" aria-label="no runs yet"><line x1="0" y1="{height - 1}" x2="{width}" y2="{height - 1}" '
                'stroke="#b0bec5"/></svg>')
    step = width / len(statuses)
    bars = []
    for i, status in enumerate(statuses):
        tall = round(height * _BAR_HEIGHT.get(status, 0.5))
        bars.append(f'<rect x="{i * step:.1f}" y="{height - tall}" width="{max(step - 1, 1):.1f}" height="{tall}" '
                    f'fill="{STATUS_COLOURS.get(status, NOT_RUN)}"><title>{escape(status)}</title></rect>')
    ok = list(statuses).count("SUCCESS")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="spark" width="{width}" height="{height}" role="img" '
            f'aria-label="{ok} of {len(statuses)} recent runs succeeded">{"".join(bars)}</svg>')
