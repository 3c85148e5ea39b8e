"""Every query on a hot path is served by a prefix of a declared index (``schema.INDEXES``) or by ``_id``.

A graph run through ``DurablePlatform`` (checkpointer ``get_tuple``/``list``/``put``/``put_writes``,
the DeltaChannel load, the journal's claim, record and replay, and the run lock),
sync and async, with pymongo command monitoring capturing each command's filter and sort on the wire
(mongomock emits no command events: this runs on the real-server tier). Neither local server shows a
collection scan by its speed; on MongoDB a query that no index prefix serves is what makes a step slow
as a collection grows to millions of documents.

A filter is served by an index when the filter pins a prefix of the index's keys (equality, ``$in`` or a
range), and each of its other fields is either a later key of that index, a field ``RESIDUAL`` declares,
or anything at all once the prefix is a whole unique key (a point lookup, such as a fenced update). A
sort is served when its keys, the pinned ones left out, are the index's next keys, all in the index's
direction or all reversed. ``$or`` is served when each branch, with the fields beside it, is.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langgraph.graph import START, StateGraph
from pymongo import AsyncMongoClient, MongoClient, monitoring

from langgraph_durable_mongodb.platform import DurablePlatform
from langgraph_durable_mongodb.storage.schema import CollectionNames, indexes_by_collection
from langgraph_durable_mongodb.views.reader import ThreadViews

from .clients import on_servers, tier_uri
from .graphs import Notes, three_effects


def in_child(builder: StateGraph) -> StateGraph:
    """``builder``'s graph as the compiled child of a root graph: its node's visit is keyed beneath the root-level
    one, and a resume reads the visit's entries."""
    root = StateGraph(Notes)
    root.add_node("child", builder.compile())
    root.add_edge(START, "child")
    return root

#: Fields a query may test beyond its index prefix, on the few documents the prefix finds: why each is bounded.
RESIDUAL = {
    # the DeltaChannel load reads the writes of a chain of checkpoints and keeps those of its channels
    ("checkpoint_writes", "channel"),
    # the thread list counts a page's finished journal entries and reads its unfinished ones, within the index
    # range of the page's threads
    ("activity_journal", "status"),
}
#: Queries whose sort is done in memory, on purpose: why each is bounded. (collection, fields, the fields among
#: them not matched by equality.)
SORTED_IN_MEMORY = {
    # list() without checkpoint_ns orders one thread's checkpoints of every namespace by id: bounded by the
    # thread (thread_id is pinned), and no LangGraph step lists across namespaces; the namespace is only kept
    # off the thread's summary ($ne "#thread", within the index's bounds)
    ("checkpoints", ("checkpoint_ns", "thread_id"), ("checkpoint_ns",)),
}
#: The commands that carry a filter, and where: (filter field, sort field) per command, or the list of updates.
FILTERS = {"find": ("filter", "sort"), "findAndModify": ("query", "sort"), "count": ("query", None)}
BATCHED = {"update": "updates", "delete": "deletes"}


class Captured(monitoring.CommandListener):
    """``(collection, filter, sort)`` of every command on one database that selects documents."""

    def __init__(self, db_name: str) -> None:
        self.db_name, self.queries = db_name, []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.database_name != self.db_name:
            return
        cmd, name = event.command, event.command_name
        if name in FILTERS:
            where, sort = FILTERS[name]
            self.queries.append((cmd[name], name, cmd.get(where) or {}, dict(cmd.get(sort) or {}) if sort else {}))
        elif name in BATCHED:
            for op in cmd.get(BATCHED[name], ()):
                self.queries.append((cmd[name], name, op["q"], {}))
        elif name == "aggregate" and (cmd.get("pipeline") or [{}])[0].get("$match") is not None:
            self.queries.append((cmd[name], name, cmd["pipeline"][0]["$match"], {}))  # its first stage selects
        elif name in ("aggregate", "distinct", "mapReduce"):
            self.queries.append((cmd[name], name, {"$unchecked": name}, {}))

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        pass


