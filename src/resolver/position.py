"""Where a node runs: the value the resolver hands the journal."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class NodePosition:
    """One visit of a node: ``path`` and ``occurrence`` name it (for a platform run, the keys ``visit.py`` makes:
    ``agent/1/case_investigation/<root checkpoint>``, ``s2``; a locator of your own may bring any strings).

    ``new``: no effect can be journaled under the visit yet (the journal then skips reading its entries).
    ``continued``: the attempt continues an interrupted occurrence after its state was edited
    (``update_state`` on the latest checkpoint): an effect whose input changed runs instead of replaying.
    ``root_key``: the root checkpoint the visit's root-level task was prepared from (or continues), written on
    its journal entries so a sweep that prunes that checkpoint finds them.
    ``unconfirmed``: a sync effect on the event loop that stores the root checkpoint located the visit before that
    checkpoint was stored (``ResolverLocator.node``): a crash before it is stored would key the visit anew.
    """

    thread_id: str
    path: str
    node: str
    occurrence: str
    new: bool = field(default=False, compare=False)
    continued: bool = field(default=False, compare=False)
    root_key: str | None = field(default=None, compare=False)
    unconfirmed: bool = field(default=False, compare=False)
