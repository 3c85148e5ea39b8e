#!/usr/bin/env python3
"""Count the MongoDB commands each checkpointer operation sends (pymongo command monitoring).

Command counts, unlike times, are stable on a noisy machine. Runs against
``MONGODB_URI``, or a FerretDB that tests/servers/ferretdb.py starts::

    .venv/bin/python scripts/roundtrips.py

Budgets (checked by tests/test_roundtrips.py on the real-server tier):
put == 1 when the changed values are small (2 with a value above
``inline_value_bytes``, which goes to a blob), put_writes == 1, get_tuple <= 2
(the checkpoint, its writes), list of 100 checkpoints: 2 per page, never one per
checkpoint; one ``invoke`` turn of an add_messages chat <= 7 (get_tuple, three
puts, two put_writes; LangGraph's own MongoDBSaver sends 7).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pymongo import MongoClient, monitoring

BUDGET = {
    "put": 1,
    "put_large": 2,
    "put_writes": 1,
    "get_tuple": 2,
    "get_tuple_referenced": 3,
    "list_100": 2,
    "get_delta_channel_history": 6,
    "chat_turn": 7,
}


class CommandCounter(monitoring.CommandListener):
    """Counts commands sent, ignoring the driver's own handshakes and heartbeats."""

    IGNORED = {"hello", "ismaster", "isMaster", "ping", "endSessions", "saslStart", "saslContinue", "buildInfo"}

    def __init__(self) -> None:
        self.names: list[str] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name not in self.IGNORED:
            self.names.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    @contextlib.contextmanager
    def counting(self) -> Iterator[list[str]]:
        start = len(self.names)
        seen: list[str] = []
        yield seen
        seen.extend(self.names[start:])


def measure(uri: str) -> dict[str, Any]:
    """Run one graph step's worth of saver calls and a 100-checkpoint list; return command counts."""
    from langgraph.channels.delta import DeltaChannel  # noqa: F401 - documents the scenario below
    from langgraph.checkpoint.base import empty_checkpoint

    from langgraph_durable_mongodb import MongoDBCheckpointer

    counter = CommandCounter()
    client: MongoClient = MongoClient(uri, event_listeners=[counter])
    db_name = f"roundtrips_{uuid.uuid4().hex[:12]}"
    saver = MongoDBCheckpointer(client, db_name=db_name)
    saver.setup()
    counts: dict[str, Any] = {}
    try:
        config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        previous: dict[str, Any] = {"channel_versions": {}}
        for step in range(100):
            cp = empty_checkpoint()
            versions = {"messages": saver.get_next_version(previous["channel_versions"].get("messages"), None)}
            cp["channel_versions"] = {**previous["channel_versions"], **versions, "step": step}
            cp["channel_values"] = {"messages": [f"message {i}" for i in range(step + 1)], "step": step}
            with counter.counting() as seen:
                config = saver.put(config, cp, {"source": "loop", "step": step}, versions)
            counts["put"] = len(seen)
            with counter.counting() as seen:
                saver.put_writes(config, [("messages", f"message {step + 1}"), ("step", step + 1)], f"task-{step}", "~pull")
            counts["put_writes"] = len(seen)
            previous = cp
        with counter.counting() as seen:
            saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
        counts["get_tuple"] = len(seen)
        with counter.counting() as seen:
            listed = list(saver.list({"configurable": {"thread_id": "t"}}))
        counts["list_100"] = len(seen)
        counts["list_100_commands"] = list(seen)
        counts["list_100_checkpoints"] = len(listed)
        with counter.counting() as seen:
            saver.get_delta_channel_history(config=config, channels=["messages"])
        counts["get_delta_channel_history"] = len(seen)
        # A value above inline_value_bytes goes to a blob first: two commands. A later checkpoint that does not
        # change it (and a larger-than-copy value) references the checkpoint holding it: one query more to read.
        big_config = {"configurable": {"thread_id": "big", "checkpoint_ns": ""}}
        cp = empty_checkpoint()
        cp["channel_versions"] = {"doc": saver.get_next_version(None, None), "n": 1}
        cp["channel_values"] = {"doc": "x" * (saver.inline_value_bytes + 1), "n": 1}
        with counter.counting() as seen:
            big_config = saver.put(big_config, cp, {"source": "loop", "step": 0}, dict(cp["channel_versions"]))
        counts["put_large"] = len(seen)
        held = empty_checkpoint()
        held["channel_versions"] = {"ref": saver.get_next_version(None, None), "n": 1}
        held["channel_values"] = {"ref": "y" * (saver.copy_value_bytes + 1), "n": 1}
        held_config = saver.put({"configurable": {"thread_id": "held", "checkpoint_ns": ""}}, held,
                                {"source": "loop", "step": 0}, dict(held["channel_versions"]))
        child = empty_checkpoint()
        child["channel_versions"] = {**held["channel_versions"], "n": 2}
        child["channel_values"] = {"ref": held["channel_values"]["ref"], "n": 2}
        saver.put(held_config, child, {"source": "loop", "step": 1}, {"n": 2})
        with counter.counting() as seen:
            saver.get_tuple({"configurable": {"thread_id": "held", "checkpoint_ns": ""}})
        counts["get_tuple_referenced"] = len(seen)
        counts["chat_turn"] = _chat_turn(saver, counter)
    finally:
        client.drop_database(db_name)
        client.close()
    return counts


def _chat_turn(saver: Any, counter: CommandCounter) -> float:
    """Commands per ``invoke`` of an add_messages chat (the turns after the first, averaged)."""
    from typing import Annotated, TypedDict

    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import add_messages

    Chat = TypedDict("Chat", {"messages": Annotated[list, add_messages]})  # noqa: UP013 - local: no annotations

    graph = StateGraph(Chat)
    graph.add_node("reply", lambda s: {"messages": [("ai", "reply " * 80)]})
    graph.add_edge(START, "reply")
    compiled = graph.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "chat"}}
    compiled.invoke({"messages": [("user", "hello")]}, config)
    with counter.counting() as seen:
        for turn in range(5):
            compiled.invoke({"messages": [("user", f"question {turn} " * 20)]}, config)
    return len(seen) / 5


def main() -> int:
    uri = os.environ.get("MONGODB_URI")
    with contextlib.ExitStack() as stack:
        if not uri:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root
            from tests.servers.ferretdb import running_ferretdb

            uri = stack.enter_context(running_ferretdb())
        counts = measure(uri)
    print(json.dumps({"commands": counts, "budget": BUDGET}, indent=2))
    over = [k for k, limit in BUDGET.items() if counts[k] > limit]
    if over:
        print("over budget: " + ", ".join(over), file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
