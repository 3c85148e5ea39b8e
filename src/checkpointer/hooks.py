"""What a checkpointer's owner hangs on it: one object, filled once by ``DurablePlatform``.

A platform reaches the nodes of every run that saves with its checkpointer through the checkpointer alone: the
nodes' configs name it (``_langgraph.run_checkpointer``), and a ``with_allowlist`` clone shares this object. So
the checkpointer carries what the platform is told (a child run starting, a thread pruned by a sweep) and what it
serves (each node's effect scope), instead of a registry of checkpointers elsewhere. The platform and its
checkpointer then refer to each other: the garbage collector frees the pair once neither is used
(``tests/test_platform_forms.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig

from ..storage.plans.requests import Plan


@dataclass
class SaverHooks:
    """The platform's hooks on its checkpointer (``MongoDBCheckpointer.hooks``)."""

    #: Called at each read that may start a compiled child's run (``MongoDBCheckpointer.observe_child_runs``).
    child_runs: list[Callable[[str, RunnableConfig], None]] = field(default_factory=list)
    #: Called with the graph a root run starts (``MongoDBCheckpointer.observe_root_runs``); raises to refuse it.
    root_runs: list[Callable[[Any], None]] = field(default_factory=list)
    #: Each returns a plan dropping what a pruned thread's finished tasks left (``observe_sweep_prunes``).
    sweep_prunes: list[Callable[[str, list[str]], Plan[None]]] = field(default_factory=list)
    #: Refuses a write of a thread whose run may have lost its lock, without I/O (the constructor's ``run_fence``).
    run_fence: Callable[[str], object] | None = None
    #: The effect scope of a node whose run saves with a given saver (this one, or a clone sharing these hooks).
    effect_scopes: Callable[[Any], Any] | None = None
