"""An effect in flight across a storage upgrade keeps the key it was started with (issue 44, break 3).

The databases are golden: written by the real code of formats 1, 2 and 3 (tests/explorer/goldens.py, made by
``scripts/golden-histories``), each SIGKILLed right after an at-least-once ``@effect`` called its provider, the key
that provider saw kept in the golden's ledger. Under ``platform.compile`` the run held its thread's run lock, so the
effect ran unclaimed and no document holds that key; the upgrade to format 4 moves the effect's position, and
before the fix the resume ran it again under a new key (the provider charged twice). The upgrade now refuses a
database with runs in flight, writing nothing (``RunsInFlightError``); drained by the old code, as docs/storage.md
says, it upgrades and resumes. In the plain form the claim stored the key: it upgrades, and the effect runs again
under that key.

Real executions are counted on the explorer's ledger; the raw documents are read.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from langgraph_durable_mongodb import RunsInFlightError
from langgraph_durable_mongodb.storage.format import FORMAT_VERSION, IN_FLIGHT_SHOWN
from langgraph_durable_mongodb.storage.visit_keys import KEY, levels

from .explorer import goldens, graphs, history, ledger, storage_history
from .explorer.plans import Fault
from .stores import Store

KILLED = [g for g in goldens.GOLDENS if g.in_flight]
PLAIN = [g for g in goldens.GOLDENS if g.form == "plain compile"]
AT_INTERRUPT = [g for g in goldens.GOLDENS if g.stop == "interrupt"]
CONFIG = {"configurable": {"thread_id": goldens.THREAD}}


def ids(made: list[goldens.Golden]) -> list[str]:
    return [g.name.replace(" ", "-") for g in made]


def loaded(store: Store, golden: goldens.Golden, variant: str) -> dict[str, Any]:
    dump = storage_history.dumped(golden, variant)
    storage_history.load(store.db, dump["db"])
    return dump


def resume(store: Store, golden: goldens.Golden, mode: str = "sync", stop_on_error: bool = False) -> tuple[list[dict[str, Any]], Any]:
    """Today's code resumes the golden's thread to its end (answering its interrupt): the executions it made, and
    the thread's final values (or the error that stopped it)."""
    recorded = ledger.use(ledger.Ledger())
    graphs.arm(Fault())
    plan = dataclasses.replace(golden.plan(), mode=mode)
    driver = history.Driver(plan, history.Store(store.client, store.async_client, store.db_name), stop_on_error=stop_on_error)
    try:
        life = asyncio.run(driver.life())
    finally:
        ledger.use(ledger.Ledger())
        if driver.platform.run_locks is not None:
            driver.platform.run_locks.wait_releases(10)
    return recorded.of("executed"), life


def slot(record: dict[str, Any]) -> tuple[Any, ...]:
    return record["node"], record["item"], record["visit"], record["idx"]


def old_keys(dump: dict[str, Any]) -> dict[tuple[Any, ...], str]:
    """The key each slot's provider saw under the old code."""
    return {slot(r): r["key"] for r in dump["ledger"] if r["kind"] == "executed"}


@pytest.mark.parametrize("golden", KILLED, ids=ids(KILLED))
def test_an_effect_in_flight_across_an_upgrade_never_runs_under_a_new_key(store: Store, golden: goldens.Golden) -> None:
    """The break as measured: a format 1-3 run under ``platform.compile`` SIGKILLed right after its effect called
    the provider; today's code opens the database. No effect the old code ran may run under another key: the
    upgrade is refused (it was not: the effect ran under a new key), naming the thread, and nothing is written."""
    dump = loaded(store, golden, "in_flight")
    killed = goldens.KILLS[golden.stop]
    assert killed in old_keys(dump) and [r["what"] for r in dump["ledger"] if r["kind"] == "fault"][0].startswith("SIGKILL")

    executed, life = resume(store, golden, stop_on_error=True)

    seen = old_keys(dump)
    assert [(slot(r), r["key"]) for r in executed if slot(r) in seen and r["key"] != seen[slot(r)]] == []
    assert executed == [] and life.values is None
    assert len(life.errors) == 1 and life.errors[0].startswith(RunsInFlightError.__name__)
    assert storage_history.changes(store.db, dump["db"]) == []


@pytest.mark.parametrize("golden", KILLED, ids=ids(KILLED))
def test_a_refusal_names_the_threads_and_how_to_drain_and_a_drained_database_upgrades(store: Store, golden: goldens.Golden) -> None:
    """The refusal is typed and says what to do; the operator drains the run with the old code (the golden's
    drained dump: the old code resumed it to its interrupt, running the killed effect again under its key), and
    today's code upgrades it and resumes it to the end, replaying every effect the old code ran."""
    loaded(store, golden, "in_flight")
    platform = history.Store(store.client, store.async_client, store.db_name).platform(golden.plan())
    with pytest.raises(RunsInFlightError) as refused:
        platform.checkpointer.get_tuple({"configurable": {"thread_id": "another", "checkpoint_ns": ""}})
    assert refused.value.thread_ids == (goldens.THREAD,)
    message = str(refused.value)
    assert f"format version {golden.format}" in message and "Nothing was written" in message
    assert "graph.invoke(None, config)" in message and "docs/storage.md" in message
    store.client.drop_database(store.db_name)

    dump = loaded(store, golden, "drained")
    executed, life = resume(store, golden)

    assert life.errors == [] and life.values is not None
    seen = old_keys(dump)
    assert not any(slot(r) in seen for r in executed)  # every effect the old code ran replays
    assert {slot(r) for r in executed} == {("s3q", None, 1, 2)}  # only the one after the interrupt runs
    assert store.db.durable_metadata.find_one({"_id": "storage_format"})["version"] == FORMAT_VERSION
    entries = list(store.db.activity_journal.find({"chunk": 0}))
    assert set(seen.values()) <= {e["idempotency_key"] for e in entries}  # each recorded under its old key
    assert all(KEY.match(text) for e in entries for _, text in levels(e))  # every entry keyed by its visit


