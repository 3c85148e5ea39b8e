"""What LangChain callbacks see of a journaled call: its position, and whether its outcome was replayed.

``SecureLLM`` and ``SecureTool`` open their callback runs with these tags and
metadata, where ``current_effect()`` names the call (executed or replayed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig, ensure_config

from .context import current_effect

#: The tag of a callback run whose outcome came from the journal: nothing ran.
REPLAYED_TAG = "durable:replayed"


def observed(tags: list[str] | None, metadata: Mapping[str, Any] | None) -> tuple[list[str], dict[str, Any]]:
    """``tags`` and ``metadata`` of the callback run of the effect running or replayed now.

    The metadata gains ``durable``: ``replayed``, ``path``, ``node``, ``effect_key`` and ``idempotency_key``;
    a replay also gets the ``durable:replayed`` tag.
    """
    info = current_effect()
    assert info is not None, "called from a journal's fn or replay hook"
    durable = {
        "replayed": info.replayed,
        "path": info.position.path,
        "node": info.position.node,
        "effect_key": info.position.effect_key,
        "idempotency_key": info.idempotency_key,
    }
    return [*(tags or []), *([REPLAYED_TAG] if info.replayed else [])], {**(metadata or {}), "durable": durable}


def observed_config(config: RunnableConfig | None) -> RunnableConfig:
    """``config`` (as the runnable would complete it) with ``observed`` tags and metadata."""
    config = ensure_config(config)
    tags, metadata = observed(config.get("tags"), config.get("metadata"))
    return {**config, "tags": tags, "metadata": metadata}
