"""What is put comes back exactly, or is refused before anything is written (issue 34).

Metadata stays native BSON where BSON gives back what was put (a filter is then a server-side query on it); a
value BSON would change goes through the serde, and a filter on it is encoded the same way. The cases of
``langgraph-checkpoint-mongodb``'s own tests of ``MongoDBSaver`` (``tests/unit_tests/test_sync.py``,
``test_async.py``, ``test_serde.py``, their ``input_data``) run here against our saver, on every client kind:
mongomock and mongomock_motor, and pymongo, ``AsyncMongoClient`` and motor on both servers of the tier.
"""

from __future__ import annotations

import re
import uuid
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointMetadata, create_checkpoint, empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph_durable_mongodb import InvalidInputError, MongoDBCheckpointer
from langgraph_durable_mongodb.checkpointer.documents import SERDE_DATA, SERDE_TYPE

from .clients import Face

# -- MongoDBSaver's cases ----------------------------------------------------------------------------------------


@pytest.fixture
def input_data() -> dict[str, Any]:
    """``MongoDBSaver``'s ``input_data`` fixture (its unit tests' conftest), as it is."""
    chkpnt_1 = empty_checkpoint()
    return {
        "config_1": RunnableConfig(configurable={"thread_id": "thread-1", "checkpoint_ns": ""}),
        "config_2": RunnableConfig(configurable={"thread_id": "thread-2", "checkpoint_id": "2", "checkpoint_ns": ""}),
        "config_3": RunnableConfig(configurable={"thread_id": "thread-2", "checkpoint_id": "2-inner", "checkpoint_ns": "inner"}),
        "chkpnt_1": chkpnt_1,
        "chkpnt_2": create_checkpoint(chkpnt_1, {}, 1),
        "chkpnt_3": empty_checkpoint(),
        "metadata_1": CheckpointMetadata(source="input", step=2, writes={}, score=1),  # type: ignore[typeddict-unknown-key]
        "metadata_2": CheckpointMetadata(source="loop", step=1, writes={"foo": "bar"}, score=None),  # type: ignore[typeddict-unknown-key]
        "metadata_3": CheckpointMetadata(),
    }


async def put_three(face: Face, input_data: dict[str, Any]) -> None:
    for n in (1, 2, 3):
        await face.call("put", input_data[f"config_{n}"], input_data[f"chkpnt_{n}"], input_data[f"metadata_{n}"], {})


async def test_search(face: Face, input_data: dict[str, Any]) -> None:
    """``test_search`` / ``test_asearch``: by one key, by several (one nested), by none, matching nothing, by config."""
    await put_three(face, input_data)
    found = await face.list(None, filter={"source": "input"})
    assert [t.metadata for t in found] == [input_data["metadata_1"]]
    found = await face.list(None, filter={"step": 1, "writes": {"foo": "bar"}})
    assert [t.metadata for t in found] == [input_data["metadata_2"]]
    assert len(await face.list(None, filter={})) == 3
    assert await face.list(None, filter={"source": "update", "step": 1}) == []
    found = await face.list({"configurable": {"thread_id": "thread-2"}})
    assert {t.config["configurable"]["checkpoint_ns"] for t in found} == {"", "inner"}


async def test_list_filter_normal_behavior(face: Face, input_data: dict[str, Any]) -> None:
    await put_three(face, input_data)
    assert len(await face.list(None, filter={})) == 3
    assert [t.metadata["source"] for t in await face.list(None, filter={"source": "input"})] == ["input"]
    assert [t.metadata["step"] for t in await face.list(None, filter={"step": 1})] == [1]
    assert len(await face.list(None, filter={"source": "loop", "step": 1})) == 1
    assert await face.list(None, filter={"source": "update", "step": 1}) == []
    assert [t.metadata["writes"] for t in await face.list(None, filter={"writes": {"foo": "bar"}})] == [{"foo": "bar"}]


@pytest.mark.parametrize(
    "query",
    [
        {"user_id": {"$exists": True}}, {"user_id": {"$ne": "alice"}}, {"step": {"$gt": 0}},
        {"user_id": {"$in": ["alice", "bob"]}}, {"status": {"$regex": ".*"}}, {"$where": "1==1"},
        {"$or": [{"source": "loop"}]},
    ],
)
async def test_list_rejects_mql_operator_keys(face: Face, query: dict[str, Any]) -> None:
    """``MongoDBSaver`` raises ``ValueError``; ours a ``ValueError`` too (``InvalidInputError``), before any query."""
    with pytest.raises(ValueError, match="operators are not accepted in filters"):
        await face.list(None, filter=query)


