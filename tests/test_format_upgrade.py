"""A database of storage format 2, upgraded to 3: its journal's entries, keyed by ordinals, are rewritten to the
keys they stood for, so a run resumed after the upgrade replays what was recorded before it (issue 32).

``tests/golden/format2_case-7.json`` is a thread as format 2 wrote it (every collection, in extended JSON):
``tests.graphs.format2_case`` run by 0.1.0 at 37385b2 on mongomock, interrupted in ``gate`` after its payment.
Its root-level entries were numbered from the high water their checkpoints carried (their ``root_key`` names the
key), the child's allocated in ``operation_ordinals``, the ``Send`` group's as ``1.0`` and ``1.1``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bson import json_util
from langgraph.types import Command

from langgraph_durable_mongodb.storage.format import FORMAT_VERSION
from langgraph_durable_mongodb.storage.visit_keys import KEY

from .graphs import format2_case
from .stores import Store

GOLDEN = Path(__file__).parent / "golden" / "format2_case-7.json"
CONFIG = {"configurable": {"thread_id": "case-7"}}
#: The positions format 2 stored: the labels the upgraded entries read as.
STORED = [
    ("agent/1", "act", "1"), ("agent/1", "act", "2"), ("agent/1/case/1", "review", "1"),
    ("agent/1", "worker", "1.0"), ("agent/1", "worker", "1.1"), ("agent/1", "gate", "1"),
]


def load_golden(store: Store) -> dict[str, list[dict[str, Any]]]:
    dump = json_util.loads(GOLDEN.read_text())
    # The run stopped at gate's interrupt, which releases its lock; the process that wrote the dump exited before
    # its release (sent in the background) reached the server. Held, it would hold the upgrade back as a run in
    # flight (tests/test_upgrade_in_flight.py): released here, as the run released it.
    dump["thread_runs"] = [{**d, "owner": None} for d in dump["thread_runs"]]
    for name, docs in dump.items():
        if docs:
            store.db[name].insert_many(docs)
    return dump


def keyed(doc: dict[str, Any]) -> bool:
    parts = doc["path"].split("/")[2:]
    return all(KEY.match(text) for text in [*parts[1::2], doc["occurrence"]])


async def test_a_format_2_thread_resumes_after_the_upgrade_and_replays_what_it_recorded(store: Store) -> None:
    golden = load_golden(store)
    assert store.db.durable_metadata.find_one()["version"] == 2
    executed: list[str] = []
    graph = store.platform().compile(format2_case(executed))

    result = graph.invoke(Command(resume="yes"), CONFIG)

    assert executed == []  # the payment in gate, recorded before the upgrade, is replayed
    assert result["notes"][-2:] == ["paid 7", "gate:yes"]
    assert store.db.durable_metadata.find_one()["version"] == FORMAT_VERSION == 4
    raw = list(store.db.activity_journal.find({"thread_id": "case-7"}))
    assert len(raw) == len(golden["activity_journal"]) and all(keyed(d) for d in raw)
    by_id = {d["_id"]: d for d in raw}
    for old in golden["activity_journal"]:  # each keyed by what its ordinals stood for, the rest as it was
        new = by_id[old["_id"]]
        assert new["occurrence"].startswith(old["root_key"]) or new["path"].startswith(f"agent/1/case/{old['root_key']}")
        visited = ("path", "occurrence", "visited_at", "replays")  # the resume visited gate's entry
        assert {k: v for k, v in new.items() if k not in visited} == {k: v for k, v in old.items() if k not in visited}
    assert store.db.operation_ordinals.count_documents({}) == 0
    entries = store.platform().journal.entries("case-7")
    assert sorted((e["path"], e["node"], e["occurrence"]) for e in entries) == sorted(STORED)


async def test_an_entry_whose_ordinals_cannot_be_read_back_keeps_its_position(store: Store) -> None:
    golden = load_golden(store)
    store.db.operation_ordinals.delete_many({})  # the child's allocation gone: its entry cannot be keyed
    store.platform().setup()
    [review] = [d for d in golden["activity_journal"] if d["node"] == "review"]
    kept = store.db.activity_journal.find_one({"_id": review["_id"]})
    assert (kept["path"], kept["occurrence"]) == ("agent/1/case/1", "1")
    assert sum(keyed(d) for d in store.db.activity_journal.find()) == len(golden["activity_journal"]) - 1
