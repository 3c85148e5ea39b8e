"""Run a history in this process: the fault-free reference run of its plan, then the history itself, with its fault
injected, resumed until done (or until an ``at_most_once`` effect's outcome is unknown), and, when the plan says so,
its thread id deleted and run again.

"Another process" (``Fault.resume == "new"``) is a new ``DurablePlatform`` on the same database: nothing of the
first one's memory. SIGKILLs need child processes: kills.py.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any

import mongomock
from langgraph.types import Command
from mongomock_motor import AsyncMongoMockClient

from langgraph_durable_mongodb import EffectOutcomeUnknownError
from langgraph_durable_mongodb.platform import DurablePlatform

from ..clients import PlainCompile
from ..command_faults import CommandFault, injected, nth_of
from . import graphs, ledger
from .plans import Plan

THREAD = "history"
RUNS = 12  # runs of one life at most: the first, resumes, answers to interrupts
#: How long an effect waits for the root checkpoint its task came from (the library's default is 30 s): a wait
#: that outlives it is a stall, noted as such, not a history 30 s long.
STORE_WAIT_SECONDS = 3.0
#: How long a run waits for the thread's run lock (the library's default is 30 s): a lock left held is noted, fast.
RUN_WAIT_SECONDS = 2.0


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

    def platform(self, form: str) -> Any:
        made = DurablePlatform(
            self.client, async_client=self.async_client, db_name=self.db_name,
            journal_options={"lease_seconds": 0.5, "wait_seconds": 5.0}, run_wait_seconds=RUN_WAIT_SECONDS,
        )
        shorten_store_waits(made.checkpointer)
        return made if form == "platform.compile" else PlainCompile(made)

    def drop(self) -> None:
        self.client.drop_database(self.db_name)


def shorten_store_waits(saver: Any) -> None:
    wait, await_ = saver.wait_stored, saver.await_stored
    saver.wait_stored = lambda thread_id, checkpoint_id, timeout=30.0, **kw: wait(thread_id, checkpoint_id, STORE_WAIT_SECONDS, **kw)

    async def await_stored(thread_id: str, checkpoint_id: str, timeout: float = 30.0, **kw: Any) -> None:
        await await_(thread_id, checkpoint_id, STORE_WAIT_SECONDS, **kw)

    saver.await_stored = await_stored


@dataclass
class Life:
    """How one life of the thread id ended."""

    values: dict[str, Any] | None = None
    unknown: list[EffectOutcomeUnknownError] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # "<type>: <message>" of every run that raised


@dataclass
class Outcome:
    """What a history did: its lives, and the storage requests its fault-free reference run made."""

    lives: list[Life] = field(default_factory=list)
    fault_fired: str = ""
    #: Per life, the label each journal entry stores, by its idempotency key (``journal_labels``).
    labels: list[dict[str, Any]] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return all(life.values is not None for life in self.lives)


class Driver:
    """Runs one life of a plan's thread on a platform: the first run, then resumes until done."""

    def __init__(self, plan: Plan, store: Store, stop_on_error: bool = False) -> None:
        self.plan, self.store, self.stop_on_error = plan, store, stop_on_error
        self.platform = store.platform(plan.form)
        self.graph = self.platform.compile(graphs.build(plan))
        self.config = {"configurable": {"thread_id": THREAD}}
        self.edited: set[str] = set()

    def reopen(self) -> None:
        """Another process takes over: a new platform on the same database."""
        self.platform = self.store.platform(self.plan.form)
        self.graph = self.platform.compile(graphs.build(self.plan))

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.plan.mode == "async":
            return await getattr(self.graph, "a" + name)(*args, **kwargs)
        return getattr(self.graph, name)(*args, **kwargs)

    async def next_input(self) -> Any:
        """What the next run is given: the input on an empty thread, an answer at an interrupt, else None."""
        snapshot = await self.call("get_state", self.config)
        if snapshot.metadata is None:
            return {"notes": []}
        interrupted = [t for t in snapshot.tasks if t.interrupts]
        if not interrupted:
            return None if snapshot.tasks else "done"  # not `next`: a task whose writes were saved is not in it
        await self.edit(snapshot, interrupted[0].name)
        return Command(resume=graphs.ANSWER)

    async def edit(self, snapshot: Any, node: str) -> None:
        """The plan's ``update_state`` at an interrupt, once: plain (as the node before it) or as the node itself."""
        index = int(node[1:].rstrip("q")) if node.startswith("s") and node.endswith("q") else None
        if index is None or node in self.edited:
            return
        how = self.plan.stages[index].edit
        if how == "plain":
            await self.call("update_state", self.config, {"notes": [f"edit@{node}"]})
        elif how == "as_node":
            await self.call("update_state", self.config, {"notes": [f"edit@{node}"]}, as_node=node)
        self.edited.add(node)  # once made: an edit the fault failed is made again

    async def life(self) -> Life:
        life = Life()
        for _ in range(RUNS):
            try:
                value = await self.next_input()
                if value == "done":
                    life.values = (await self.call("get_state", self.config)).values
                    return life
                await self.call("invoke", value, self.config, durability=self.plan.durability)
            except EffectOutcomeUnknownError as unknown:
                life.unknown.append(unknown)
                return life
            except Exception as error:  # noqa: BLE001 - judged by the oracle: a fault's run may raise anything
                life.errors.append(f"{type(error).__name__}: {error}")
                if self.stop_on_error:
                    return life  # another process resumes
                if self.plan.fault.resume == "new":
                    self.reopen()
        life.errors.append(f"not done after {RUNS} runs")
        return life


def journal_labels(client: Any, db_name: str) -> dict[str, Any]:
    """The label each entry of the thread stores (None where it stores none), by its idempotency key."""
    entries = client[db_name]["activity_journal"].find({"thread_id": THREAD, "chunk": 0}, {"idempotency_key": 1, "label": 1})
    return {e.get("idempotency_key"): e.get("label") for e in entries}


def run_life(driver: Driver) -> Life:
    return asyncio.run(driver.life())


def reference(plan: Plan) -> tuple[list[str], list[str]]:
    """The fault-free run of ``plan`` on a store of its own: its final notes (normalized) and the labels of the
    storage requests it made (what a ``command`` fault's ``at`` picks from)."""
    store, counter = Store(), CommandFault(lambda request, index: False)
    previous = ledger.use(ledger.Ledger())
    graphs.arm(graphs.Fault())
    try:
        with injected(counter):
            life = run_life(Driver(plan, store))
    finally:
        ledger.use(previous)
        store.drop()
    assert life.values is not None and not life.errors, f"the fault-free run of the plan failed: {life.errors}"
    return graphs.normalized(life.values["notes"]), counter.labels


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
            driver = Driver(plan, store)
            outcome.lives.append(run_life(driver))
            outcome.labels.append(journal_labels(store.client, store.db_name))
            if plan.reuse and outcome.lives[-1].values is not None:
                driver.platform.checkpointer.delete_thread(THREAD)
                history_ledger.life += 1
                outcome.lives.append(run_life(Driver(plan, store)))
                outcome.labels.append(journal_labels(store.client, store.db_name))
    finally:
        ledger.use(ledger.Ledger())
        store.drop()
    if command.failed:
        outcome.fault_fired = f"command {command.failed[0]}"
        history_ledger.add("fault", what=f"{'lost reply of' if fault.lost_reply else 'failed'} {command.failed[0]}")
    elif graphs.Armed.fired:
        outcome.fault_fired = "raise"
    return outcome