async def test_null_chars(face: Face, input_data: dict[str, Any]) -> None:
    """A NUL in a value is stripped by LangGraph's ``get_checkpoint_metadata``. In a key, ``MongoDBSaver`` raises
    ``InvalidDocument``; ours escapes it, and the key comes back as it was put."""
    saved = await face.call("put", input_data["config_1"], input_data["chkpnt_1"], {"my_key": "\x00abc"}, {})
    assert (await face.call("get_tuple", saved)).metadata["my_key"] == "abc"
    assert [t.metadata["my_key"] for t in await face.list(None, filter={"my_key": "abc"})] == ["abc"]
    saved = await face.call("put", input_data["config_1"], empty_checkpoint(), {"\x00abc": "my_value"}, {})
    assert (await face.call("get_tuple", saved)).metadata["\x00abc"] == "my_value"


async def test_nested_filter(face: Face) -> None:
    """A message in the metadata is stored, filtered on and given back (``MongoDBSaver`` stores it through the
    serde). Its filter ``{"writes.message": ...}`` names a path; ours never takes a key for a path, so the same
    filter is ``{"writes": {"message": ...}}``. Its checkpoint's ``channel_values`` is the message itself, not a
    dict of channels: ours refuses it (``test_a_malformed_checkpoint_is_refused_naming_the_field``)."""
    message = HumanMessage(content="MongoDB is awesome!")
    config = RunnableConfig(configurable={"thread_id": "thread-3", "checkpoint_id": "1", "checkpoint_ns": ""})
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": message}
    checkpoint["channel_versions"] = {"messages": face.saver.get_next_version(None, None)}
    await face.call("put", config, checkpoint, CheckpointMetadata(source="loop", step=1, writes={"message": message}), {})
    [found] = await face.list(None, filter={"writes": {"message": message}})
    assert found.metadata["writes"]["message"] == message and found.checkpoint["channel_values"]["messages"] == message
    assert await face.list(None, filter={"writes.message": message}) == []
    [doc] = await face.raw("checkpoints", {"thread_id": "thread-3"})
    stored = doc["metadata"]["writes"]["message"]
    assert set(stored) == {SERDE_TYPE, SERDE_DATA} and stored[SERDE_TYPE] == "msgpack" and isinstance(stored[SERDE_DATA], bytes)


class CountingSerializer(JsonPlusSerializer):
    def __init__(self) -> None:
        super().__init__()
        self.dumps_called = self.loads_called = False

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        self.dumps_called = True
        return super().dumps_typed(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        self.loads_called = True
        return super().loads_typed(data)


async def test_custom_serde(face: Face, input_data: dict[str, Any]) -> None:
    serde = CountingSerializer()
    face.saver = MongoDBCheckpointer(face.saver.client, async_client=face.saver.async_client, db_name=face.saver.db_name, serde=serde)
    saved = await face.call("put", input_data["config_1"], input_data["chkpnt_1"], input_data["metadata_1"], {})
    assert serde.dumps_called
    found = await face.call("get_tuple", saved)
    assert serde.loads_called
    assert found.checkpoint == input_data["chkpnt_1"] and found.metadata == input_data["metadata_1"]


# -- exactly as put ----------------------------------------------------------------------------------------------

AWARE = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=timezone(timedelta(hours=2)))
#: Values BSON would change (and the serde keeps), beside values it keeps.
EXACT: dict[str, Any] = {
    "aware": AWARE,
    "naive": datetime(2024, 5, 6, 7, 8, 9, 123456),
    "tags": {"b", "a"},
    "frozen": frozenset({1}),
    "message": HumanMessage(content="hi", id="m1"),
    "amount": Decimal("12.30"),
    "ref": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "day": date(2024, 1, 2),
    "numbered": {1: "one"},
    "nested": {"when": AWARE, "items": [AWARE, 1, "x"], "a.b$c": {"d%e": 1}},
    "big": 2**62,
    "bytes": b"\x00\x01",
    "none": None,
    "ratio": 1.5,
    "flag": True,
    "source": "loop",
    "step": 3,
}


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (``==`` takes 1 for True, and a naive for an aware time)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, (set, frozenset)):
        # A set's repr follows its hash table, which depends on PYTHONHASHSEED and on how it was built: compare the
        # members' reprs as sorted lists, so equal members of one type stay the test, and the order does not.
        return a == b and sorted(map(repr, a)) == sorted(map(repr, b))
    return a == b and repr(a) == repr(b)


def config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


async def test_metadata_comes_back_exactly_as_it_was_put(face: Face) -> None:
    """Issue 34: an aware datetime came back naive and cut to milliseconds, a set was refused, a message raised
    ``InvalidDocument``."""
    saved = await face.call("put", config("t"), empty_checkpoint(), EXACT, {})
    got = (await face.call("get_tuple", saved)).metadata
    assert same(got, EXACT), {k: (got.get(k), v) for k, v in EXACT.items() if not same(got.get(k), v)}
    [listed] = await face.list(config("t"))
    assert same(listed.metadata, EXACT)


