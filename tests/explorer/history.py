"""Run a history in this process: the fault-free reference run of its plan, then the history itself, with its fault
injected, resumed until done (or until an ``at_most_once`` effect's outcome is unknown), and, when the plan says so,
its thread id deleted and run again.

"Another process" (``Fault.resume == "new"``) is a new ``DurablePlatform`` on the same database: nothing of the
first one's memory. SIGKILLs need child processes: kills.py. A history that starts from a golden database of an
older storage format: storage_history.py; one copied (``copy_thread``) after its first run: copies.py.

Who calls the graph is the plan's ``caller``; records trailing their effects are written ``slow`` seconds late, and a
task's writes after the checkpoint saved beside them (``writes``: ``late_task_writes``); a
``fork`` sends, once a life is done, a ``Command`` with a new ``salt`` (every effect's input changes) to the checkpoint
of the life's first interrupt, and runs the fork to its end as a life of its own (a new ledger life: its slots are
new, so an outcome of the thread before the fork is never its own).
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import mongomock
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from mongomock_motor import AsyncMongoMockClient
from pymongo.errors import PyMongoError

from langgraph_durable_mongodb import EffectOutcomeUnknownError
from langgraph_durable_mongodb.platform import DurablePlatform

from langgraph_durable_mongodb.storage.plans.requests import Sleep

from ..clients import PlainCompile
from ..command_faults import CommandFault, injected, nth_of
from . import copies, graphs, ledger, storage_history
from .plans import Plan

THREAD = "history"
RUNS = 12  # runs of one life at most: the first, resumes, answers to interrupts
#: LangGraph's steps per run at most (its default is 25): three stages of parallel branches looping four times run
#: about 40.
RECURSION_LIMIT = 200
#: How long an effect waits for the root checkpoint its task came from (the library's default is 30 s): a wait
#: that outlives it is a stall, noted as such, not a history 30 s long.
STORE_WAIT_SECONDS = 3.0
#: How long a run waits for the thread's run lock (the library's default is 30 s): a lock left held is noted, fast.
RUN_WAIT_SECONDS = 2.0
#: How long a task's writes wait at most for a checkpoint save started after them (``Plan.writes``).
LATE_WRITES_SECONDS = 0.05


@dataclass
class Store:
    """One database: mongomock by default (sync and async faces on one store), or a server's."""

    client: Any = None
    async_client: Any = None
    db_name: str = field(default_factory=lambda: f"explore_{uuid.uuid4().hex[:12]}")

    def __post_init__(self) -> None:
        if self.client is None:
            self.client = mongomock.MongoClient()
            self.async_client = AsyncMongoMockClient(mock_mongo_client=self.client)

    def platform(self, plan: Plan) -> Any:
        """A platform on this database, compiling in the plan's form, with its timing (``slow``, ``writes``)."""
        made = DurablePlatform(
            self.client, async_client=self.async_client, db_name=self.db_name,
            journal_options={"lease_seconds": 0.5, "wait_seconds": 5.0}, run_wait_seconds=RUN_WAIT_SECONDS,
        )
        shorten_store_waits(made.checkpointer)
        if plan.slow:
            slow_trailing_records(made.journal, plan.slow)
        if plan.writes == "late":
            late_task_writes(made.checkpointer)
        return made if plan.form == "platform.compile" else PlainCompile(made)

    def drop(self) -> None:
        self.client.drop_database(self.db_name)


def shorten_store_waits(saver: Any) -> None:
    wait, await_ = saver.wait_stored, saver.await_stored
    saver.wait_stored = lambda thread_id, checkpoint_id, timeout=30.0, **kw: wait(thread_id, checkpoint_id, STORE_WAIT_SECONDS, **kw)

    async def await_stored(thread_id: str, checkpoint_id: str, timeout: float = 30.0, **kw: Any) -> None:
        await await_(thread_id, checkpoint_id, STORE_WAIT_SECONDS, **kw)

    saver.await_stored = await_stored


