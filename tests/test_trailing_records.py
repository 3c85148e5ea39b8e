"""A journal record trails its effect: the node goes on while the record is written, in order.

Under the platform, a value an effect returned is recorded in the background (issue 20: only the journal's
records cost round trips, and not on the node's path). What must hold, in both forms (sync, async):

- the task's next effect starts only once the record of the one before it is written;
- the node's writes are saved only after its records, so ``invoke`` returns with every record stored;
- a ``RetryPolicy`` retry meets the records of the attempt before it;
- a record another worker beat raises ``EffectRecordLostError`` instead of letting the node's writes be saved
  from an outcome the journal does not hold;
- a run that follows one that did not end cleanly reads the entries of occurrences it numbers as new, where
  that run's records may reach beyond its stored checkpoints.

Records are slowed (a ``Sleep`` before each) so that an effect or a write that did not wait would be seen.
"""

from __future__ import annotations

import asyncio
import time
import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from pymongo.errors import AutoReconnect
from langgraph.graph import START, StateGraph
from langgraph.types import RetryPolicy

from langgraph_durable_mongodb import ActivityJournal, EffectRecordLostError
from langgraph_durable_mongodb.journal import current_effect, effect
from langgraph_durable_mongodb.journal.documents import EffectCall

from .journal_helpers import Counter
from .command_faults import CommandFault, injected, nth_of
from .records import SLOW, completed, slow_records, watch_writes, writes_after_a_failed_save

MODES = ["sync", "async"]


class State(TypedDict, total=False):
    notes: Annotated[list, operator.add]


def run(graph: Any, inputs: Any, config: dict[str, Any], mode: str) -> Any:
    return graph.invoke(inputs, config) if mode == "sync" else asyncio.run(graph.ainvoke(inputs, config))


def effect_of(name: str, mode: str, body: Any) -> Any:
    """An ``@effect`` named ``name`` running ``body()``, sync or async."""
    if mode == "sync":

        @effect(kind="tool", name=name)
        def sync_fn() -> Any:
            return body()

        return sync_fn

    @effect(kind="tool", name=name)
    async def async_fn() -> Any:
        return body()

    return async_fn


def node_of(mode: str, steps: Any) -> Any:
    """A node calling ``steps()``'s effects one after another, sync or async."""
    if mode == "sync":

        def node(state: State) -> State:
            return {"notes": [fn() for fn in steps()]}

        return node

    async def anode(state: State) -> State:
        return {"notes": [await fn() for fn in steps()]}

    return anode


