"""The CLI's reads of threads (``views.stored``) as plans: the same answers on the sync and the async face,
on every client kind (the CLI itself runs them on the sync face only)."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph_durable_mongodb import ActivityJournal
from langgraph_durable_mongodb.storage.plans.interpreters import AsyncInterpreter, SyncInterpreter
from langgraph_durable_mongodb.errors import InvalidInputError
from langgraph_durable_mongodb.journal import EffectCall, EffectPosition
from langgraph_durable_mongodb.storage.schema import CollectionNames
from langgraph_durable_mongodb.views.stored import (
    checkpoint_counts_plan,
    entry_plan,
    holds_checkpoints_plan,
    inspected_plan,
    journal_documents_plan,
    thread_exists_plan,
)
from langgraph_durable_mongodb.views.plans import thread_page_plan
from tests.clients import Face

NAMES = CollectionNames()
POS = EffectPosition("t2", "agent/1", "pay", "1", "1")


async def run_plan(face: Face, plan: Any) -> Any:
    if face.is_async:
        return await AsyncInterpreter(face.db).run(plan)
    return SyncInterpreter(face.db).run(plan)


async def write_chain(face: Face, thread_id: str, checkpoints: int, ns: str = "") -> None:
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
    for step in range(checkpoints):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"step": step}
        checkpoint["channel_versions"] = {"step": face.saver.get_next_version(None, None)}
        config = await face.call("put", config, checkpoint, {"source": "loop", "step": step}, checkpoint["channel_versions"])


async def test_the_summaries_list_threads_by_id_with_their_root_checkpoints(face: Face) -> None:
    assert await run_plan(face, holds_checkpoints_plan(NAMES)) is False
    await write_chain(face, "t1", 3)
    await write_chain(face, "t1", 2, ns="sub:abc")
    await write_chain(face, "t2", 1)
    page = await run_plan(face, thread_page_plan(NAMES, "", None, 1))
    assert ([s["thread_id"] for s in page["summaries"]], page["more"], page["problems"]) == (["t1"], True, [])
    latest = max((await face.raw("checkpoints", {"thread_id": "t1", "checkpoint_ns": ""})), key=lambda d: d["checkpoint_id"])
    shown = page["latest"]["t1"]
    assert (page["summaries"][0]["checkpoints"], shown["metadata"]["step"], shown["ts"]) == (3, 2, latest["ts"])
    page = await run_plan(face, thread_page_plan(NAMES, "", "t1", 5))
    rows = [(s["thread_id"], s["checkpoints"], page["latest"][s["thread_id"]]["metadata"]["step"]) for s in page["summaries"]]
    assert (rows, page["more"]) == ([("t2", 1, 0)], False)
    assert await run_plan(face, holds_checkpoints_plan(NAMES)) is True
    assert await run_plan(face, checkpoint_counts_plan(NAMES, ["t1", "t2", "nope"])) == {"t1": 5, "t2": 1, "nope": 0}


@pytest.mark.parametrize("after", [{"$gt": ""}, 42, ["t1"]])
def test_the_summaries_refuse_an_after_that_is_not_a_string_before_any_request(after: Any) -> None:
    """``after`` is a value in the thread list's filter: anything but a string (a document would be an operator)
    is refused before the plan's first request, as the web inspector's ``thread_id_range`` refuses it."""
    with pytest.raises(InvalidInputError, match="after must be a str"):
        next(thread_page_plan(NAMES, "", after, 5))


async def test_a_thread_is_read_as_stored_without_values_or_outcomes(face: Face, mongo_client: Any, db_name: str) -> None:
    await write_chain(face, "t2", 2)
    journal = ActivityJournal(**{"async_client" if face.is_async else "client": mongo_client}, db_name=db_name)
    call = EffectCall("tool", "pay", input={"amount": 1})
    if face.is_async:
        await journal.arun(call, lambda: "paid", position=POS)
    else:
        journal.run(call, lambda: "paid", position=POS)

    assert await run_plan(face, thread_exists_plan(NAMES, "t2")) is True
    assert await run_plan(face, thread_exists_plan(NAMES, "nope")) is False
    checkpoints, entries = await run_plan(face, inspected_plan(NAMES, "t2"))
    assert len(checkpoints) == 2 and not any("values" in doc or "checkpoint" in doc for doc in checkpoints)
    assert [e["name"] for e in entries] == ["pay"] and "data" not in entries[0]["outcome"]
    [raw] = await run_plan(face, journal_documents_plan(NAMES, "t2", with_outcomes=False))
    assert "_id" not in raw and "data" not in raw["outcome"]
    [whole] = await run_plan(face, journal_documents_plan(NAMES, "t2", with_outcomes=True))
    assert "data" in whole["outcome"]
    position = {"thread_id": "t2", "path": "agent/1", "node": "pay", "occurrence": "1", "effect_key": "1"}
    assert await run_plan(face, entry_plan(NAMES, position)) == {"kind": "tool", "name": "pay", "status": "completed", "position": position}
    assert await run_plan(face, entry_plan(NAMES, {**position, "effect_key": "2"})) is None
