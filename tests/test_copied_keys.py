"""A ``copy_thread`` target's effects run under the target's idempotency keys (issue 44, break 2).

A copy replays the source's outcomes: a replay never calls the provider, so every copied entry takes the key of
its position in the target. An effect that runs again on both threads after the copy (it failed, its worker died,
its outcome is unknown) then runs under two keys, one per thread, and the source keeps its own: the provider
answers each thread for itself. Before the fix the copy copied the entries verbatim, and a take-over runs under
the key its entry holds: the target charged under the source's key, and the provider answered it with the
source's charge.

Every test counts the real executions of the charge and reads the raw journal documents.
"""

from __future__ import annotations

import operator
from datetime import datetime, timedelta
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb import ActivityJournal, EffectOutcomeUnknownError
from langgraph_durable_mongodb.checkpointer import MongoDBCheckpointer
from langgraph_durable_mongodb.journal import EffectCall, EffectPosition, current_effect, effect
from langgraph_durable_mongodb.platform import DurablePlatform
from langgraph_durable_mongodb.storage.schema import CollectionNames

from .clients import PlainCompile
from .command_faults import CommandFault, injected, nth_of
from .graphs import config
from .stores import Store

pytestmark = pytest.mark.both_compile_forms

MODES = ["sync", "async"]


class Notes(TypedDict, total=False):
    notes: Annotated[list, operator.add]


class Provider:
    """A payment provider that sees every charge with its idempotency key; ``failing`` charges time out once each."""

    def __init__(self, failing: int = 0) -> None:
        self.keys: list[str] = []
        self.failing = failing

    def charge(self) -> str:
        self.keys.append(current_effect().idempotency_key)
        if self.failing:
            self.failing -= 1
            raise TimeoutError("the provider timed out: it may have charged")
        return f"charged under {self.keys[-1]}"


def pay_builder(provider: Provider, mode: str, at_most_once: bool = False) -> StateGraph:

    @effect(kind="payment", name="charge", at_most_once=at_most_once)
    def charge() -> str:
        return provider.charge()

    @effect(kind="payment", name="charge", at_most_once=at_most_once)
    async def acharge() -> str:
        return provider.charge()

    def pay(state: Notes) -> Notes:
        return {"notes": [charge()]}

    async def apay(state: Notes) -> Notes:
        return {"notes": [await acharge()]}

    builder = StateGraph(Notes)
    builder.add_node("pay", pay if mode == "sync" else apay)
    builder.add_edge(START, "pay")
    return builder


async def run(graph: Any, mode: str, value: Any, thread: str) -> Any:
    if mode == "async":
        return await graph.ainvoke(value, config(thread))
    return graph.invoke(value, config(thread))


async def copy(saver: MongoDBCheckpointer, mode: str, source: str, target: str) -> None:
    if mode == "async":
        await saver.acopy_thread(source, target)
    else:
        saver.copy_thread(source, target)


def entries(platform: Any, thread: str) -> list[dict[str, Any]]:
    saver = platform.checkpointer
    return list(saver.client[saver.db_name].activity_journal.find({"thread_id": thread, "chunk": 0}))


def key_at(entry: dict[str, Any], thread: str) -> str:
    """The idempotency key of ``entry``'s position on ``thread``."""
    return EffectPosition(thread, entry["path"], entry["node"], entry["occurrence"], entry["effect_key"]).idempotency_key


@pytest.mark.parametrize("mode", MODES)
async def test_a_failed_charge_copied_then_resumed_on_both_threads_runs_under_one_key_per_thread(platform: Any, mode: str) -> None:
    """The break as measured: a charge times out (it may have charged), ``copy_thread("src", "dst")``, both resume:
    three executions; the source's two share its key, the target's is the target's own."""
    provider = Provider(failing=1)
    graph = platform.compile(pay_builder(provider, mode))
    with pytest.raises(TimeoutError):
        await run(graph, mode, {"notes": []}, "src")
    [failed] = entries(platform, "src")
    assert failed["status"] == "failed" and failed["idempotency_key"] == provider.keys[0] == key_at(failed, "src")

    await copy(platform.checkpointer, mode, "src", "dst")
    [copied] = entries(platform, "dst")
    assert copied["idempotency_key"] == key_at(failed, "dst") != provider.keys[0]  # the target's key, before it runs
    await run(graph, mode, None, "src")
    await run(graph, mode, None, "dst")

    assert len(provider.keys) == 3
    assert provider.keys[1] == provider.keys[0]  # the source retries under its own key
    assert provider.keys[2] == key_at(failed, "dst") != provider.keys[0]
    assert [e["idempotency_key"] for e in entries(platform, "src")] == [provider.keys[0]]
    assert [e["idempotency_key"] for e in entries(platform, "dst")] == [provider.keys[2]]


