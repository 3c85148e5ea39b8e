"""Real LangGraph runs on the checkpointer, compared with LangGraph's own InMemorySaver."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from langgraph_durable_mongodb import ClientConfigurationError, DeltaChainError, MongoDBCheckpointer
from langgraph_durable_mongodb.storage.plans.requests import Find, Gather

from .checkpoints import cfg, put
from .clients import Face
from .graphs import Log, append_writes, chat_graph, nested_graph, run_chat


def _strip(value: Any) -> Any:
    """Interrupt ids hash checkpoint ids, which differ between savers."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "__interrupt__"}
    return value


async def scenario(saver: Any, is_async: bool) -> list:
    graph = nested_graph().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t1"}}

    async def call(name: str, *args: Any, **kwargs: Any) -> Any:
        if is_async:
            return await getattr(graph, "a" + name)(*args, **kwargs)
        return getattr(graph, name)(*args, **kwargs)

    async def history(cfg: dict) -> list:
        if is_async:
            return [s async for s in graph.aget_state_history(cfg)]
        return list(graph.get_state_history(cfg))

    out: list = [_strip(await call("invoke", {"log": [], "n": 0}, config))]
    state = await call("get_state", config, subgraphs=True)
    sub = state.tasks[0].state
    out.append((state.next, [i.value for t in state.tasks for i in t.interrupts], sub.next, sub.values))
    out.append(_strip(await call("invoke", Command(resume="yes"), config)))
    states = await history(config)
    out.append([(s.next, s.metadata["step"], s.metadata["source"], s.values) for s in states])
    fork = await call("update_state", states[-2].config, {"log": ["forked"]})
    out.append((await call("get_state", fork)).values)
    out.append(_strip(await call("invoke", None, fork)))
    out.append(len(await history(config)))
    return out


async def test_nested_graph_with_interrupt_matches_inmemory_saver(face: Face) -> None:
    expected = await scenario(InMemorySaver(), face.is_async)
    assert await scenario(face.saver, face.is_async) == expected
    namespaces = {d["checkpoint_ns"].split(":")[0] for d in await face.raw("checkpoints")}
    assert namespaces == {"", "middle", "middle|inner"} or namespaces == {"", "middle"}


def count_requests(face: Face) -> list:
    requests: list = []
    io = face.saver._async_io if face.is_async else face.saver._sync_io
    original = io.execute

    def counted(request: Any) -> Any:
        if not isinstance(request, Gather):  # a Gather's requests come through here one by one
            requests.append(request)
        return original(request)

    io.execute = counted
    return requests


async def test_delta_channel_history_is_bounded_and_matches_inmemory(face: Face) -> None:
    _, expected = await run_chat(InMemorySaver(), face.is_async, 30)
    _, got = await run_chat(face.saver, face.is_async, 30)
    assert got == expected and len(got) == 60
    requests = count_requests(face)
    config = {"configurable": {"thread_id": "chat", "checkpoint_ns": ""}}
    latest = await face.call("get_tuple", config)
    history = await face.call("get_delta_channel_history", config=config, channels=["messages"])
    # loading the state (what invoke reads) stays within 6 queries, whatever the history length
    assert len(requests) <= 6
    seed = history["messages"].get("seed")
    assert seed is not None  # snapshot_frequency=7: the chain ends at a stored snapshot
    rebuilt = append_writes(seed.value, [w[2] for w in history["messages"]["writes"]])
    assert append_writes(rebuilt, [w[2] for w in latest.pending_writes if w[1] == "messages"]) == expected or rebuilt == expected