@pytest.mark.parametrize("golden", PLAIN, ids=ids(PLAIN))
def test_a_plain_form_effect_in_flight_runs_again_after_the_upgrade_under_its_recorded_key(store: Store, golden: goldens.Golden) -> None:
    """Without the run lock the effect was claimed first, its key stored with the claim: the upgrade goes on, and
    the effect runs once more under the key its provider saw."""
    dump = loaded(store, golden, "in_flight")

    executed, life = resume(store, golden, mode="async")

    assert life.errors == [] and life.values is not None
    killed = goldens.KILLS[golden.stop]
    seen = old_keys(dump)
    again = [r for r in executed if slot(r) == killed]
    assert len(again) == 1 and again[0]["key"] == seen[killed]
    assert all(r["key"] == seen.get(slot(r), r["key"]) for r in executed)


@pytest.mark.parametrize("golden", AT_INTERRUPT, ids=ids(AT_INTERRUPT))
def test_a_thread_at_an_interrupt_upgrades_and_replays_what_it_recorded(store: Store, golden: goldens.Golden) -> None:
    dump = loaded(store, golden, "in_flight")
    executed, life = resume(store, golden)
    assert life.errors == [] and life.values is not None
    assert {slot(r) for r in executed} == {("s3q", None, 1, 2)}
    assert not any(slot(r) in old_keys(dump) for r in executed)


def test_a_refusal_lifts_once_the_runs_are_released_and_the_same_process_upgrades(store: Store) -> None:
    """The documented way to upgrade anyway: release the locks. The process that was refused upgrades at its next
    call (no restart), and the effect in flight runs again under a new key, as the message warned."""
    golden = goldens.BY_NAME["format3 platform.compile effect"]
    dump = loaded(store, golden, "in_flight")
    platform = history.Store(store.client, store.async_client, store.db_name).platform(golden.plan())
    with pytest.raises(RunsInFlightError):
        platform.checkpointer.get_tuple({"configurable": {"thread_id": "another", "checkpoint_ns": ""}})
    store.db.thread_runs.update_many({"owner": {"$ne": None}}, {"$set": {"owner": None}})

    platform.checkpointer.get_tuple({"configurable": {"thread_id": "another", "checkpoint_ns": ""}})

    assert store.db.durable_metadata.find_one({"_id": "storage_format"})["version"] == FORMAT_VERSION
    executed, _ = resume(store, golden)
    killed = goldens.KILLS[golden.stop]
    assert [r["key"] == old_keys(dump)[killed] for r in executed if slot(r) == killed] == [False]


def test_a_refusal_names_twenty_threads_and_how_to_find_the_rest(store: Store) -> None:
    golden = goldens.BY_NAME["format2 platform.compile interrupt"]
    loaded(store, golden, "in_flight")
    store.db.thread_runs.insert_many([{"thread_id": f"t{i:02}", "owner": "gone", "fence": 1} for i in range(25)])
    platform = history.Store(store.client, store.async_client, store.db_name).platform(golden.plan())
    with pytest.raises(RunsInFlightError) as refused:
        platform.checkpointer.get_tuple({"configurable": {"thread_id": "another", "checkpoint_ns": ""}})
    assert refused.value.thread_ids == tuple(f"t{i:02}" for i in range(IN_FLIGHT_SHOWN))
    assert "and more (db.thread_runs.find({owner: {$ne: null}}))" in str(refused.value)


def test_an_unstamped_database_with_a_run_in_flight_is_refused_before_it_is_stamped(store: Store) -> None:
    """0.1.0 stamped nothing (format 1): the refusal comes before the stamp is written, so the old code still opens
    the database to drain it."""
    golden = goldens.BY_NAME["format1 platform.compile child"]
    dump = storage_history.dumped(golden, "in_flight")
    dump["db"]["durable_metadata"] = [d for d in dump["db"]["durable_metadata"] if d["_id"] != "storage_format"]
    storage_history.load(store.db, dump["db"])
    platform = history.Store(store.client, store.async_client, store.db_name).platform(golden.plan())
    with pytest.raises(RunsInFlightError, match="format version 1"):
        platform.checkpointer.get_tuple({"configurable": {"thread_id": "another", "checkpoint_ns": ""}})
    assert storage_history.changes(store.db, dump["db"]) == []
