"""The pictures: a DAG laid out in layers (every edge points right, no two boxes overlap, a cycle still drawn) and
the health sparkline."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

from etlcraft.catalog_site.svg import NODE_H, dag_svg, layout, sparkline_svg

SVG = "{http://www.w3.org/2000/svg}"


def test_layout__diamond__each_edge_points_right_and_boxes_do_not_overlap() -> None:
    edges = [("b", "a"), ("c", "a"), ("d", "b"), ("d", "c"), ("e", "a")]
    placed = layout(["a", "b", "c", "d", "e"], edges)
    assert all(placed[node].x > placed[up].x for node, up in edges)
    spots = {(p.x, p.y) for p in placed.values()}
    assert len(spots) == 5
    same_layer = sorted(p.y for p in placed.values() if p.x == placed["b"].x)
    assert all(lower - upper >= NODE_H for upper, lower in itertools.pairwise(same_layer))


def test_layout__cycle__its_tasks_are_still_placed() -> None:
    placed = layout(["a", "b", "c"], [("b", "c"), ("c", "b"), ("b", "a")])
    assert set(placed) == {"a", "b", "c"} and placed["b"].x > placed["a"].x


def test_dag_svg__well_formed_with_status_colours_links_and_edge_types() -> None:
    svg = dag_svg(["load", "report"], [("report", "load")], {"load": "FAILED"}, {"load": "../tasks/p.load.html"},
                  {("report", "load"): "ALWAYS"})
    root = ET.fromstring(svg)
    groups = {g.find(f"{SVG}title").text: g for g in root.iter(f"{SVG}g")}  # type: ignore[union-attr]
    assert groups["load: FAILED"].find(f"{SVG}rect").get("fill") == "#c62828"  # type: ignore[union-attr]
    assert groups["report: not run"].get("data-status") == "NOT RUN"
    assert [a.get("href") for a in root.iter(f"{SVG}a")] == ["../tasks/p.load.html"]
    [edge] = list(root.iter(f"{SVG}path"))[1:]
    assert edge.get("stroke-dasharray") == "5 3"


def test_sparkline__bars_per_run_and_a_label_with_the_successes() -> None:
    root = ET.fromstring(sparkline_svg(["SUCCESS", "FAILED", "SUCCESS"]))
    assert len(list(root.iter(f"{SVG}rect"))) == 3
    assert root.get("aria-label") == "2 of 3 recent runs succeeded"
    assert ET.fromstring(sparkline_svg([])).get("aria-label") == "no runs yet"