def slow_trailing_records(journal: Any, seconds: float) -> None:
    """Each record written while its node goes on (``trailing``) starts ``seconds`` late, as on a busy server."""
    record = journal._record  # noqa: SLF001 - the plan every record goes through

    def late(*args: Any, trailing: bool = False, **kwargs: Any) -> Any:
        if trailing:
            yield Sleep(seconds)
        return (yield from record(*args, trailing=trailing, **kwargs))

    journal._record = late  # noqa: SLF001


def late_task_writes(saver: Any) -> None:
    """Each task's writes are stored once a checkpoint save started after them has ended (``LATE_WRITES_SECONDS`` at
    most): LangGraph stores a task's writes in the background beside the next checkpoint's save, in either order."""
    store = saver._store  # noqa: SLF001 - the plans both faces run
    put, put_writes = store.put_plan, store.put_writes_plan
    saves = {"started": 0, "ended": -1}  # the number of the saves started, the highest number of one that ended

    def put_counted(*args: Any, **kwargs: Any) -> Any:
        number, saves["started"] = saves["started"], saves["started"] + 1
        try:
            return (yield from put(*args, **kwargs))
        finally:
            saves["ended"] = max(saves["ended"], number)

    def put_writes_late(*args: Any, **kwargs: Any) -> Any:
        after, deadline = saves["started"], time.monotonic() + LATE_WRITES_SECONDS
        while saves["ended"] < after and time.monotonic() < deadline:
            yield Sleep(0.005)
        return (yield from put_writes(*args, **kwargs))

    store.put_plan, store.put_writes_plan = put_counted, put_writes_late


@dataclass
class Life:
    """How one life of the thread id ended (``forked``: the life of its fork, ``Plan.fork``)."""

    values: dict[str, Any] | None = None
    unknown: list[EffectOutcomeUnknownError] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # "<type>: <message>" of every run that raised
    forked: bool = False
    #: The plan's edit at a child's interrupt was not made there, by LangGraph's own loss of the child's stored
    #: checkpoints (failed stores under ``durability="async"``): with none stored LangGraph refuses the edit on any
    #: saver; with the latest stored older than the interrupt, an ``as_node`` edit is made there and completes the
    #: interrupted node without the steps between. The life then ends elsewhere than the fault-free run.
    edit_astray: bool = False


@dataclass
class Outcome:
    """What a history did: its lives (a copy's among them), the fault that fired, the copies made (the copy's life:
    ``(the source's life, how many ledger records there were when it was copied)``) and what the upgrade of a
    golden database did wrong (storage_history.py)."""

    lives: list[Life] = field(default_factory=list)
    fault_fired: str = ""
    copies: dict[int, tuple[int, int]] = field(default_factory=dict)
    upgrade: list[str] = field(default_factory=list)
    #: Per ledger life of the thread (not a fork's or a copy's), the label each journal entry of the thread stores,
    #: by its idempotency key (``journal_labels``).
    labels: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return all(life.values is not None for life in self.lives)


class TaskStore:
    """The oracle's store: one ``InMemorySaver``, which every graph of the plan, built with plain ``@task`` effects,
    compiles with (``task_reference``)."""

    def __init__(self) -> None:
        self.checkpointer = InMemorySaver()

    def platform(self, plan: Plan) -> TaskStore:
        return self

    def compile(self, builder: Any) -> Any:
        return builder.compile(checkpointer=self.checkpointer)


