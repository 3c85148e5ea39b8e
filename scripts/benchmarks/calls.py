"""The Python-call count the bench's ``rtt`` section reports (issue 37): the Python functions a turn calls, every
thread, by the package the called code lives in; shared machinery, like ``benchmarks.common``.

A count does not change from one run to the next as a time does, so it shows a change in the work a turn asks of
the interpreter when client CPU ratios are lost in noise. It is no time: a call into pymongo's C extension counts
as nothing, a tiny generator step as one. Counted with ``sys.setprofile`` and ``threading.setprofile`` (which slow
the turns they count), on the server directly, sync, one turn after another, after two warm-up turns per thread.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from benchmarks import common as core

#: The groups a called function is counted in, by a piece of its file's path; the first that matches wins.
GROUPS = (
    ("ours", "langgraph_durable_mongodb"),
    ("ours", "/src/"),
    ("MongoDBSaver", "langgraph/checkpoint/mongodb"),
    ("LangGraph", "langgraph"),
    ("LangChain", "langchain_core"),
    ("pymongo and bson", "pymongo"),
    ("pymongo and bson", "bson"),
    ("threads", "threading.py"),
    ("threads", "concurrent/futures"),
)
OTHER = "the rest (stdlib, pydantic, ...)"


def group_of(filename: str) -> str:
    return next((name for name, part in GROUPS if part in filename), OTHER)


class CallCounter:
    """A profile function counting the Python calls made while ``on``, by the code called."""

    def __init__(self) -> None:
        self.on = False
        self.by_code: Counter = Counter()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if self.on and event == "call":
            self.by_code[frame.f_code] += 1

    def by_group(self) -> Counter:
        groups: Counter = Counter()
        for code, n in self.by_code.items():
            groups[group_of(code.co_filename)] += n
        return groups


def counted_in_child(module: str, *args: object) -> dict[str, Any]:
    """What ``python -m <module> <args>`` prints last, as JSON, run from scripts/.

    A count is taken in a fresh process: a profile function reaches only the threads started after it is set, and
    the process-wide pools an earlier section started would go uncounted.
    """
    scripts = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=scripts,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([scripts, os.environ.get("PYTHONPATH", "")])},
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"counting calls failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def per_turn(counter: CallCounter, measured: int) -> dict[str, float]:
    """The counted calls by group, and in all, per measured turn."""
    groups = counter.by_group()
    return {group: n / measured for group, n in groups.items()} | {"all": sum(groups.values()) / measured}


def count_turns(turn: Callable[[str, int, bool], None], counter: CallCounter, threads: int, turns: int) -> int:
    """Run ``turns`` turns on each of ``threads`` threads, counting from each thread's third; the turns counted."""
    measured = 0
    for thread in range(threads):
        for n in range(turns):
            counter.on = n >= 2
            turn(f"calls-{thread}", n, False)
            counter.on = False
            measured += n >= 2
    return measured


class profiling:
    """``counter`` as the profile function of this thread and of every thread started meanwhile."""

    def __init__(self, counter: CallCounter) -> None:
        self.counter = counter

    def __enter__(self) -> None:
        threading.setprofile(self.counter)
        sys.setprofile(self.counter)

    def __exit__(self, *exc_info: object) -> None:
        sys.setprofile(None)
        threading.setprofile(None)


def render_calls(calls: dict[str, Any], labels: dict[str, str]) -> list[str]:
    """The counts as a Markdown table, a column per variant (``labels`` names them)."""
    names = list(calls["variants"])
    groups = sorted({g for v in calls["variants"].values() for g in v if g != "all"},
                    key=lambda g: -max(v.get(g, 0) for v in calls["variants"].values()))
    lines = [f"Python calls per turn, every thread, by the package of the code called (sync, direct, turns 3-{calls['turns']} "
             f"of {calls['threads']} threads; a count, not a time: steady where times are not).", "",
             "| calls per turn | " + " | ".join(labels[n] for n in names) + " |", "|---|" + "---|" * len(names)]
    for group in groups:
        lines.append(f"| {group} | " + " | ".join(f"{calls['variants'][n].get(group, 0):,.0f}" for n in names) + " |")
    lines.append("| **all** | " + " | ".join(f"**{calls['variants'][n]['all']:,.0f}**" for n in names) + " |")
    lines.append("| ratio to the reference | " + " | ".join(core._f(calls["ratio"][n]) for n in names) + " |")
    return [*lines, ""]
