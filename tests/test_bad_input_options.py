"""Bad options and arguments of the storage classes: a typed error naming the fix, before any query."""

from __future__ import annotations

import mongomock
import pytest
from mongomock_motor import AsyncMongoMockClient

from langgraph_durable_mongodb import ActivityJournal, InvalidInputError
from langgraph_durable_mongodb.run_lock import RunLocks


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