class Driver:
    """Runs one life of a plan's thread on a platform: the first run, then resumes until done."""

    def __init__(self, plan: Plan, store: Store | TaskStore, stop_on_error: bool = False, thread: str = THREAD) -> None:
        self.plan, self.store, self.stop_on_error = plan, store, stop_on_error
        self.plain = isinstance(store, TaskStore)
        self.platform = store.platform(plan)
        self.graph = self.platform.compile(graphs.build(plan, self.plain))
        self.config = {"configurable": {"thread_id": thread}}
        self.edited: set[str] = set()
        #: The config of the checkpoint the life's first interrupt stopped at (where a fork goes back to).
        self.interrupted_at: dict[str, Any] | None = None
        #: Called (and forgotten) once the life's first run returned or raised: an operator's action between runs.
        self.after_first_run: Any = None
        self.current = Life()  # the life running

    def reopen(self) -> None:
        """Another process takes over: a new platform on the same database."""
        self.platform = self.store.platform(self.plan)
        self.graph = self.platform.compile(graphs.build(self.plan, self.plain))

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """The graph's API, as the plan's ``caller`` calls it: an async graph (async or mixed nodes) awaited; a sync
        one from a coroutine (its event loop's thread), from a thread with no event loop, or through ``batch``."""
        batched = name == "invoke" and self.plan.caller == "batch"
        if self.plan.mode != "sync":
            if batched:
                return (await self.graph.abatch([args[0]], [args[1]], **kwargs))[0]
            return await getattr(self.graph, "a" + name)(*args, **kwargs)
        fn = getattr(self.graph, name)
        if batched:
            fn = lambda value, config, **kw: self.graph.batch([value], [config], **kw)[0]  # noqa: E731
        if self.plan.caller == "plain":
            return await asyncio.to_thread(fn, *args, **kwargs)
        return fn(*args, **kwargs)

    async def next_input(self) -> Any:
        """What the next run is given: the input on an empty thread, an answer at an interrupt, else None."""
        snapshot = await self.call("get_state", self.config)
        if snapshot.metadata is None:
            return graphs.first_input()
        interrupted = [t for t in snapshot.tasks if t.interrupts]
        if not interrupted:
            return None if snapshot.tasks else "done"  # not `next`: a task whose writes were saved is not in it
        if self.interrupted_at is None:
            self.interrupted_at = snapshot.config
        await self.edit(interrupted[0].name)
        return Command(resume=graphs.ANSWER)

    async def edit(self, node: str) -> None:
        """The plan's ``update_state`` at an interrupt, once: plain (as the node before it) or as the node itself; at
        a ``child_interrupt``, through the child's config, as LangGraph documents it."""
        found = re.fullmatch(r"s(\d+)(q?)", node)
        if found is None or node in self.edited:
            return
        stage = self.plan.stages[int(found[1])]
        how, config, interrupted = stage.edit, self.config, node
        if not how:
            return
        if stage.kind == "child_interrupt" and not found[2]:
            snapshot = await self.call("get_state", self.config, subgraphs=True)
            child = next(t.state for t in snapshot.tasks if t.name == node)
            config, interrupted = child.config, f"{node}q"
            if child.metadata is None and self.plan.durability == "async":  # see Life.edit_astray
                self.edited.add(node)
                self.current.edit_astray = True
                return
            if how == "as_node" and interrupted not in child.next:
                self.current.edit_astray = True  # made at a checkpoint older than the interrupt
        elif stage.kind != "interrupt" or not found[2]:
            return
        as_node = {"as_node": interrupted} if how == "as_node" else {}
        try:
            await self.call("update_state", config, {"notes": [f"edit@{interrupted}"]}, **as_node)
        except PyMongoError:
            if not await self.edit_made(config, interrupted):
                raise  # an edit the fault failed is made again at the next stop
        self.edited.add(node)

    async def edit_made(self, config: dict[str, Any], interrupted: str) -> bool:
        """Whether an edit whose call the fault failed was made all the same. LangGraph stores an edit's writes at
        the checkpoint edited, under the task of the node it is made as, before the edit's own checkpoint: made as
        the interrupted node (``as_node``), they complete its task though that store failed, where LangGraph then
        takes the task for done: not in the snapshot's ``next`` (LangGraph 1.2.0 runs it again all the same, and the
        edit is not made). (The interrupted node writes no notes of its own before its interrupt.)"""
        snapshot = await self.call("get_state", config)
        if interrupted in snapshot.next:
            return False
        tasks = {task.id for task in snapshot.tasks if task.name == interrupted}
        saved = await asyncio.to_thread(self.platform.checkpointer.get_tuple, snapshot.config)
        return any(task in tasks and channel == "notes" for task, channel, _ in (saved.pending_writes if saved else ()))

    async def life(self, start: tuple[Any, dict[str, Any]] | None = None) -> Life:
        """Run the thread until done (or an outcome unknown), resuming after each stop; ``start``: the first run's
        input and config (a fork's), instead of what the thread's state asks for, sent again while a fault stops
        it before the thread moved on (else the fork would never be made)."""
        life = self.current = Life()
        before = (await self.latest()).config if start is not None else None
        for _ in range(RUNS):
            try:
                value, config = start if start is not None else (await self.next_input(), self.config)
                if isinstance(value, str) and value == "done":
                    life.values = (await self.call("get_state", self.config)).values
                    return life
                await self.run(value, config)
                start = None
            except EffectOutcomeUnknownError as unknown:
                life.unknown.append(unknown)
                return life
            except Exception as error:  # noqa: BLE001 - judged by the oracle: a fault's run may raise anything
                life.errors.append(f"{type(error).__name__}: {error}")
                if self.stop_on_error:
                    return life  # another process resumes
                if self.plan.fault.resume == "new":
                    self.reopen()
                if start is not None and (await self.call("get_state", self.config)).config != before:
                    start = None  # the fork got under way: it resumes from the thread's latest
                elif start is not None:
                    start = await self.unsent(start)
        life.errors.append(f"not done after {RUNS} runs")
        return life


    async def latest(self) -> Any:
        """The thread's state, as an operator reads it before a fork: read again when the fault failed the read (a
        fault fires once), as a person would."""
        try:
            return await self.call("get_state", self.config)
        except PyMongoError:
            return await self.call("get_state", self.config)

    async def unsent(self, start: tuple[Any, dict[str, Any]]) -> tuple[Any, dict[str, Any]]:
        """What of a fork's ``Command`` is sent again: its resume alone once its update was saved at the checkpoint
        (LangGraph accumulates an update's writes there: sent twice, ``salt`` would get two values in one step)."""
        command, config = start
        saved = await asyncio.to_thread(self.platform.checkpointer.get_tuple, config)
        updated = any(channel == "salt" for _, channel, _ in saved.pending_writes or ())  # no node writes it
        return (Command(resume=command.resume), config) if updated else start

    async def run(self, value: Any, config: dict[str, Any]) -> None:
        """One run, then the ``after_first_run`` action if it has not been taken yet."""
        try:
            await self.call("invoke", value, {**config, "recursion_limit": RECURSION_LIMIT}, durability=self.plan.durability)
        finally:
            action, self.after_first_run = self.after_first_run, None
            if action is not None:
                await action(self)


