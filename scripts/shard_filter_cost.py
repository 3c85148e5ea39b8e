#!/usr/bin/env python3
"""What naming a document by ``{_id, thread_id, checkpoint_ns}`` instead of ``{_id}`` costs on the test servers.

A checkpointer ``put`` and ``put_writes`` of a new thread, beside ``N`` documents of other threads (default
20,000), timed with the ``id_alone`` quirk on (what FerretDB and mongo-java-server are sent: the ``_id`` alone)
and off (the filters MongoDB is sent, with the shard key), interleaved, 20 of each; median wall time. Starts
mongo-java-server and FerretDB itself (tests/servers/), one after the other::

    PYTHONPATH=. .venv/bin/python scripts/shard_filter_cost.py [N]

Times, on a shared machine: compare the two columns of one run, not runs.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time
import uuid
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint
from pymongo import MongoClient

from langgraph_durable_mongodb import MongoDBCheckpointer
from langgraph_durable_mongodb._bson import key_id
from tests.servers import ferretdb, mongo_java_server

ROUNDS = 40


def measure(uri: str, others: int) -> dict[bool, float]:
    """Median seconds of a put and a put_writes, by whether the key fields were dropped (``id_alone``)."""
    client, db_name = MongoClient(uri), f"cost_{uuid.uuid4().hex[:8]}"
    try:
        saver = MongoDBCheckpointer(client, db_name=db_name)
        saver.setup()
        db = client[db_name]
        db.checkpoints.insert_many([{"_id": key_id(f"o{i}", "", "c"), "thread_id": f"o{i}", "checkpoint_ns": "", "checkpoint_id": "c"}
                                    for i in range(others)])
        db.checkpoint_writes.insert_many([{"_id": key_id(f"o{i}", "", "c", "t", 0, 0), "thread_id": f"o{i}", "checkpoint_ns": ""}
                                          for i in range(others)])
        io: Any = saver._sync_io  # noqa: SLF001 - the quirk of this saver's interpreter, switched per round
        times: dict[bool, list[float]] = {True: [], False: []}
        for round_ in range(ROUNDS):
            alone = bool(round_ % 2)
            io._quirks = dataclasses.replace(io.quirks, id_alone=alone)  # noqa: SLF001
            config = {"configurable": {"thread_id": f"t{round_}", "checkpoint_ns": ""}}
            started = time.perf_counter()
            stored = saver.put(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
            saver.put_writes(stored, [("a", 1), ("b", 2)], "task")
            times[alone].append(time.perf_counter() - started)
        return {alone: statistics.median(spent) for alone, spent in times.items()}
    finally:
        client.drop_database(db_name)
        client.close()


def main() -> None:
    others = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    for launcher, name in ((mongo_java_server, "mongo-java-server"), (ferretdb, "FerretDB")):
        server = launcher.start()
        try:
            median = measure(server.uri, others)
        finally:
            launcher.stop(server)
        print(f"{name}, {others} other documents: put + put_writes {median[True] * 1e3:.1f} ms by _id alone, "
              f"{median[False] * 1e3:.1f} ms with the shard key fields")


if __name__ == "__main__":
    main()