async def test_delta_channel_history_reads_the_older_pages_of_a_chain_longer_than_the_first(
    face: Face, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_durable_mongodb.checkpointer import store as base

    monkeypatch.setattr(base, "FIRST_CHAIN_PAGE", 2)  # the target and its parent: the seed is further up
    _, expected = await run_chat(InMemorySaver(), face.is_async, 12)
    _, got = await run_chat(face.saver, face.is_async, 12)
    assert got == expected
    requests = count_requests(face)
    config = {"configurable": {"thread_id": "chat", "checkpoint_ns": ""}}
    history = await face.call("get_delta_channel_history", config=config, channels=["messages"])
    pages = [r for r in requests if isinstance(r, Find) and r.projection == base.CHAIN_FIELDS]
    assert [p.limit for p in pages][:1] == [2] and len(pages) > 1  # an older page was read
    assert history["messages"].get("seed") is not None  # snapshot_frequency=7: found up the chain


async def test_prune_keeps_what_a_delta_channel_replays(face: Face) -> None:
    graph, expected = await run_chat(face.saver, face.is_async, 12)
    before = len(await face.raw("checkpoints"))
    await face.call("prune", ["chat"])
    after = len(await face.raw("checkpoints"))
    assert after < before
    config = {"configurable": {"thread_id": "chat"}}
    state = await graph.aget_state(config) if face.is_async else graph.get_state(config)
    assert state.values["messages"] == expected


async def test_delete_for_runs_refuses_to_cut_a_delta_chain(face: Face) -> None:
    graph = chat_graph().compile(checkpointer=face.saver)
    for turn, run_id in enumerate(["00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002"]):
        config = {"configurable": {"thread_id": "chat"}, "metadata": {"run_id": run_id}}
        if face.is_async:
            await graph.ainvoke({"messages": [f"user {turn}"]}, config)
        else:
            graph.invoke({"messages": [f"user {turn}"]}, config)
    stored = await face.raw("checkpoints")
    runs = {d["metadata"].get("run_id") for d in stored}
    assert "00000000-0000-0000-0000-000000000001" in runs
    with pytest.raises(DeltaChainError, match="delete_thread"):
        await face.call("delete_for_runs", ["00000000-0000-0000-0000-000000000001"])
    assert len(await face.raw("checkpoints")) == len(stored)
    await face.call("delete_for_runs", ["00000000-0000-0000-0000-000000000002"])
    remaining = await face.raw("checkpoints")
    assert remaining and all(d["metadata"].get("run_id") == "00000000-0000-0000-0000-000000000001" for d in remaining)


async def test_ttl_expires_a_thread_as_a_whole(face: Face) -> None:
    # No TTL index here (auto_setup=False): mongomock enforces TTL indexes on
    # read and MongoDB within a minute, and this test is about what readers and
    # sweep_expired() do before that, or on servers without TTL (FerretDB).
    saver = MongoDBCheckpointer(
        face.saver.client or face.saver.async_client, db_name=face.saver.db_name, ttl=3600, auto_setup=False
    )
    ttl_face = Face(saver, face.kind, face.db)
    graph = nested_graph().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "ttl"}}
    if face.is_async:
        await graph.ainvoke({"log": [], "n": 0}, config)
    else:
        graph.invoke({"log": [], "n": 0}, config)
    expiries = set()
    for coll in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
        docs = await ttl_face.raw(coll, {"thread_id": "ttl"})
        expiries |= {d["expire_at"] for d in docs}
    assert len(expiries) == 1
    [expiry] = expiries
    # the end of the write's bucket (ttl/10 = 6 minutes) plus ttl: between 60 and 66 minutes from now
    assert timedelta(minutes=59) < expiry - datetime.utcnow() <= timedelta(minutes=66)
    # push the whole thread past its expiry: readers see it gone at once, the sweep removes it
    past = datetime.utcnow() - timedelta(seconds=1)
    for coll in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
        result = face.db[coll].update_many({"thread_id": "ttl"}, {"$set": {"expire_at": past}})
        if face.is_async:
            await result
    assert await ttl_face.call("get_tuple", config) is None
    assert await ttl_face.list(config) == []
    assert await ttl_face.call("sweep_expired") == ["ttl"]
    for coll in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
        assert await ttl_face.raw(coll) == []


async def test_encrypted_serializer_encrypts_values_and_writes_at_rest(face: Face) -> None:
    serde = EncryptedSerializer.from_pycryptodome_aes(key=b"0123456789abcdef")
    saver = MongoDBCheckpointer(face.saver.client or face.saver.async_client, db_name=face.saver.db_name, serde=serde)
    graph = nested_graph().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "secret"}}
    payload = {"log": ["card 4111-1111-1111-1111" * 40], "n": 0}
    if face.is_async:
        await graph.ainvoke(payload, config)
        state = await graph.aget_state(config)
    else:
        graph.invoke(payload, config)
        state = graph.get_state(config)
    assert state.values["log"][0] == payload["log"][0]
    raw = b""
    for coll in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
        for doc in await face.raw(coll):
            raw += repr(doc).encode()
    assert b"4111-1111" not in raw
    assert b"aes" in raw  # the serde type names the cipher


