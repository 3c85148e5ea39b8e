"""The golden databases of the storage-history dimension: one thread each, as the code of an older storage format
left it when its run stopped (a SIGKILL right after an effect called its provider, or an ``interrupt()``), and what
that code's executions were.

``scripts/golden-histories`` wrote them (run it again to write them again): for each format it installs the commit
below into a throwaway venv, runs each golden's plan there in a child process on mongo-java-server
(tests/workers/golden_worker.py, with this checkout's tests/explorer/ graphs), SIGKILLs it where the golden says,
and dumps every collection. A run killed under ``platform.compile`` holds its thread's run lock: its at-least-once
effect ran unclaimed, and nothing stored the key its provider saw. Such a golden is also dumped *drained*: the
same old code resumed the thread to its interrupt, as docs/storage.md tells an operator to. The ledger of every
execution (its idempotency key included) is kept beside each dump, so the oracle knows the key the provider saw.

This module imports nothing of the package: the worker imports it under the old code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .plans import Plan, Stage

#: The commit of this repository whose code wrote each storage format (the last of main to write it; format 3 with
#: ordinals is issue 34's branch, merged as the visit keys' format 4 came in).
COMMITS = {
    1: "981c784e179f6a103d3d68d8f14a384ca63634b9",
    2: "37385b26a5928768e6fd0fabf2a2c0b42c2ae369",
    3: "261c7154a196eee51552fa4b3f37167134806307",
}
#: The graph every golden runs: two effects at the root, a compiled child two deep, a ``Send`` fan-out of two, and a
#: node that interrupts after its first effect.
STAGES = (
    Stage("node", ("effect", "effect")),
    Stage("child", ("effect",), depth=2),
    Stage("send", ("effect",), width=2),
    Stage("interrupt", ("effect", "effect")),
)
#: Where the old run is SIGKILLed, right after the effect's provider was called (its ledger record written): the
#: slot ``(node, item, visit, effect index)``. ``interrupt``: no kill, the run stops at the interrupt.
KILLS: dict[str, tuple[str, int | None, int, int] | None] = {
    "effect": ("s0", None, 1, 2),  # the root node's second effect, its first recorded
    "child": ("s1d2", None, 1, 1),  # in the compiled child, two deep
    "send": ("s2w", 1, 1, 1),  # the second Send item's effect
    "interrupt": None,
}
#: The stops each compile form was dumped at.
STOPS = {"platform.compile": ("effect", "child", "send", "interrupt"), "plain compile": ("effect", "child", "send")}
HERE = Path(__file__).resolve().parent.parent / "golden"
THREAD = "history"


@dataclass(frozen=True)
class Golden:
    """One golden database: the format whose code wrote it, the compile form it ran in, and where it stopped."""

    format: int
    form: str
    stop: str

    @property
    def name(self) -> str:
        return f"format{self.format} {self.form} {self.stop}"

    @property
    def in_flight(self) -> bool:
        """Whether its run still holds the thread's run lock: killed under ``platform.compile``."""
        return self.form == "platform.compile" and KILLS[self.stop] is not None

    def plan(self) -> Plan:
        """The plan it ran (sync nodes, ``durability="sync"``)."""
        return Plan(STAGES, form=self.form, golden=self.name)


GOLDENS = tuple(Golden(f, form, stop) for f in COMMITS for form, stops in STOPS.items() for stop in stops)
BY_NAME = {g.name: g for g in GOLDENS}


def path(format_version: int) -> Path:
    """The file holding the goldens of ``format_version``: per golden, its dumps and ledgers (extended JSON)."""
    return HERE / f"format{format_version}_histories.json"