async def test_metadata_stays_native_where_bson_keeps_it(face: Face) -> None:
    await face.call("put", config("t"), empty_checkpoint(), EXACT, {})
    [doc] = await face.raw("checkpoints", {"thread_id": "t"})
    stored = doc["metadata"]
    assert (stored["source"], stored["step"], stored["ratio"], stored["flag"], stored["none"], stored["big"]) == ("loop", 3, 1.5, True, None, 2**62)
    assert stored["nested"]["items"][1:] == [1, "x"] and stored["nested"]["a%2Eb%24c"] == {"d%25e": 1}
    serde_stored = {k for k, v in stored.items() if isinstance(v, dict) and set(v) == {SERDE_TYPE, SERDE_DATA}}
    assert serde_stored == {"aware", "naive", "tags", "frozen", "message", "amount", "ref", "day", "numbered"}
    assert set(stored["nested"]["when"]) == {SERDE_TYPE, SERDE_DATA}


@pytest.mark.parametrize(
    "query",
    [
        {"aware": AWARE}, {"tags": {"a", "b"}}, {"message": HumanMessage(content="hi", id="m1")}, {"amount": Decimal("12.30")},
        {"nested": {"when": AWARE}}, {"nested": {"items": [AWARE]}}, {"numbered": {1: "one"}}, {"day": date(2024, 1, 2)},
    ],
    ids=["aware", "set", "message", "decimal", "nested", "in a list", "int keys", "date"],
)
async def test_a_filter_on_a_value_bson_would_change_matches_it(face: Face, query: dict[str, Any]) -> None:
    await face.call("put", config("t"), empty_checkpoint(), EXACT, {})
    await face.call("put", config("other"), empty_checkpoint(), {**EXACT, "aware": AWARE + timedelta(microseconds=1),
                    "tags": {"c"}, "message": HumanMessage(content="bye"), "amount": Decimal("12.3"), "numbered": {2: "two"},
                    "day": date(2024, 1, 3), "nested": {"when": AWARE - timedelta(hours=1), "items": []}}, {})
    found = await face.list(None, filter=query)
    assert [t.config["configurable"]["thread_id"] for t in found] == ["t"]


async def test_a_malformed_checkpoint_is_refused_naming_the_field(face: Face) -> None:
    """Issue 34: ``channel_values`` a message raised ``AttributeError`` from ``checkpointer/documents.py``."""
    cases = {
        "checkpoint['channel_values']": {**empty_checkpoint(), "channel_values": HumanMessage(content="hi")},
        "checkpoint['channel_versions']": {**empty_checkpoint(), "channel_versions": ["a"]},
        "checkpoint must": "not a checkpoint",
    }
    for field, checkpoint in cases.items():
        with pytest.raises(InvalidInputError, match=f"{re.escape(field)}.*nothing was written"):
            await face.call("put", config("t"), checkpoint, {}, {})
    for field, args in {"metadata must": ({**empty_checkpoint()}, ["x"], {}), "new_versions must": ({**empty_checkpoint()}, {}, ["v"])}.items():
        with pytest.raises(InvalidInputError, match=field):
            await face.call("put", config("t"), *args)
    with pytest.raises(InvalidInputError, match=r"keyed by channel name"):
        await face.call("put", config("t"), {**empty_checkpoint(), "channel_values": {1: "x"}}, {}, {})
    with pytest.raises(InvalidInputError, match=r"holds no version of channel 'x'"):
        await face.call("put", config("t"), {**empty_checkpoint(), "channel_values": {"x": 1}}, {}, {})
    assert await face.raw("checkpoints") == []


@pytest.mark.parametrize("value", [object(), 2**70], ids=["an object", "a 70-bit int"])
async def test_metadata_the_serde_cannot_write_is_refused_before_anything_is_written(face: Face, value: Any) -> None:
    with pytest.raises(InvalidInputError, match=r"metadata\['outer.inner\[1\]'\] is a .* the serde cannot write.*nothing was written"):
        await face.call("put", config("t"), empty_checkpoint(), {"outer": {"inner": [1, value]}}, {})
    with pytest.raises(InvalidInputError, match="the serde cannot write"):
        await face.list(None, filter={"outer": value})
    assert await face.raw("checkpoints") == [] and await face.raw("checkpoints", {"checkpoint_ns": "#thread"}) == []


async def test_a_filter_on_a_set_matches_it_whatever_order_either_was_built_in(face: Face) -> None:
    """0 and 8 share a slot of a small set: added in two orders, two equal sets iterate apart, and the serde wrote
    them as two byte strings, so the filter missed (one process in eight, by its hash seed, for strings)."""
    await face.call("put", config("t"), empty_checkpoint(), {"ids": {0} | {8}, "frozen": frozenset({0}) | frozenset({8})}, {})
    await face.call("put", config("other"), empty_checkpoint(), {"ids": {0}, "frozen": frozenset({8})}, {})
    for query in ({"ids": {8} | {0}}, {"frozen": frozenset({8}) | frozenset({0})}):
        assert list(next(iter(query.values()))) == [8, 0]  # built apart from the stored one
        found = await face.list(None, filter=query)
        assert [t.config["configurable"]["thread_id"] for t in found] == ["t"]
    [loaded] = [t for t in await face.list(config("t"))]
    assert loaded.metadata["ids"] == {0, 8} and type(loaded.metadata["frozen"]) is frozenset