def journal_labels(client: Any, db_name: str) -> dict[str, Any]:
    """The label each entry of the thread stores (None where it stores none), by its idempotency key."""
    entries = client[db_name]["activity_journal"].find({"thread_id": THREAD, "chunk": 0}, {"idempotency_key": 1, "label": 1})
    return {e.get("idempotency_key"): e.get("label") for e in entries}


def run_life(driver: Driver) -> Life:
    return asyncio.run(driver.life())


def run_lives(driver: Driver, history_ledger: ledger.Ledger) -> list[Life]:
    """One life of the thread id, and its fork when the plan makes one (a life of its own on the ledger)."""
    lives = [run_life(driver)]
    if driver.plan.fork and lives[-1].values is not None and driver.interrupted_at is not None:
        history_ledger.life += 1
        fork = Command(update={"salt": 1}, resume=graphs.ANSWER)
        lives.append(asyncio.run(driver.life((fork, driver.interrupted_at))))
        lives[-1].forked = True
        lives[-1].edit_astray |= lives[0].edit_astray  # the fork meets the child's run the edit went astray in
    return lives


class Reference(NamedTuple):
    """What the fault-free run of a plan ended with: a life's final notes (normalized), its fork's when the plan
    makes one, and the labels of the storage requests it made (what a ``command`` fault's ``at`` picks from)."""

    notes: list[str]
    requests: list[str]
    fork_notes: list[str] | None = None


