"""A thread's effects as a picture: an SVG of bars in time, drawn here (no JavaScript, no Node build).

One row per effect of the page shown (``plans.ENTRIES_PAGE`` at most: 1,000 effects are five pages, each as
readable as the first), in the order the operation tree lists them, indented by the depth of its operation path
(``agent/1/sub/2`` is one level in). A bar runs from when the effect started to when it finished (its last
update while unfinished), coloured by its state (class ``state-<state>``); a replayed effect (proven by the stored
documents: ``states.replayed``) is marked ``replayed``. Every text is escaped by ElementTree.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from datetime import datetime
from typing import Any

#: Pixels: the label column, the time axis, one row, the top margin.
LABEL_WIDTH, AXIS_WIDTH, ROW, TOP = 320, 560, 18, 24
#: Characters of a label shown before it is cut with an ellipsis.
LABEL_CHARS = 48
#: Colours of the states (``states.EFFECT_STATES``) and marks.
STYLE = (
    "text{font:11px sans-serif;fill:#222}.axis{fill:#666}.bar{stroke:#333;stroke-width:.5}"
    ".state-completed{fill:#4caf50}.state-failed{fill:#e53935}.state-in-flight{fill:#1e88e5}"
    ".state-outcome-unknown{fill:#fb8c00}.state-abandoned{fill:#9e9e9e}.replayed{stroke:#6a1b9a;stroke-width:2}"
)


def _rows(operations: list[Mapping[str, Any]]) -> list[tuple[int, str, Mapping[str, Any]]]:
    """``(depth, label, effect)`` of every effect of the operation tree, in its order."""
    rows = []
    for op in operations:
        depth = len(str(op.get("path", "")).split("/")) // 2 - 1
        for node in op.get("nodes", []):
            for effect in node.get("effects", []):
                label = f"{node.get('node')} {effect.get('kind')} {effect.get('name')}"  # the path: by indent and title
                rows.append((max(depth, 0), label, {**effect, "path": op.get("path")}))
    return rows


def _span(effect: Mapping[str, Any]) -> tuple[datetime, datetime] | None:
    """When an effect started and finished (or was last updated), or None when it holds no start time."""
    start = effect.get("started_at")
    if not isinstance(start, datetime):
        return None
    end = next((t for t in (effect.get("finished_at"), effect.get("updated_at")) if isinstance(t, datetime)), start)
    return start, max(start, end)


def timeline_svg(operations: list[Mapping[str, Any]]) -> str:
    """The SVG of one page of a thread's effects.

    Args:
        operations: the thread view's ``operations`` (``tree.operation_tree`` of its effects).

    Returns:
        The SVG document as text: a ``rect`` of class ``bar state-<state>`` (and ``replayed``) and a ``text``
        label per effect; an effect with no start time gets a label and no bar.
    """
    rows = _rows(operations)
    spans = [s for s in (_span(e) for _, _, e in rows) if s is not None]
    first = min((s for s, _ in spans), default=None)
    total = max(((e - first).total_seconds() for _, e in spans), default=0.0) if first else 0.0
    scale = AXIS_WIDTH / total if total > 0 else 0.0
    height = TOP + ROW * max(len(rows), 1) + 8
    svg = ET.Element("svg", xmlns="http://www.w3.org/2000/svg", width=str(LABEL_WIDTH + AXIS_WIDTH + 16), height=str(height))
    ET.SubElement(svg, "style").text = STYLE
    axis = f"0 s to {total:.3f} s" if first else "no effect holds a start time"
    ET.SubElement(svg, "text", {"x": str(LABEL_WIDTH), "y": "14", "class": "axis"}).text = axis
    for n, (depth, label, effect) in enumerate(rows):
        y = TOP + n * ROW
        shown = label if len(label) <= LABEL_CHARS else label[:LABEL_CHARS - 1] + "…"
        text = ET.SubElement(svg, "text", {"x": str(4 + 12 * depth), "y": str(y + 12), "class": "label"})
        text.text = shown
        span = _span(effect)
        if span is None or first is None:
            continue
        state = str(effect.get("state", "")).replace(" ", "-")
        classes = f"bar state-{state}" + (" replayed" if effect.get("replayed") else "")
        x = LABEL_WIDTH + (span[0] - first).total_seconds() * scale
        width = max((span[1] - span[0]).total_seconds() * scale, 3.0)
        bar = ET.SubElement(svg, "rect", {"x": f"{x:.1f}", "y": str(y + 2), "width": f"{width:.1f}", "height": str(ROW - 5), "class": classes})
        ET.SubElement(bar, "title").text = f"{effect.get('path')} {label}: {effect.get('state')}" + (", replayed" if effect.get("replayed") else "")
    return ET.tostring(svg, encoding="unicode")
