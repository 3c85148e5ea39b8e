"""Checkpoints written through a ``Face`` (tests/clients.py) for the saver tests (no tests here)."""

from __future__ import annotations

from langgraph.checkpoint.base import empty_checkpoint

from langgraph_durable_mongodb import MongoDBCheckpointer

from .clients import Face


def cfg(thread: str = "t1", ns: str = "", checkpoint_id: str | None = None) -> dict:
    """The config of ``thread``'s namespace ``ns`` (of its checkpoint ``checkpoint_id`` when given)."""
    conf = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def make_checkpoint(saver: MongoDBCheckpointer, values: dict, previous: dict | None = None) -> tuple[dict, dict]:
    """A checkpoint holding ``values``, with fresh versions for all of them."""
    cp = empty_checkpoint()
    base = dict(previous["channel_versions"]) if previous else {}
    new_versions = {k: saver.get_next_version(base.get(k), None) for k in values}
    cp["channel_versions"] = {**base, **new_versions}
    cp["channel_values"] = {**(previous or {}).get("channel_values", {}), **values}
    return cp, new_versions


async def put(face: Face, config: dict, values: dict, metadata: dict | None = None, previous: dict | None = None) -> tuple[dict, dict]:
    """``face.put`` of a checkpoint holding ``values`` (over ``previous``'s): the saved config and the checkpoint."""
    cp, new_versions = make_checkpoint(face.saver, values, previous)
    saved = await face.call("put", config, cp, metadata or {"source": "loop", "step": 0}, new_versions)
    return saved, cp