def declared_indexes() -> dict[str, list[tuple[list[tuple[str, int]], bool]]]:
    """``{collection: [(keys, unique)]}`` from the schema registry (with the TTL indexes: they exist too)."""
    return {
        coll: [(list(i.document["key"].items()), bool(i.document.get("unique"))) for i in models]
        for coll, models in indexes_by_collection(CollectionNames(), ttl=True).items()
    }


def _branches(query: dict) -> list[dict]:
    """The filter as a list of ``$or``-free conjunctions."""
    base = {k: v for k, v in query.items() if k != "$or"}
    if "$or" not in query:
        return [base]
    return [b for branch in query["$or"] for b in _branches({**base, **branch})]


def why_not_served(collection: str, query: dict, sort: dict, indexes: list[tuple[list[tuple[str, int]], bool]]) -> str | None:
    """None when an index (or ``_id``) serves the query and its sort, else why not."""
    if "$unchecked" in query:
        return f"an {query['$unchecked']} command: not checked here"
    for branch in _branches(query):
        fields = set(branch)
        if "_id" in fields:
            continue
        if any(f.startswith("$") for f in fields):
            return f"an operator {sorted(f for f in fields if f.startswith('$'))} at the top of a filter"
        reasons = []
        for keys, unique in indexes:
            names = [k for k, _ in keys]
            pinned = 0
            while pinned < len(names) and names[pinned] in fields:
                pinned += 1
            if pinned == 0:
                continue
            rest = fields - set(names[:pinned])
            point = unique and pinned == len(names)
            stray = {f for f in rest if f not in names[pinned:] and (collection, f) not in RESIDUAL}
            if stray and not point:
                reasons.append(f"{names}: {sorted(stray)} outside the prefix {names[:pinned]}")
                continue
            order = [(k, d) for k, d in sort.items() if not _equality(branch.get(k))]
            equal = 0
            while equal < pinned and _equality(branch[names[equal]]):
                equal += 1
            ahead = keys[equal : equal + len(order)]
            if order and not (
                [k for k, _ in order] == [k for k, _ in ahead]
                and len({d * a for (_, d), (_, a) in zip(order, ahead)}) == 1
            ):
                ranged = tuple(sorted(f for f in fields if not _equality(branch[f])))
                if (collection, tuple(sorted(fields)), ranged) in SORTED_IN_MEMORY:
                    break
                reasons.append(f"{names}: sort {order} is not the keys after {names[:pinned]}")
                continue
            break
        else:
            return f"no index serves {sorted(fields)}: " + ("; ".join(reasons) or "no index starts with one of them")
    return None


def _equality(value: Any) -> bool:
    return value is not None and not (isinstance(value, dict) and any(k.startswith("$") for k in value))


@pytest.fixture(params=on_servers("server"))
def captured(request: pytest.FixtureRequest) -> Any:
    """``(platform, listener)`` on a fresh database of the tier's server, indexes set up, capture empty."""
    uri, db_name = tier_uri(request), f"t_{uuid.uuid4().hex[:12]}"
    listener = Captured(db_name)
    client, async_client = MongoClient(uri, event_listeners=[listener]), AsyncMongoClient(uri, event_listeners=[listener])
    platform = DurablePlatform(client, async_client=async_client, db_name=db_name)
    platform.setup()
    listener.queries.clear()
    yield platform, listener
    client.drop_database(db_name)
    client.close()


def assert_served(listener: Captured) -> None:
    indexes = declared_indexes()
    checked = {(coll, name) for coll, name, _, _ in listener.queries}
    # the hot paths were all exercised: the capture is not vacuous
    assert {
        ("checkpoints", "find"), ("checkpoints", "update"), ("checkpoint_writes", "find"), ("checkpoint_writes", "update"),
        ("activity_journal", "find"), ("activity_journal", "findAndModify"), ("activity_journal", "update"),
        ("thread_runs", "find"),
    } <= checked, checked
    unserved = [
        (coll, name, query, sort, why)
        for coll, name, query, sort in listener.queries
        if (why := why_not_served(coll, query, sort, indexes.get(coll, []))) is not None
    ]
    assert unserved == []