async def test_missing_client_kind_gives_a_clear_error(face: Face) -> None:
    if face.is_async:
        with pytest.raises(ClientConfigurationError, match="client=MongoClient"):
            face.saver.get_tuple({"configurable": {"thread_id": "t"}})
    else:
        with pytest.raises(ClientConfigurationError, match="async_client=AsyncMongoClient"):
            await face.saver.aget_tuple({"configurable": {"thread_id": "t"}})


Dotted = TypedDict("Dotted", {"price.usd": int, "$meta": str})


async def test_channel_and_node_names_with_dots_and_dollars(face: Face) -> None:
    g = StateGraph(Dotted)
    g.add_node("step.v1", lambda s: {"price.usd": s["price.usd"] + 1, "$meta": "seen"})
    g.add_node("$final", lambda s: {"price.usd": s["price.usd"] * 10})
    g.add_edge(START, "step.v1")
    g.add_edge("step.v1", "$final")
    graph = g.compile(checkpointer=face.saver)
    config = {"configurable": {"thread_id": "names", "user.id": "u1"}}
    if face.is_async:
        result = await graph.ainvoke({"price.usd": 1, "$meta": ""}, config)
        history = [s async for s in graph.aget_state_history(config)]
    else:
        result = graph.invoke({"price.usd": 1, "$meta": ""}, config)
        history = list(graph.get_state_history(config))
    assert result == {"price.usd": 20, "$meta": "seen"}
    assert [s.values.get("price.usd") for s in history] == [20, 2, 1, None]
    assert history[0].metadata["user.id"] == "u1"
    assert await face.list(config, filter={"user.id": "u1"})
    for doc in await face.raw("checkpoints"):
        assert all("." not in k and not k.startswith("$") for k in doc["metadata"])


def _worker_graph() -> StateGraph:
    g = StateGraph(Log)
    g.add_node("step", lambda s: {"log": ["x" * 600], "n": s["n"] + 1})  # > 512 bytes: a blob per step
    g.add_edge(START, "step")
    return g


async def _expiries(face: Face, thread_id: str) -> dict[tuple[str, Any], datetime | None]:
    """``expire_at`` of every document of the thread, by collection and ``_id``, as stored."""
    out = {}
    for coll in face.saver.collections.per_thread:
        cursor = face.db[coll].find({"thread_id": thread_id}, {"expire_at": 1})
        for doc in await cursor.to_list(None) if face.is_async else list(cursor):
            out[(coll, doc["_id"])] = doc.get("expire_at")
    return out