@pytest.mark.parametrize("mode", MODES)
def test_an_effect_starts_once_the_record_before_it_is_written(platform: Any, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    platform.setup()
    slow_records(platform.journal, monkeypatch)
    thread = f"t-{uuid.uuid4().hex[:8]}"
    writes = watch_writes(platform, thread, monkeypatch)
    seen: list[list[str]] = []
    first = effect_of("first", mode, lambda: "one")
    second = effect_of("second", mode, lambda: seen.append(completed(platform.journal, thread)) or "two")
    graph = StateGraph(State)
    graph.add_node("work", node_of(mode, lambda: [first, second]))
    graph.add_edge(START, "work")
    out = run(platform.compile(graph), {"notes": []}, {"configurable": {"thread_id": thread}}, mode)
    assert out["notes"] == ["one", "two"]
    assert seen == [["first"]]  # the first effect's record was in the database when the second started
    assert writes[-1] == ["first", "second"]  # the node's writes (the last sent) waited for both records


@pytest.mark.parametrize("mode", MODES)
def test_an_at_most_once_outcome_is_recorded_before_it_returns(platform: Any, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An at_most_once effect's record does not trail: a crash right after it returned to its node must never leave
    its outcome unknown (a person would have to settle it). Records are slowed down here: one written in the
    background would still be ``started`` when the node looks."""
    platform.setup()
    slow_records(platform.journal, monkeypatch)
    thread = f"t-{uuid.uuid4().hex[:8]}"
    seen: list[list[str]] = []

    @effect(kind="payment", name="charge", at_most_once=True)
    def charge() -> str:
        return "charged"

    @effect(kind="payment", name="charge", at_most_once=True)
    async def acharge() -> str:
        return "charged"

    def node(state: State) -> State:
        done = charge()
        seen.append(completed(platform.journal, thread))
        return {"notes": [done]}

    async def anode(state: State) -> State:
        done = await acharge()
        seen.append(await asyncio.to_thread(completed, platform.journal, thread))
        return {"notes": [done]}

    graph = StateGraph(State)
    graph.add_node("pay", node if mode == "sync" else anode)
    graph.add_edge(START, "pay")
    out = run(platform.compile(graph), {"notes": []}, {"configurable": {"thread_id": thread}}, mode)
    assert out["notes"] == ["charged"]
    assert seen == [["charge"]]  # recorded, completed, before the node went on


@pytest.mark.parametrize("mode", MODES)
def test_a_retry_meets_the_records_of_the_attempt_before_it(platform: Any, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    platform.setup()
    slow_records(platform.journal, monkeypatch)
    executed, attempts = Counter(), []
    charge = effect_of("charge", mode, lambda: executed("charged"))

    def steps() -> list[Any]:
        attempts.append(1)
        if len(attempts) == 1:
            return [charge, _raising]
        return [charge]

    def _raising() -> Any:
        raise ConnectionError("the worker's link dropped after the charge")

    graph = StateGraph(State)
    graph.add_node("bill", node_of(mode, steps) if mode == "sync" else _awaiting_sync_tail(steps), retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.01, jitter=False, retry_on=ConnectionError))
    graph.add_edge(START, "bill")
    out = run(platform.compile(graph), {"notes": []}, {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}, mode)
    assert len(attempts) == 2
    assert executed.n == 1  # the retry replayed the charge its first attempt recorded
    assert out["notes"] == ["charged"]


def _awaiting_sync_tail(steps: Any) -> Any:
    """An async node awaiting its async effects and calling plain functions as they are."""

    async def anode(state: State) -> State:
        notes = []
        for fn in steps():
            value = fn()
            notes.append(await value if asyncio.iscoroutine(value) else value)
        return {"notes": notes}

    return anode


@pytest.mark.parametrize("mode", MODES)
def test_a_record_another_worker_beat_stops_the_run_and_the_resume_replays_theirs(
    platform: Any, mode: str
) -> None:
    platform.setup()
    other = ActivityJournal.for_checkpointer(platform.checkpointer)  # another worker on the same store
    executed = Counter()

    def pay() -> str:
        executed()
        position = current_effect().position
        other.run(EffectCall("tool", "pay", input={}), lambda: "theirs", position=position)
        return "ours"

    graph = StateGraph(State)
    graph.add_node("bill", node_of(mode, lambda: [effect_of("pay", mode, pay)]))
    graph.add_edge(START, "bill")
    compiled, config = platform.compile(graph), {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}
    saved: list[Any] = []

    def lost_then_resumed() -> Any:
        with pytest.raises(EffectRecordLostError) as raised:
            compiled.invoke({"notes": []}, config)
        assert "another worker recorded its outcome" in str(raised.value)
        saved.append(compiled.get_state(config).values.get("notes"))
        return compiled.invoke(None, config)

    async def alost_then_resumed() -> Any:  # one loop: the async client is bound to the first it runs on
        with pytest.raises(EffectRecordLostError) as raised:
            await compiled.ainvoke({"notes": []}, config)
        assert "another worker recorded its outcome" in str(raised.value)
        saved.append((await compiled.aget_state(config)).values.get("notes"))
        return await compiled.ainvoke(None, config)

    out = lost_then_resumed() if mode == "sync" else asyncio.run(alost_then_resumed())
    assert saved == [[]]  # nothing was saved from the outcome the journal does not hold
    assert out["notes"] == ["theirs"]
    assert executed.n == 1


@pytest.mark.parametrize("mode", MODES)
def test_a_run_after_one_that_failed_reads_the_entries_of_the_visit_it_resumes_only(platform: Any, mode: str) -> None:
    """Costs: a visit resumed from a stored checkpoint reads its entries (the failed run may have recorded there);
    a visit of a checkpoint the resuming run wrote itself reads nothing, whatever ended the run before: no other
    run can have prepared a task from that checkpoint, and no effect starts before its checkpoint is stored."""
    platform.setup()
    reads: list[str] = []
    count_reads(platform.journal, reads)
    fail = [True]

    def steps() -> list[Any]:
        if fail:
            fail.clear()
            return [effect_of("check", mode, lambda: "checked"), _failing]
        return [effect_of("check", mode, lambda: "checked")]

    def _failing() -> Any:
        raise ConnectionError("the worker's link dropped")

    graph = StateGraph(State)
    graph.add_node("work", node_of(mode, steps) if mode == "sync" else _awaiting_sync_tail(steps))
    graph.add_node("more", node_of(mode, lambda: [effect_of("notify", mode, lambda: "notified")]))
    graph.add_edge(START, "work")
    graph.add_edge("work", "more")
    compiled, config = platform.compile(graph), {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}

    def twice() -> Any:
        with pytest.raises(ConnectionError):
            compiled.invoke({"notes": []}, config)
        reads.clear()
        return compiled.invoke(None, config)

    async def atwice() -> Any:
        with pytest.raises(ConnectionError):
            await compiled.ainvoke({"notes": []}, config)
        reads.clear()
        return await compiled.ainvoke(None, config)

    out = twice() if mode == "sync" else asyncio.run(atwice())
    assert out["notes"] == ["checked", "notified"]
    assert reads == ["find"]  # work (resumed); more's visit is new by construction


def count_reads(journal: Any, names: list[str]) -> None:
    """Record every ``Find`` the journal's plans send on its collection (both faces)."""
    from langgraph_durable_mongodb.storage.plans.requests import Find, Gather

    for attribute in ("_effect_plan", "_stream_plan"):
        plan = getattr(journal, attribute)

        def counted(*args: Any, plan: Any = plan, **kwargs: Any) -> Any:
            inner = plan(*args, **kwargs)
            try:
                request = next(inner)
                while True:
                    for sent in request.requests if isinstance(request, Gather) else (request,):
                        if isinstance(sent, Find) and sent.collection == journal.collection:
                            names.append("find")
                    request = inner.send((yield request))
            except StopIteration as done:
                return done.value

        setattr(journal, attribute, counted)


@pytest.mark.parametrize("call", ["batch", "stream"])
@pytest.mark.parametrize("mode", MODES)
def test_a_run_that_failed_releases_the_lock_as_not_ended_cleanly(platform: Any, mode: str, call: str) -> None:
    """How the run ended is kept with its lock (``ended_cleanly``), for the views: a batch's, a stream's."""
    platform.setup()

    def fails(state: State) -> State:
        raise ConnectionError("the worker's link dropped")

    graph = StateGraph(State)
    graph.add_node("work", fails)
    graph.add_edge(START, "work")
    compiled, thread = platform.compile(graph), f"t-{uuid.uuid4().hex[:8]}"
    config = {"configurable": {"thread_id": thread}}

    async def arun() -> None:
        if call == "batch":
            await compiled.abatch([{"notes": []}], [config])
        else:
            async for _ in compiled.astream({"notes": []}, config):
                pass

    def srun() -> None:
        compiled.batch([{"notes": []}], [config]) if call == "batch" else list(compiled.stream({"notes": []}, config))

    with pytest.raises(ConnectionError):
        srun() if mode == "sync" else asyncio.run(arun())
    platform.run_locks.wait_releases(10)  # a sync run's release is sent in the background
    lock = platform.checkpointer.client[platform.checkpointer.db_name]["thread_runs"].find_one({"thread_id": thread})
    assert (lock["owner"], lock["ended_cleanly"]) == (None, False)


def test_a_sync_effect_after_an_async_one_on_the_loop_does_not_block_it(platform: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The async effect's record is a task of the run's loop; a sync effect called on that loop after it cannot
    wait for it without blocking the loop for good."""
    platform.setup()
    slow_records(platform.journal, monkeypatch)
    first, second = effect_of("first", "async", lambda: "one"), effect_of("second", "sync", lambda: "two")

    async def node(state: State) -> State:
        return {"notes": [await first(), second()]}

    graph = StateGraph(State)
    graph.add_node("work", node)
    graph.add_edge(START, "work")
    compiled, outcome = platform.compile(graph), {}

    def run_in_a_thread() -> None:
        outcome["out"] = asyncio.run(compiled.ainvoke({"notes": []}, {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}))

    import threading

    runner = threading.Thread(target=run_in_a_thread, daemon=True)
    runner.start()
    runner.join(20)
    assert not runner.is_alive(), "the run's event loop is blocked"
    assert outcome["out"]["notes"] == ["one", "two"]


def test_a_run_cancelled_with_a_record_lost_holds_nothing_against_the_next(platform: Any) -> None:
    """The record of ``pay`` fails (another worker recorded first), and the run is cancelled before anything of
    the node raised it: no write, no checkpoint waited for it. The thread's next run drops it, replays the
    other worker's outcome and ends, instead of raising the lost record of a run that is over."""
    platform.setup()
    other = ActivityJournal.for_checkpointer(platform.checkpointer)  # another worker on the same store
    executed, lost, hang = Counter(), asyncio.Event(), [True]

    @effect(kind="tool", name="pay")
    async def pay() -> str:
        executed()
        other.run(EffectCall("tool", "pay", input={}), lambda: "theirs", position=current_effect().position)
        return "ours"

    async def bill(state: State) -> State:
        paid = await pay()
        if hang[0]:
            lost.set()
            await asyncio.Event().wait()  # cancelled here, its record failing behind it
        return {"notes": [paid]}

    graph = StateGraph(State)
    graph.add_node("bill", bill)
    graph.add_edge(START, "bill")
    compiled, config = platform.compile(graph), {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}

    async def cancelled_then_resumed() -> Any:
        first = asyncio.ensure_future(compiled.ainvoke({"notes": []}, config))
        await asyncio.wait_for(lost.wait(), 10)
        await asyncio.sleep(SLOW)  # the record has failed by now: the other worker's entry is completed
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        hang[0] = False
        return await compiled.ainvoke(None, config)

    out = asyncio.run(cancelled_then_resumed())
    assert out["notes"] == ["theirs"]
    assert executed.n == 1


class Stopped(BaseException):
    """Ends a sync run from inside its node as a signal would: not an error LangGraph writes for the task."""


def test_a_sync_run_stopped_with_a_record_lost_holds_nothing_against_the_next(platform: Any) -> None:
    """The sync twin: the node is stopped right after ``pay``, whose record fails behind it; the next run ends."""
    platform.setup()
    other = ActivityJournal.for_checkpointer(platform.checkpointer)
    executed, stop = Counter(), [True]

    @effect(kind="tool", name="pay")
    def pay() -> str:
        executed()
        other.run(EffectCall("tool", "pay", input={}), lambda: "theirs", position=current_effect().position)
        return "ours"

    def bill(state: State) -> State:
        paid = pay()
        if stop[0]:
            time.sleep(SLOW)  # the record has failed by now
            raise Stopped
        return {"notes": [paid]}

    graph = StateGraph(State)
    graph.add_node("bill", bill)
    graph.add_edge(START, "bill")
    compiled, config = platform.compile(graph), {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}
    with pytest.raises((Stopped, EffectRecordLostError)):
        compiled.invoke({"notes": []}, config)
    stop[0] = False
    assert compiled.invoke(None, config)["notes"] == ["theirs"]
    assert executed.n == 1



async def call(graph: Any, inputs: Any, config: dict[str, Any], caller: str) -> Any:
    """``graph`` run by ``caller``: ``ainvoke``, ``invoke`` from a coroutine (a web handler, a notebook), or
    ``invoke`` from plain code (a thread running no event loop)."""
    if caller == "async":
        return await graph.ainvoke(inputs, config)
    if caller == "coroutine":
        return graph.invoke(inputs, config)
    return await asyncio.to_thread(graph.invoke, inputs, config)


@pytest.mark.parametrize("caller", ["plain", "coroutine", "async"])
async def test_a_failed_record_keeps_its_task_s_writes_out_after_the_next_checkpoint_raised_it(
    platform: Any, caller: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The charge's record fails, and LangGraph's background save of the next checkpoint meets it first (it stores the
    task's writes beside that save): the save raises, and the task's writes, still waiting for the record, are not
    stored. Stored, they made ``pay`` done with its charge in the state and no record of it (the 3.13 tier of CI,
    a sync graph called from a coroutine). The resume charges again under the same key and records it."""
    platform.setup()
    thread, keys, mode = f"t-{uuid.uuid4().hex[:8]}", [], "async" if caller == "async" else "sync"
    charge = effect_of("charge", mode, lambda: keys.append(current_effect().idempotency_key) or f"charged {len(keys)}")
    graph = StateGraph(State)
    graph.add_node("pay", node_of(mode, lambda: [charge]))
    graph.add_edge(START, "pay")
    compiled, config = platform.compile(graph), {"configurable": {"thread_id": thread}}
    save_failed = writes_after_a_failed_save(platform, monkeypatch)
    with injected(CommandFault(nth_of("find_one_and_update activity_journal", 1))) as fault, pytest.raises(AutoReconnect):
        await call(compiled, {"notes": []}, config, caller)
    assert fault.failed and save_failed.is_set()  # the record failed, and a checkpoint's save raised it first
    db = platform.checkpointer.client[platform.checkpointer.db_name]
    assert [w["task_path"] for w in db.checkpoint_writes.find({"thread_id": thread, "channel": "notes"})] == ["~__pregel_pull, __start__"]
    assert compiled.get_state(config).next == ("pay",)  # LangGraph too takes pay for not done
    monkeypatch.undo()

    assert (await call(compiled, None, config, caller))["notes"] == ["charged 2"]
    assert len(keys) == 2 and keys[0] == keys[1]
    assert completed(platform.journal, thread) == ["charge"]


@pytest.mark.parametrize("mode", MODES)
def test_a_new_run_waits_for_a_record_left_in_flight_and_does_not_raise_its_error(platform: Any, mode: str) -> None:
    """The record a run before left in flight fails while the new run waits for it (another worker recorded that
    position): that error was the run before's, and the new run goes on."""
    import concurrent.futures

    from langgraph_durable_mongodb._langgraph import RunningTask

    platform.setup()
    thread = f"t-{uuid.uuid4().hex[:8]}"
    record: concurrent.futures.Future[Any] = concurrent.futures.Future()
    platform.checkpointer.hold_task_writes(thread, RunningTask("task-1", "", "cp-1"), record)
    graph = StateGraph(State)
    graph.add_node("work", node_of(mode, lambda: [effect_of("check", mode, lambda: "checked")]))
    graph.add_edge(START, "work")
    compiled, outcome = platform.compile(graph), {}

    def run() -> None:
        config = {"configurable": {"thread_id": thread}}
        outcome["out"] = compiled.invoke({"notes": []}, config) if mode == "sync" else asyncio.run(compiled.ainvoke({"notes": []}, config))

    import threading

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    time.sleep(0.3)
    assert runner.is_alive() and "out" not in outcome  # the run waits for the record left in flight
    record.set_exception(EffectRecordLostError("another worker recorded it first"))
    runner.join(10)
    assert outcome["out"]["notes"] == ["checked"]


def test_a_waiter_cancelled_while_it_waits_for_a_record_does_not_call_the_record_off() -> None:
    """LangGraph cancels a failed task's siblings; one waiting for a record (its writes, ``Join``) must not cancel the
    record's future through ``asyncio.wrap_future``: a record still queued would never be written, and one under way
    would be taken for done while it goes on, so the next run would not wait for it (the explorer, issue 44)."""
    import concurrent.futures

    import mongomock
    from mongomock_motor import AsyncMongoMockClient

    from langgraph_durable_mongodb.storage.plans.interpreters import AsyncInterpreter
    from langgraph_durable_mongodb.storage.plans.requests import Defer, Join, Sleep

    interpreter = AsyncInterpreter(AsyncMongoMockClient(mock_mongo_client=mongomock.MongoClient())["db"])
    queued: concurrent.futures.Future[Any] = concurrent.futures.Future()  # a pool thread's record, not started yet

    def slow() -> Any:
        yield Sleep(0.2)
        return "written"

    def join(futures: tuple[Any, ...]) -> Any:
        yield Join(futures)

    async def scenario() -> tuple[Any, Any]:
        record = await interpreter.run((lambda: (yield Defer(slow())))())
        waiter = asyncio.ensure_future(interpreter.run(join((queued, record))))
        await asyncio.sleep(0.05)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert not record.cancel()  # under way: nothing can call it off
        return await asyncio.wrap_future(record), record

    written, record = asyncio.run(scenario())
    assert written == "written" and not record.cancelled()
    assert not queued.cancelled()
