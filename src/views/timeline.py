"""A thread's effects as a picture: an SVG of bars in time, drawn here (no JavaScript, no Node build).

One row per effect of the page shown (``plans.ENTRIES_PAGE`` at most: 1,000 effects are five pages, each as
readable as the first), in the order the operation tree lists them, indented by the depth of its operation path
(``agent/1/sub/2`` is one level in). A bar runs from when the effect started to when it finished (its last
update while unfinished), coloured by its state (class ``state-<state>``); a replayed effect (proven by the stored
documents: ``states.replayed``) is marked ``replayed``. Above the rows, a lane of the root checkpoints in time (a
tick each, titled by step and source: where the graph saved its progress, and so where a resumed run took up); at
the end of the axis, how the thread stopped when it did not finish (``failed``, ``interrupted``, ``crashed``).
Every text is escaped by ElementTree.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
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
    ".checkpoint{fill:#455a64}.stop{stroke-width:2}.stop-failed{stroke:#e53935;fill:#e53935}"
    ".stop-interrupted{stroke:#fb8c00;fill:#fb8c00}.stop-crashed{stroke:#6d4c41;fill:#6d4c41}"
)
#: The thread states the picture marks at the end of its axis: a run that stopped without finishing.
STOPS = ("failed", "interrupted", "crashed")


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


def _utc(value: Any) -> datetime | None:
    """A stored time as a naive UTC ``datetime`` (a server gives naive ones back; a checkpoint's ``ts`` is ISO text)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    return value.astimezone(timezone.utc).replace(tzinfo=None) if value.tzinfo else value


def _checkpoint_lane(svg: ET.Element, checkpoints: Sequence[Mapping[str, Any]], place: Any) -> None:
    """A tick per root checkpoint in the time shown, titled by its step and source."""
    ET.SubElement(svg, "text", {"x": "4", "y": str(TOP + 12), "class": "label lane"}).text = "root checkpoints"
    for checkpoint in checkpoints:
        at = _utc(checkpoint.get("ts"))
        x = place(at) if at is not None else None
        if x is None:
            continue
        tick = ET.SubElement(svg, "rect", {"x": f"{x:.1f}", "y": str(TOP + 2), "width": "2", "height": str(ROW - 5),
                                           "class": f"checkpoint source-{checkpoint.get('source')}"})
        ET.SubElement(tick, "title").text = f"step {checkpoint.get('step')} ({checkpoint.get('source')}) at {checkpoint.get('ts')}"


def _stop_mark(svg: ET.Element, stop: str | None, height: int) -> None:
    """How the thread stopped, at the end of the axis, when it stopped without finishing."""
    if stop not in STOPS:
        return
    x = str(LABEL_WIDTH + AXIS_WIDTH + 4)
    ET.SubElement(svg, "line", {"x1": x, "x2": x, "y1": str(TOP), "y2": str(height - 8), "class": f"stop stop-{stop}"})
    ET.SubElement(svg, "text", {"x": str(LABEL_WIDTH + AXIS_WIDTH - 60), "y": "14", "class": f"stop-label stop-{stop}"}).text = stop


def timeline_svg(operations: list[Mapping[str, Any]], checkpoints: Sequence[Mapping[str, Any]] = (), stop: str | None = None) -> str:
    """The SVG of one page of a thread's effects.

    Args:
        operations: the thread view's ``operations`` (``tree.operation_tree`` of its effects).
        checkpoints: the thread view's ``timeline`` (its root checkpoints, ``ts`` and ``step`` and ``source``).
        stop: the thread's state: ``failed``, ``interrupted`` or ``crashed`` is marked at the end of the axis.

    Returns:
        The SVG document as text: a ``rect`` of class ``bar state-<state>`` (and ``replayed``) and a ``text``
        label per effect (an effect with no start time gets a label and no bar), a ``rect`` of class
        ``checkpoint`` per root checkpoint in the time shown, and a ``line`` of class ``stop stop-<state>``.
    """
    rows = _rows(operations)
    spans = [s for s in (_span(e) for _, _, e in rows) if s is not None]
    first = min((s for s, _ in spans), default=None)
    total = max(((e - first).total_seconds() for _, e in spans), default=0.0) if first else 0.0
    scale = AXIS_WIDTH / total if total > 0 else 0.0

    def place(at: datetime) -> float | None:
        offset = (at - first).total_seconds() if first is not None else -1.0
        return LABEL_WIDTH + offset * scale if 0 <= offset <= total else None

    height = TOP + ROW * (max(len(rows), 1) + 1) + 8
    svg = ET.Element("svg", xmlns="http://www.w3.org/2000/svg", width=str(LABEL_WIDTH + AXIS_WIDTH + 16), height=str(height))
    ET.SubElement(svg, "style").text = STYLE
    axis = f"0 s to {total:.3f} s" if first else "no effect holds a start time"
    ET.SubElement(svg, "text", {"x": str(LABEL_WIDTH), "y": "14", "class": "axis"}).text = axis
    _checkpoint_lane(svg, checkpoints, place)
    _stop_mark(svg, stop, height)
    for n, (depth, label, effect) in enumerate(rows, 1):
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
