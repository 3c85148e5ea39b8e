"""Bad options and arguments of the storage classes: a typed error naming the fix, before any query."""

from __future__ import annotations

from typing import Any

import mongomock
import pytest
from mongomock_motor import AsyncMongoMockClient

from langgraph_durable_mongodb import ActivityJournal, DurablePlatform, InvalidInputError
from langgraph_durable_mongodb.runs.run_lock import RunLocks


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"lease_seconds": 0}, "run_lease_seconds must be a positive number of seconds"),
        ({"lease_seconds": "30"}, "run_lease_seconds must be a positive number"),
        ({"wait_seconds": -1}, "run_wait_seconds must be a non-negative number"),
        ({"wait_seconds": True}, "run_wait_seconds must be a non-negative number"),
        ({"db_name": "a.b"}, "db_name must be a valid MongoDB database name"),
        ({"collection": ""}, "collection must be a non-empty string"),
    ],
)
def test_run_locks_refuse_bad_options(options: dict, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        RunLocks(mongomock.MongoClient(), **options)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"db_name": "with space"}, "db_name must be a valid"),
        ({"lease_seconds": -1}, "lease_seconds must be a non-negative"),
        ({"wait_seconds": "5"}, "wait_seconds must be a non-negative"),
        ({"on_input_change": "fail"}, 'on_input_change must be "warn", "raise" or "ignore"'),
        ({"on_nondeterminism": "warn"}, 'on_nondeterminism must be "raise" or "rerun"'),
        ({"terminal_errors": [ValueError, "KeyError"]}, "terminal_errors must be exception types"),
        ({"terminal_errors": [int]}, "terminal_errors must be exception types"),
        ({"digest_key": b"short"}, "digest_key must be at least 16 random bytes"),
        ({"digest_key": "a text of sixteen chars"}, "digest_key must be at least 16 random bytes"),
        ({"collection": ""}, "collection must be a non-empty string"),
        ({"metadata_collection": ""}, "metadata_collection must be a non-empty string"),
        ({"claim_always": "yes"}, "claim_always must be True or False"),
        ({"on_input_change": "fail", "lease_seconds": -1}, "on_input_change"),  # checked in the order written
    ],
)
def test_the_journal_refuses_bad_options(options: dict, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        ActivityJournal(mongomock.MongoClient(), **options)


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_resolve_and_discard_take_an_effect_position(face: str) -> None:
    client = mongomock.MongoClient()
    journal = ActivityJournal(client if face == "sync" else AsyncMongoMockClient(mock_mongo_client=client))
    position = {"thread_id": {"$ne": ""}, "path": "agent/1", "node": "n", "occurrence": "1", "effect_key": "1"}
    for call in ("resolve", "discard"):
        args = (position, "outcome") if call == "resolve" else (position,)
        with pytest.raises(InvalidInputError, match="a journal position is an EffectPosition"):
            if face == "sync":
                getattr(journal, call)(*args)
            else:
                await getattr(journal, "a" + call)(*args)
    assert client["langgraph"]["activity_journal"].count_documents({}) == 0


#: A typo at each entry point, what the error names, and the option it suggests.
TYPOS = {
    "platform option": (lambda: DurablePlatform(mongomock.MongoClient(), tll=60), "DurablePlatform got", "ttl"),
    "platform journal option": (
        lambda: DurablePlatform(mongomock.MongoClient(), journal_options={"lease_second": 5}),
        "DurablePlatform's journal_options got", "lease_seconds",
    ),
    "embedded option": (lambda: DurablePlatform.embedded(tll=60), "DurablePlatform.embedded got", "ttl"),
    "embedded journal option": (
        lambda: DurablePlatform.embedded(journal_options={"wait_second": 5}), "DurablePlatform.embedded's journal_options got", "wait_seconds",
    ),
    "from_conn_string journal option": (
        lambda: DurablePlatform.from_conn_string("mongodb://localhost:1/x", journal_options={"on_input_changes": "raise"}),
        "DurablePlatform.from_conn_string's journal_options got", "on_input_change",
    ),
}


@pytest.mark.parametrize("typo", TYPOS.values(), ids=TYPOS.keys())
def test_a_typo_is_refused_at_the_call_made_with_the_closest_option(typo: Any) -> None:
    call, entry, suggested = typo
    with pytest.raises(InvalidInputError) as refused:
        call()
    assert str(refused.value).startswith(entry) and f"did you mean {suggested!r}?" in str(refused.value)


SWEPT = {"default_ttl": 60, "sweep_interval_minutes": 60}


async def test_every_platform_is_a_context_manager_sync_and_async() -> None:
    with DurablePlatform.embedded(ttl=SWEPT) as platform:
        platform.checkpointer.start_sweeper()
        assert platform.checkpointer._sweepers  # noqa: SLF001
    assert not platform.checkpointer._sweepers  # noqa: SLF001 - closed at the end of the block
    async with DurablePlatform.embedded(ttl=SWEPT) as platform:
        await platform.checkpointer.astart_sweeper()
        assert platform.checkpointer._async_sweepers  # noqa: SLF001
    assert not platform.checkpointer._async_sweepers  # noqa: SLF001
