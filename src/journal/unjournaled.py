"""Effects of a run that has no checkpointer at all: run for real, recorded nowhere, when the run says so.

Agent Server runs a stateless run (``client.runs.stream(None, ...)``) with
``checkpointer=None``. Such a run cannot be resumed, so there is nothing to
replay: ``SecureLLM``, ``SecureTool`` and ``@effect`` run their effect once, as
the bare model, tool or function would, and ``current_effect()`` still names it,
with an idempotency key of its own (fresh for every call: no later run repeats
it). The first such run of each graph is logged at INFO (named by Agent Server's
``graph_id``, else by the node that met it).

A run is taken for one that means to run unjournaled only when its config says so: Agent Server's runs carry
its mark (``_langgraph.agent_server_run``), and any other run opts in with ``{"configurable": {UNJOURNALED:
True}}``. Anything else without a checkpointer is a mistake that would lose durability silently, most often a
graph a durable node started from a thread of its own (a bare ``ThreadPoolExecutor``), which lost the node's
context: it raises ``NoDurableScopeError`` (``context.current_effect_scope``). A run on a checkpointer that is not
the platform's raises too: its history lives elsewhere.
"""

from __future__ import annotations

import logging
import threading
import uuid

from langchain_core.runnables import RunnableConfig

from .. import _langgraph
from .documents import EffectCall
from .position import EffectPosition

logger = logging.getLogger("langgraph_durable_mongodb.journal")

#: The ``path`` an unjournaled effect's position names (no operation path: nothing is recorded).
UNJOURNALED_PATH = "unjournaled"
#: The ``configurable`` key a run without a checkpointer sets to True to run its effects unjournaled.
UNJOURNALED = "unjournaled"

_logged: set[str] = set()
_logged_lock = threading.Lock()


def runs_without_checkpointer(config: RunnableConfig) -> bool:
    """Whether ``config`` is a LangGraph node's whose graph runs with no checkpointer at all."""
    configurable = config.get("configurable") or {}
    return _langgraph.task_writer(configurable) is not None and _langgraph.run_checkpointer(configurable) is None


def means_unjournaled(config: RunnableConfig) -> bool:
    """Whether a run without a checkpointer says its effects run unjournaled: an Agent Server run (a stateless
    one), or one whose config opts in (``UNJOURNALED``)."""
    return _langgraph.agent_server_run(config) or (config.get("configurable") or {}).get(UNJOURNALED) is True


def note_unjournaled_run(config: RunnableConfig) -> None:
    """Log, once per graph and process, that a graph runs without a checkpointer and its effects are not journaled.

    The graph is named by Agent Server's ``graph_id``; elsewhere a node's config does not name its graph, so by
    the node that met it first.
    """
    metadata = config.get("metadata") or {}
    graph_id, node = metadata.get("graph_id"), metadata.get("langgraph_node")
    graph = f"graph {graph_id!r}" if graph_id else f"the graph of node {node!r}"
    with _logged_lock:
        if graph in _logged:
            return
        _logged.add(graph)
    logger.info(
        "%s runs without a checkpointer (a stateless run): its effects run for real and are not journaled, "
        "since such a run cannot be resumed",
        graph,
    )


def unjournaled_position(call: EffectCall) -> EffectPosition:
    """A position of its own for an effect that is not journaled: its idempotency key is fresh on every call."""
    return EffectPosition("", UNJOURNALED_PATH, call.name, uuid.uuid4().hex, call.effect_key or "1")