def _ended(lives: list[Life], requests: list[str], run: str) -> Reference:
    errors = [e for life in lives for e in life.errors]
    assert lives[0].values is not None and lives[-1].values is not None and not errors, f"the {run} of the plan failed: {errors}"
    fork = graphs.normalized(lives[-1].values["notes"]) if lives[-1].forked else None
    return Reference(graphs.normalized(lives[0].values["notes"]), requests, fork)


def reference(plan: Plan) -> Reference:
    """The fault-free run of ``plan`` on a store of its own."""
    store, counter = Store(), CommandFault(lambda request, index: False)
    previous = ledger.use(ledger.Ledger())
    graphs.arm(graphs.Fault())
    try:
        with injected(counter):
            lives = run_lives(Driver(plan, store), ledger.CURRENT)
    finally:
        ledger.use(previous)
        store.drop()
    return _ended(lives, counter.labels, "fault-free run")


def task_reference(plan: Plan) -> Reference:
    """The oracle where LangGraph's ``@task`` and the journal share their semantics: the fault-free run of ``plan``
    with every effect a plain ``@task`` over ``InMemorySaver`` (its fork included), whose final notes the journaled
    run's must equal."""
    previous = ledger.use(ledger.Ledger())
    graphs.arm(graphs.Fault())
    try:
        lives = run_lives(Driver(plan, TaskStore()), ledger.CURRENT)
    finally:
        ledger.use(previous)
    return _ended(lives, [], "@task run")


def target(fault: Any, requests: list[str]) -> tuple[str, int]:
    """The request a ``command`` or ``kill`` fault picks among a fault-free run's ``requests``: ``(label, n)``, the
    ``n``-th of that label."""
    index = min(int(fault.at * len(requests)), len(requests) - 1)
    return requests[index], requests[: index + 1].count(requests[index])


def run_history(plan: Plan, history_ledger: ledger.Ledger, requests: list[str]) -> Outcome:
    """Run ``plan`` with its fault on a fresh store, recording on ``history_ledger``."""
    store, outcome = Store(), Outcome()
    ledger.use(history_ledger)
    graphs.arm(plan.fault)
    fault = plan.fault
    command = CommandFault(lambda request, index: False)
    if fault.kind == "command":
        command = CommandFault(nth_of(*target(fault, requests)), lost_reply=fault.lost_reply)
    try:
        with injected(command):
            if plan.golden:
                first_call = lambda: Driver(plan, store).call("get_state", {"configurable": {"thread_id": THREAD}})  # noqa: E731
                outcome.fault_fired, outcome.upgrade = storage_history.start(plan, store, history_ledger, first_call)
            driver = Driver(plan, store)
            copy = copies.Copy(history_ledger) if plan.copy else None
            driver.after_first_run = copy
            life = history_ledger.life
            outcome.lives += run_lives(driver, history_ledger)
            outcome.labels[life] = journal_labels(store.client, store.db_name)
            if copy is not None:
                outcome.lives.append(copy.resume(lambda thread: run_life(Driver(plan, store, thread=thread))))
                outcome.copies[copy.life] = (copy.source_life, copy.at)
            if plan.reuse and outcome.lives[0].values is not None:
                driver.platform.checkpointer.delete_thread(THREAD)
                history_ledger.life += 1
                life = history_ledger.life
                outcome.lives += run_lives(Driver(plan, store), history_ledger)
                outcome.labels[life] = journal_labels(store.client, store.db_name)
    finally:
        ledger.use(ledger.Ledger())
        store.drop()
    if command.failed:
        outcome.fault_fired = f"command {command.failed[0]}"
        history_ledger.add("fault", what=f"{'lost reply of' if fault.lost_reply else 'failed'} {command.failed[0]}")
    elif graphs.Armed.fired:
        outcome.fault_fired = "raise"
    return outcome