async def test_ttl_two_workers_keep_one_expiry_that_only_moves_forward(face: Face, monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers A, B, A (two savers on one database stand for two processes; A's clock lags B's by a
    third of a bucket): after each run every document of the thread, the journal's too, carries one
    expiry, the highest stamped so far, and no document's expiry ever went down."""
    from langgraph_durable_mongodb.storage.plans import lease as _clock
    from langgraph_durable_mongodb.journal import ActivityJournal, EffectCall, EffectPosition

    ttl, epoch = 3600, datetime(1970, 1, 1)
    bucket = timedelta(seconds=ttl / 10)
    start = epoch + (_clock.utcnow() - epoch) // bucket * bucket + bucket / 10  # early in a bucket
    clock = [start]
    monkeypatch.setattr(_clock, "utcnow", lambda: clock[0])
    client = face.saver.client or face.saver.async_client

    def worker() -> tuple[Any, ActivityJournal]:
        saver = MongoDBCheckpointer(client, db_name=face.saver.db_name, ttl=ttl, auto_setup=False)
        saver.inline_value_bytes = 0  # values in blobs too: every collection carries the one expiry
        return _worker_graph().compile(checkpointer=saver), ActivityJournal.for_checkpointer(saver)

    workers = {"A": worker(), "B": worker()}
    config = {"configurable": {"thread_id": "shared"}}
    runs = [("A", start), ("B", start + 2 * bucket), ("A", start + 2 * bucket - bucket / 3), ("A", start + 4 * bucket)]
    seen: dict[tuple[str, Any], datetime | None] = {}
    for number, (name, now) in enumerate(runs):
        clock[0] = now
        graph, journal = workers[name]
        position = EffectPosition("shared", "agent/1", "step", str(number), "1")
        call = EffectCall("tool", "search", input={"run": number})
        if face.is_async:
            await graph.ainvoke({"log": [], "n": 0}, config)
            await journal.arun(call, lambda: "sunny", position=position)
            await graph.ainvoke({"log": []}, config)
        else:
            graph.invoke({"log": [], "n": 0}, config)
            journal.run(call, lambda: "sunny", position=position)
            graph.invoke({"log": []}, config)
        stored = await _expiries(face, "shared")
        assert {coll for coll, _ in stored} >= {"checkpoints", "checkpoint_blobs", "checkpoint_writes", "activity_journal"}
        expiries = set(stored.values())
        assert len(expiries) == 1, (name, sorted(map(str, expiries)))
        [expiry] = expiries
        assert expiry == max(v for v in [*seen.values(), expiry] if v is not None)
        assert expiry >= now + timedelta(seconds=ttl)  # a thread lives at least ttl after its last write
        assert all(stored[key] >= was for key, was in seen.items() if key in stored), "an expiry went down"
        seen.update(stored)
    # A's lagging run kept B's later expiry; A's last run, two buckets on, moved everything forward.
    assert expiry == start - bucket / 10 + 5 * bucket + timedelta(seconds=ttl)
    # B resumes two buckets later and dies after its node's effect was journaled, before anything was
    # checkpointed: the entry carries the thread's expiry, not a later one that nothing would spread.
    clock[0] = start + 6 * bucket
    graph, journal = workers["B"]
    position = EffectPosition("shared", "agent/1", "step", "crashed", "1")
    if face.is_async:
        await graph.aget_state(config)
        await journal.arun(EffectCall("tool", "search"), lambda: "sunny", position=position)
    else:
        graph.get_state(config)
        journal.run(EffectCall("tool", "search"), lambda: "sunny", position=position)
    assert set((await _expiries(face, "shared")).values()) == {expiry}


async def test_ttl_a_worker_that_did_not_read_the_thread_never_lowers_its_expiry(
    face: Face, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B writes; A, whose clock lags into the previous bucket, writes without reading first: B's documents
    keep their later expiry (A's new ones carry A's until A's next renewal), and A's next bucket joins them."""
    from langgraph_durable_mongodb.storage.plans import lease as _clock

    ttl, epoch = 3600, datetime(1970, 1, 1)
    bucket = timedelta(seconds=ttl / 10)
    start = epoch + (_clock.utcnow() - epoch) // bucket * bucket + bucket / 10
    clock = [start]
    monkeypatch.setattr(_clock, "utcnow", lambda: clock[0])
    client = face.saver.client or face.saver.async_client
    a, b = (Face(MongoDBCheckpointer(client, db_name=face.saver.db_name, ttl=ttl, auto_setup=False), face.kind, face.db) for _ in "ab")
    later = start - bucket / 10 + bucket + timedelta(seconds=ttl)  # the end of start's bucket, plus ttl
    saved, _ = await put(b, cfg("shared"), {"big": ["b"] * 300})
    by_b = await _expiries(face, "shared")
    assert set(by_b.values()) == {later}
    clock[0] = start - bucket / 3  # A's clock lags into the previous bucket
    await a.call("put_writes", saved, [("w", "from a")], "task-a")
    stored = await _expiries(face, "shared")
    assert {stored[key] for key in by_b} == {later}  # not lowered
    assert {v for key, v in stored.items() if key not in by_b} == {later - bucket}
    clock[0] = start + bucket * 2 / 3  # A's next bucket is B's
    await a.call("put_writes", saved, [("w", "again")], "task-a2")
    assert set((await _expiries(face, "shared")).values()) == {later}
