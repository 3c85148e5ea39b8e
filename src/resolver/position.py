"""Where a node runs: the value the resolver and its ordinal allocator hand the journal."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class NodePosition:
    """The running node: ``path`` like ``agent/1/case_investigation/1``, ``occurrence`` like ``1`` or ``2.3``.

    ``new``: no effect can be journaled under the occurrence yet (the journal then skips reading its
    entries). ``continued``: the attempt continues an interrupted occurrence after its state was edited
    (``update_state`` on the latest checkpoint): an effect whose input changed runs instead of replaying.
    ``root_key``: the key of the root-level occurrence the node runs under (the root checkpoint its task
    was prepared from, or continues), stamped on its journal entries so a sweep that prunes that checkpoint
    finds them.
    """

    thread_id: str
    path: str
    node: str
    occurrence: str
    new: bool = field(default=False, compare=False)
    continued: bool = field(default=False, compare=False)
    root_key: str | None = field(default=None, compare=False)
