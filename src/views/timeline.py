"""A thread's runs and effects as a picture: an SVG drawn here (no JavaScript, no Node build).

From the top: the runs (``runs.thread_runs``), one lane each, a bar from the run's start to its end coloured by how
it ended (class ``run run-<end>``), titled with its process and the effects it executed and replayed, and a crash
mark (class ``crash``, a cross and a line down through the effects) where a run died or lost its lock; a lane of the
root checkpoints in time (a tick each, titled by step and source: where the graph saved its progress, and so where
a resumed run took up); then one row per effect of the page shown (``plans.ENTRIES_PAGE`` at most: 1,000 effects
are five pages, each as readable as the first), in the order the operation tree lists them, indented by the depth
of its operation path, a bar from when it started to when it finished (its last update while unfinished) coloured
by its state (class ``state-<state>``). A replayed effect (proven by the stored documents: ``states.replayed``) is
outlined (``replayed``) and marked where the run that replayed it took it up (class ``replay``). At the end of the
axis, how the thread stopped when it did not finish. Every text is escaped by ElementTree, and the characters XML
cannot hold (C0 controls, U+FFFE, U+FFFF, lone surrogates) are written as their escapes first.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

#: Pixels: the label column, the time axis, one row, the top margin.
LABEL_WIDTH, AXIS_WIDTH, ROW, TOP = 320, 560, 18, 24
#: Characters of a label shown before it is cut with an ellipsis.
LABEL_CHARS = 48
#: Colours of the states (``states.EFFECT_STATES``), of how runs end (``runs.RUN_ENDS``) and of the marks.
STYLE = (
    "text{font:11px sans-serif;fill:#222}.axis{fill:#666}.bar{stroke:#333;stroke-width:.5}"
    ".state-completed{fill:#4caf50}.state-failed{fill:#e53935}.state-in-flight{fill:#1e88e5}"
    ".state-outcome-unknown{fill:#fb8c00}.state-abandoned{fill:#9e9e9e}.state-interrupted{fill:#fdd835}"
    ".replayed{stroke:#6a1b9a;stroke-width:2}"
    ".replay{fill:#6a1b9a}.checkpoint{fill:#455a64}.stop{stroke-width:2}.stop-failed{stroke:#e53935;fill:#e53935}"
    ".stop-interrupted{stroke:#fb8c00;fill:#fb8c00}.stop-crashed{stroke:#6d4c41;fill:#6d4c41}"
    ".stop-outcome-unknown{stroke:#fb8c00;fill:#fb8c00}.stop-waiting-for-a-lock{stroke:#8e24aa;fill:#8e24aa}"
    ".run{stroke:#333;stroke-width:.5;opacity:.85}.run-running{fill:#90caf9}.run-waiting-for-a-lock{fill:#ce93d8}"
    ".run-finished{fill:#a5d6a7}.run-interrupted{fill:#ffe082}.run-failed{fill:#ef9a9a}.run-crashed{fill:#bcaaa4}"
    ".run-lock-lost{fill:#bcaaa4}.crash{stroke:#b71c1c;stroke-width:2;fill:#b71c1c}"
)
#: The thread states the picture marks at the end of its axis: a thread that stopped without finishing.
STOPS = ("failed", "interrupted", "crashed", "outcome unknown", "waiting for a lock")
#: How a run ended that gets a crash mark.
CRASHES = ("crashed", "lock lost")
#: What XML 1.0 cannot hold, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value: Any) -> str:
    """``value`` as text XML can hold: each character it cannot (``_NOT_XML``) written as its escape (``\\x01``)."""
    return _NOT_XML.sub(lambda m: m[0].encode("unicode_escape", "backslashreplace").decode("ascii"), str(value))


def _sub(parent: ET.Element, tag: str, attrs: Mapping[str, Any], body: Any = None) -> ET.Element:
    """A child element, every attribute and its text made safe for XML (``xml_text``)."""
    element = ET.SubElement(parent, tag, {k: xml_text(v) for k, v in attrs.items()})
    if body is not None:
        element.text = xml_text(body)
    return element


def _rows(operations: list[Mapping[str, Any]]) -> list[tuple[int, str, Mapping[str, Any]]]:
    """``(depth, label, effect)`` of every effect of the operation tree, in its order."""
    rows: list[tuple[int, str, Mapping[str, Any]]] = []
    for op in operations:
        depth = len(str(op.get("path", "")).split("/")) // 2 - 1
        for node in op.get("nodes", []):
            for effect in node.get("effects", []):
                label = f"{node.get('name')} ({node.get('visit')}) {effect.get('kind')} {effect.get('name')}"
                rows.append((max(depth, 0), label, {**effect, "path": op.get("path")}))
    return rows


def _utc(value: Any) -> datetime | None:
    """A stored time as a naive UTC ``datetime`` (a server gives naive ones back; a checkpoint's ``ts`` is ISO text)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def _span(start: Any, *ends: Any) -> tuple[datetime, datetime] | None:
    """From ``start`` to the first of ``ends`` that is a time (``start`` itself when none is), or None."""
    begun = _utc(start)
    if begun is None:
        return None
    end = next((t for t in map(_utc, ends) if t is not None), begun)
    return begun, max(begun, end)


class _Axis:
    """Times to x, over every span shown."""

    def __init__(self, spans: list[tuple[datetime, datetime]]) -> None:
        self.first = min((s for s, _ in spans), default=None)
        self.total = max(((e - self.first).total_seconds() for _, e in spans), default=0.0) if self.first else 0.0
        self.scale = AXIS_WIDTH / self.total if self.total > 0 else 0.0

    def x(self, at: datetime | None) -> float | None:
        """Where ``at`` is drawn (every time the picture holds is on its axis: ``_spans``), or None for no time."""
        if at is None or self.first is None:
            return None
        return LABEL_WIDTH + (at - self.first).total_seconds() * self.scale

    def width(self, span: tuple[datetime, datetime]) -> float:
        return max((span[1] - span[0]).total_seconds() * self.scale, 3.0)


def _run_lanes(svg: ET.Element, runs: Sequence[Mapping[str, Any]], axis: _Axis, now: datetime, bottom: int) -> None:
    """A lane per run: its bar coloured by how it ended, a crash mark where it died."""
    for n, run in enumerate(runs):
        y = TOP + n * ROW
        who = f"pid {run.get('pid')} on {run.get('host')}"
        label = f"run {run.get('n')} · {who}"[:LABEL_CHARS]
        _sub(svg, "text", {"x": 4, "y": y + 12, "class": "label run-label"}, label)
        span = _span(run.get("started_at"), run.get("ended_at"), now)
        if span is None or axis.first is None:
            continue
        x = LABEL_WIDTH + (span[0] - axis.first).total_seconds() * axis.scale
        bar = _sub(svg, "rect", {"x": f"{x:.1f}", "y": y + 2, "width": f"{axis.width(span):.1f}", "height": ROW - 5,
                                 "class": f"run run-{str(run.get('ended')).replace(' ', '-')}"})
        _sub(bar, "title", {}, f"run {run.get('n')}: {who}, {span[0]:%H:%M:%S} to "
                               f"{'now' if run.get('ended_at') is None else format(span[1], '%H:%M:%S')} UTC, "
                               f"{run.get('ended')}; executed {run.get('executed')}, replayed {run.get('replayed')}")
        if run.get("ended") in CRASHES:
            end = x + axis.width(span)
            _sub(svg, "line", {"x1": f"{end:.1f}", "x2": f"{end:.1f}", "y1": y, "y2": bottom, "class": "crash"})
            _sub(svg, "text", {"x": f"{end + 3:.1f}", "y": y + 12, "class": "crash"}, f"✕ {run.get('ended')}")


def _checkpoint_lane(svg: ET.Element, y: int, checkpoints: Sequence[Mapping[str, Any]], axis: _Axis) -> None:
    """A tick per root checkpoint in the time shown, titled by its step and source."""
    _sub(svg, "text", {"x": 4, "y": y + 12, "class": "label lane"}, "root checkpoints")
    for checkpoint in checkpoints:
        x = axis.x(_utc(checkpoint.get("ts")))
        if x is None:
            continue
        tick = _sub(svg, "rect", {"x": f"{x:.1f}", "y": y + 2, "width": 2, "height": ROW - 5,
                                  "class": f"checkpoint source-{checkpoint.get('source')}"})
        _sub(tick, "title", {}, f"step {checkpoint.get('step')} ({checkpoint.get('source')}) at {checkpoint.get('ts')}")


def _stop_mark(svg: ET.Element, stop: str | None, height: int) -> None:
    """How the thread stopped, at the end of the axis, when it stopped without finishing."""
    if stop not in STOPS:
        return
    x, kind = LABEL_WIDTH + AXIS_WIDTH + 4, f"stop-{str(stop).replace(' ', '-')}"
    _sub(svg, "line", {"x1": x, "x2": x, "y1": TOP, "y2": height - 8, "class": f"stop {kind}"})
    _sub(svg, "text", {"x": LABEL_WIDTH + AXIS_WIDTH - 110, "y": 14, "class": f"stop-label {kind}"}, stop)


def _effect_row(svg: ET.Element, y: int, depth: int, label: str, effect: Mapping[str, Any], axis: _Axis,
                replayed_at: Mapping[int, datetime]) -> None:
    """One effect's label and bar, and where a run replayed it."""
    shown = label if len(label) <= LABEL_CHARS else label[:LABEL_CHARS - 1] + "…"
    _sub(svg, "text", {"x": 4 + 12 * depth, "y": y + 12, "class": "label"}, shown)
    span = _span(effect.get("started_at"), effect.get("finished_at"), effect.get("updated_at"))
    if span is None or axis.first is None:
        return
    classes = f"bar state-{str(effect.get('state', '')).replace(' ', '-')}"
    classes += " replayed" if effect.get("replayed") else ""
    x = LABEL_WIDTH + (span[0] - axis.first).total_seconds() * axis.scale
    bar = _sub(svg, "rect", {
        "x": f"{x:.1f}", "y": y + 2, "width": f"{axis.width(span):.1f}", "height": ROW - 5, "class": classes,
    })
    by = f", executed by run {effect['executed_by']}" if effect.get("executed_by") else ""
    again = (
        f", replayed by run {effect['replayed_by']}" if effect.get("replayed_by")
        else (", replayed" if effect.get("replayed") else "")
    )
    _sub(bar, "title", {}, f"{effect.get('path')} {label}: {effect.get('state')}{by}{again}")
    at = _utc(effect.get("visited_at")) or replayed_at.get(effect.get("replayed_by") or 0)
    mark = axis.x(at) if effect.get("replayed") else None
    if mark is not None:
        _sub(svg, "circle", {"cx": f"{mark:.1f}", "cy": y + ROW // 2, "r": 4, "class": "replay"})


def _spans(
    rows: list[tuple[int, str, Mapping[str, Any]]], checkpoints: Sequence[Mapping[str, Any]],
    runs: Sequence[Mapping[str, Any]], now: datetime,
) -> list[tuple[datetime, datetime]]:
    """The times the picture shows: every effect's (and when a replayed one was visited), every run's, every root
    checkpoint's."""
    spans = [
        s for s in (_span(e.get("started_at"), e.get("finished_at"), e.get("updated_at")) for _, _, e in rows) if s
    ]
    spans += [(t, t) for t in (_utc(e.get("visited_at")) for _, _, e in rows if e.get("replayed")) if t is not None]
    spans += [s for s in (_span(r.get("started_at"), r.get("ended_at"), now) for r in runs) if s]
    return spans + [(t, t) for t in (_utc(c.get("ts")) for c in checkpoints) if t is not None]


def timeline_svg(
    operations: list[Mapping[str, Any]], checkpoints: Sequence[Mapping[str, Any]] = (), stop: str | None = None,
    runs: Sequence[Mapping[str, Any]] = (), now: datetime | None = None,
) -> str:
    """The SVG of a thread's runs and one page of its effects.

    Args:
        operations: the thread view's ``operations`` (``tree.operation_tree`` of its effects).
        checkpoints: the thread view's ``timeline`` (its root checkpoints, ``ts`` and ``step`` and ``source``).
        stop: the thread's state: one of ``STOPS`` is marked at the end of the axis.
        runs: the thread view's ``runs`` (``runs.thread_runs``).
        now: the present, naive UTC (where a running run's bar ends).

    Returns:
        The SVG document as text: a ``rect`` of class ``run run-<end>`` per run (and a ``crash`` mark where one died),
        a ``rect`` of class ``checkpoint`` per root checkpoint in the time shown, a ``rect`` of class
        ``bar state-<state>`` (and ``replayed``) and a ``text`` label per effect (an effect with no start time gets a
        label and no bar), and a ``line`` of class ``stop stop-<state>``.
    """
    now = now or datetime.now(UTC).replace(tzinfo=None)
    rows = _rows(operations)
    axis = _Axis(_spans(rows, checkpoints, runs, now))
    lanes = TOP + ROW * len(runs)
    height = lanes + ROW * (max(len(rows), 1) + 1) + 8
    svg = ET.Element(
        "svg", xmlns="http://www.w3.org/2000/svg", width=str(LABEL_WIDTH + AXIS_WIDTH + 60), height=str(height)
    )
    ET.SubElement(svg, "style").text = STYLE
    axis_text = (
        f"0 s to {axis.total:.3f} s from {axis.first:%Y-%m-%d %H:%M:%S} UTC" if axis.first
        else "nothing here holds a time"
    )
    _sub(svg, "text", {"x": LABEL_WIDTH, "y": 14, "class": "axis"}, axis_text)
    _run_lanes(svg, runs, axis, now, height - 8)
    _checkpoint_lane(svg, lanes, checkpoints, axis)
    _stop_mark(svg, stop, height)
    started = {r["n"]: s[0] for r in runs if "n" in r and (s := _span(r.get("started_at"))) is not None}
    for n, (depth, label, effect) in enumerate(rows, 1):
        _effect_row(svg, lanes + n * ROW, depth, label, effect, axis, started)
    return ET.tostring(svg, encoding="unicode")
