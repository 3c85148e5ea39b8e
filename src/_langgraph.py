"""The LangGraph internals this library relies on, in one place.

They are not LangGraph's public API, so a LangGraph release may change them:
``tests/test_langgraph_internals.py`` checks every one against the installed
LangGraph, so such a release breaks this module's test, loudly, and nothing
else needs reading.

- The checkpoint namespace format: segments ``name:task_id`` joined by ``|``
  (``NS_SEP``, ``NS_END``).
- A task's ``langgraph_path`` starts with ``__pregel_pull`` for an edge-triggered
  task and ``__pregel_push`` for a ``Send`` (``PULL``, ``PUSH``).
- Inside a node, the config's ``configurable`` holds the task's write callable
  (``CONFIG_KEY_SEND``, one per prepared task), the runtime with its retry
  attempt (``CONFIG_KEY_RUNTIME``), the checkpoint ids of the namespaces above
  (``CONFIG_KEY_CHECKPOINT_MAP``) and the run's durability (``CONFIG_KEY_DURABILITY``).
"""

from __future__ import annotations

from typing import Any

from langgraph._internal._constants import (
    CONFIG_KEY_CHECKPOINT_MAP,
    CONFIG_KEY_DURABILITY,
    CONFIG_KEY_RUNTIME,
    CONFIG_KEY_SEND,
    NS_END,
    NS_SEP,
    PULL,
    PUSH,
)

__all__ = [
    "CONFIG_KEY_CHECKPOINT_MAP",
    "CONFIG_KEY_DURABILITY",
    "CONFIG_KEY_RUNTIME",
    "CONFIG_KEY_SEND",
    "NS_END",
    "NS_SEP",
    "PULL",
    "PUSH",
    "node_attempt",
    "root_checkpoint",
    "runs_durably_async",
    "task_writer",
]


def task_writer(configurable: dict[str, Any]) -> Any:
    """The running task's write callable: one object per prepared task, freed with it (None outside a task)."""
    return configurable.get(CONFIG_KEY_SEND)


def node_attempt(configurable: dict[str, Any]) -> int:
    """The running task's attempt: 1, then one more per ``RetryPolicy`` retry."""
    info = getattr(configurable.get(CONFIG_KEY_RUNTIME), "execution_info", None)
    return getattr(info, "node_attempt", 1) or 1


def root_checkpoint(configurable: dict[str, Any]) -> str | None:
    """The id of the root-namespace checkpoint the running task was prepared from."""
    root = (configurable.get(CONFIG_KEY_CHECKPOINT_MAP) or {}).get("")
    return root if isinstance(root, str) else None


def runs_durably_async(configurable: dict[str, Any]) -> bool:
    """Whether the run stores checkpoints in the background (``durability="async"``)."""
    return configurable.get(CONFIG_KEY_DURABILITY) == "async"