def test_every_hot_path_query_is_served_by_a_declared_index(captured: Any) -> None:
    platform, listener = captured
    platform.compile(three_effects(at_most_once=True)).invoke({"notes": []}, {"configurable": {"thread_id": "claims"}})
    graph = platform.compile(in_child(three_effects(fail_once=[True])))
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ConnectionError):
        graph.invoke({"notes": []}, config)
    graph.invoke(None, config)  # the resume replays the node's journal entries
    graph.invoke({"notes": ["more"]}, config)
    history = list(graph.get_state_history(config))
    saver = platform.checkpointer
    saver.get_tuple(history[-1].config)
    list(saver.list(config, limit=2))
    list(saver.list({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, before=history[0].config))
    saver.get_delta_channel_history(config=history[0].config, channels=["notes"])
    assert_served(listener)


async def test_async_every_hot_path_query_is_served_by_a_declared_index(captured: Any) -> None:
    platform, listener = captured
    await platform.asetup()
    listener.queries.clear()
    await platform.compile(three_effects(at_most_once=True)).ainvoke({"notes": []}, {"configurable": {"thread_id": "claims"}})
    graph = platform.compile(in_child(three_effects(fail_once=[True])))
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ConnectionError):
        await graph.ainvoke({"notes": []}, config)
    await graph.ainvoke(None, config)
    await graph.ainvoke({"notes": ["more"]}, config)
    history = [s async for s in graph.aget_state_history(config)]
    saver = platform.checkpointer
    await saver.aget_tuple(history[-1].config)
    [t async for t in saver.alist(config, limit=2)]
    await saver.aget_delta_channel_history(config=history[0].config, channels=["notes"])
    assert_served(listener)


def test_the_check_refuses_a_query_no_index_serves() -> None:
    indexes = declared_indexes()
    assert why_not_served("checkpoints", {"thread_id": "t", "checkpoint_ns": ""}, {"checkpoint_id": -1}, indexes["checkpoints"]) is None
    assert why_not_served("checkpoints", {"checkpoint_ns": ""}, {}, indexes["checkpoints"]) is not None
    assert why_not_served("checkpoints", {"thread_id": "t", "checkpoint_ns": ""}, {"ts": -1}, indexes["checkpoints"]) is not None
    assert why_not_served("checkpoint_writes", {"thread_id": "t", "task_path": "x"}, {}, indexes["checkpoint_writes"]) is not None
    assert why_not_served("checkpoints", {"_id": {"$in": ["a"]}}, {}, []) is None


def test_both_thread_lists_are_paged_on_an_index(captured: Any) -> None:
    """The web inspector's page and the CLI's: each query is served by an index (the thread summaries' by the
    checkpoints' key index: the id range, then the namespace), whatever the page."""
    platform, listener = captured
    graph = platform.compile(three_effects(at_most_once=True))
    for thread_id in ("a1", "a2", "b1"):
        graph.invoke({"notes": []}, {"configurable": {"thread_id": thread_id}})
    listener.queries.clear()
    client, db_name = platform.checkpointer.client, platform.checkpointer.db_name
    views = ThreadViews(client, db_name, CollectionNames())
    assert [row["thread_id"] for row in views.threads(prefix="a", limit=1)["threads"]] == ["a1"]
    assert [row["thread_id"] for row in views.threads(after="a1")["threads"]] == ["a2", "b1"]
    assert [row["thread_id"] for row in views.threads(after="a2", limit=5)["threads"]] == ["b1"]
    indexes = declared_indexes()
    assert ("checkpoints", "find") in {(coll, name) for coll, name, _, _ in listener.queries}
    unserved = [(coll, query, sort, why) for coll, _, query, sort in listener.queries
                if (why := why_not_served(coll, query, sort, indexes.get(coll, []))) is not None]
    assert unserved == []