@pytest.mark.parametrize("mode", MODES)
async def test_a_copied_charge_whose_worker_died_runs_again_under_one_key_per_thread(platform: Any, mode: str, compile_form: str) -> None:
    """In flight: the charge ran, its record never reached the database (the worker died with it), the claim's lease
    ran out. The copy and the source each run it again, each under its own key. Under ``platform.compile`` the
    run lock holder writes no claim: nothing is copied, and the target runs under its key too."""
    provider = Provider()
    graph = platform.compile(pay_builder(provider, mode))
    record = "find_one_and_update activity_journal" if compile_form == "platform.compile" else "fenced_update activity_journal"
    with injected(CommandFault(nth_of(record, 1))) as fault, pytest.raises(Exception):
        await run(graph, mode, {"notes": []}, "src")
    assert fault.failed and len(provider.keys) == 1
    db = platform.checkpointer.client[platform.checkpointer.db_name]
    db.activity_journal.update_many({}, {"$set": {"lease_until": datetime.now() - timedelta(seconds=1)}})
    assert [e["status"] for e in entries(platform, "src")] == ([] if compile_form == "platform.compile" else ["started"])

    await copy(platform.checkpointer, mode, "src", "dst")
    await run(graph, mode, None, "src")
    await run(graph, mode, None, "dst")

    [entry] = entries(platform, "src")
    assert len(provider.keys) == 3 and provider.keys[0] == provider.keys[1] == key_at(entry, "src")
    assert provider.keys[2] == key_at(entry, "dst")


@pytest.mark.parametrize("mode", MODES)
async def test_an_unknown_outcome_copied_names_each_thread_s_key_and_runs_under_it_once_discarded(platform: Any, mode: str) -> None:
    """``at_most_once``, its worker died mid-call: both threads stop on an unknown outcome, each naming its own key;
    discarded on both, each runs once under its own key."""
    provider = Provider()
    graph = platform.compile(pay_builder(provider, mode, at_most_once=True))
    with injected(CommandFault(nth_of("fenced_update activity_journal", 1))), pytest.raises(Exception):
        await run(graph, mode, {"notes": []}, "src")
    db = platform.checkpointer.client[platform.checkpointer.db_name]
    db.activity_journal.update_many({}, {"$set": {"lease_until": datetime.now() - timedelta(seconds=1)}})
    await copy(platform.checkpointer, mode, "src", "dst")

    unknown = {}
    for thread in ("src", "dst"):
        with pytest.raises(EffectOutcomeUnknownError) as raised:
            await run(graph, mode, None, thread)
        unknown[thread] = raised.value
    assert unknown["src"].idempotency_key == provider.keys[0]
    assert unknown["dst"].idempotency_key == key_at(entries(platform, "src")[0], "dst") != provider.keys[0]
    for thread in ("src", "dst"):
        platform.journal.discard(unknown[thread].position)
        await run(graph, mode, None, thread)
    assert provider.keys == [provider.keys[0], provider.keys[0], unknown["dst"].idempotency_key]


@pytest.mark.parametrize("mode", MODES)
async def test_a_saver_that_built_no_journal_copies_entries_under_the_target_s_keys(store: Store, mode: str, compile_form: str) -> None:
    """Another process (a service, a script) copies with a bare ``MongoDBCheckpointer``, the journal renamed: it
    knows the collection only from the stamp's declaration, and still gives each copied entry the target's key."""
    names = CollectionNames(journal="effects")
    made = DurablePlatform(store.client, async_client=store.async_client, db_name=store.db_name, collections=names)
    platform = made if compile_form == "platform.compile" else PlainCompile(made)
    provider = Provider(failing=1)
    graph = platform.compile(pay_builder(provider, mode))
    with pytest.raises(TimeoutError):
        await run(graph, mode, {"notes": []}, "src")

    bare = MongoDBCheckpointer(store.client, async_client=store.async_client, db_name=store.db_name)
    await copy(bare, mode, "src", "dst")

    [source] = store.db.effects.find({"thread_id": "src"})
    [copied] = store.db.effects.find({"thread_id": "dst"})
    assert source["idempotency_key"] == provider.keys[0] == key_at(source, "src")
    assert copied["idempotency_key"] == key_at(source, "dst")
    await run(graph, mode, None, "dst")
    assert provider.keys[1] == key_at(source, "dst")


def test_every_copied_entry_takes_the_target_s_key_and_nothing_else_changes(store: Store) -> None:
    """Completed, failed, ``at_most_once``, a nested effect and an outcome's chunk documents: each copy is its source
    with the target's thread id and, where the source holds a key, the target's key; the source is unchanged."""
    platform = DurablePlatform(store.client, async_client=store.async_client, db_name=store.db_name)
    journal: ActivityJournal = platform.journal
    big = "x" * (journal.chunk_bytes + 10)

    def fails() -> str:
        raise TimeoutError("timed out")

    def nests() -> str:
        return journal.run(EffectCall("tool", "inner"), lambda: "inner", position=EffectPosition("src", "agent/1", "n", "s1", "5/1"))

    calls = [(EffectCall("tool", "done"), lambda: "done"), (EffectCall("tool", "big"), lambda: big),
             (EffectCall("payment", "once", at_most_once=True), lambda: "paid"), (EffectCall("tool", "fails"), fails),
             (EffectCall("tool", "outer"), nests)]
    for key, (call, fn) in enumerate(calls, 1):
        try:
            journal.run(call, fn, position=EffectPosition("src", "agent/1", "n", "s1", str(key)))
        except TimeoutError:
            pass
    before = list(store.db.activity_journal.find({"thread_id": "src"}, {"_id": 0}))
    assert any(d["chunk"] for d in before) and any(d["effect_key"] == "5/1" for d in before)

    platform.checkpointer.copy_thread("src", "dst")

    assert list(store.db.activity_journal.find({"thread_id": "src"}, {"_id": 0})) == before
    expected = []
    for doc in before:
        copied = {**doc, "thread_id": "dst"}
        if "idempotency_key" in doc:
            copied["idempotency_key"] = key_at(doc, "dst")
            assert copied["idempotency_key"] != doc["idempotency_key"]
        expected.append(copied)
    copies = list(store.db.activity_journal.find({"thread_id": "dst"}, {"_id": 0}))
    assert sorted(copies, key=repr) == sorted(expected, key=repr)


def test_a_journal_named_apart_from_its_saver_s_names_copies_under_the_target_s_keys(store: Store) -> None:
    """``ActivityJournal.for_checkpointer(saver, collection="effects")``: the saver's names say ``activity_journal``,
    the journal declares ``effects`` as the journal's collection, and its entries are copied as entries."""
    saver = MongoDBCheckpointer(store.client, async_client=store.async_client, db_name=store.db_name)
    journal = ActivityJournal.for_checkpointer(saver, collection="effects")
    journal.run(EffectCall("tool", "done"), lambda: "done", position=EffectPosition("src", "agent/1", "n", "s1", "1"))
    saver.copy_thread("src", "dst")
    [source] = store.db.effects.find({"thread_id": "src"})
    [copied] = store.db.effects.find({"thread_id": "dst"})
    assert copied["idempotency_key"] == key_at(source, "dst") != source["idempotency_key"]


def test_a_damaged_entry_is_copied_without_the_source_s_key(store: Store) -> None:
    """An entry whose position is not all strings (edited by hand) has no key of its own on the target: it keeps
    none rather than the source's (the journal refuses it when a run meets it)."""
    platform = DurablePlatform(store.client, async_client=store.async_client, db_name=store.db_name)
    platform.journal.run(EffectCall("tool", "done"), lambda: "done", position=EffectPosition("src", "agent/1", "n", "s1", "1"))
    store.db.activity_journal.update_one({"thread_id": "src"}, {"$set": {"occurrence": 7}})
    platform.checkpointer.copy_thread("src", "dst")
    [copied] = store.db.activity_journal.find({"thread_id": "dst"})
    assert copied["occurrence"] == 7 and "idempotency_key" not in copied
