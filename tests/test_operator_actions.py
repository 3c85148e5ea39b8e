"""What an operator does between runs keeps the journal's promise (issue 44): a resume sent to a checkpoint the thread
has moved past is a fork, an edit inside a compiled child continues the visit it interrupted, and a run started from a
child's checkpoint is refused before anything runs.

LangGraph's ``@task`` over ``InMemorySaver`` is the oracle where the semantics are shared: a changed input is charged,
as ``@task`` charges it. Where they differ (an unchanged input replays here, ``@task`` runs it again), docs/guarantees.md
says so and the test says which.
"""

from __future__ import annotations

import asyncio
import operator
import uuid
import warnings
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import task
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from langgraph_durable_mongodb import InputChangedWarning, TopologyError
from langgraph_durable_mongodb.journal import current_effect, effect

from .clients import PlainCompile
from .command_faults import CommandFault, injected, stores_child_checkpoint
from .journal_helpers import Counter

pytestmark = pytest.mark.both_compile_forms


class State(TypedDict, total=False):
    amount: int
    memo: str
    notes: Annotated[list, operator.add]


def paying_graph(charge: Any, *, mode: str = "sync", prepared: bool = False) -> StateGraph:
    """``pay`` charges ``amount``, then asks for an approval (``interrupt``); ``after`` follows; with ``prepared``,
    ``prepare`` comes first."""

    def pay(state: State) -> State:
        done = charge(state["amount"])
        return {"notes": [done, interrupt("approve?"), state.get("memo", "")]}

    async def apay(state: State) -> State:
        done = await charge(state["amount"])
        return {"notes": [done, interrupt("approve?"), state.get("memo", "")]}

    graph = StateGraph(State)
    graph.add_node("pay", pay if mode == "sync" else apay)
    graph.add_node("after", lambda state: {"notes": ["after"]})
    if prepared:
        graph.add_node("prepare", lambda state: {"notes": ["prepared"]})
        graph.add_edge(START, "prepare")
        graph.add_edge("prepare", "pay")
    else:
        graph.add_edge(START, "pay")
    graph.add_edge("pay", "after")
    return graph


def journaled_charge(executed: Counter, keys: list[str], mode: str = "sync") -> Any:
    if mode == "sync":

        @effect(kind="payment", name="charge")
        def charge(amount: int) -> str:
            keys.append(current_effect().idempotency_key)
            return executed(f"charged {amount}")

        return charge

    @effect(kind="payment", name="charge")
    async def acharge(amount: int) -> str:
        keys.append(current_effect().idempotency_key)
        return executed(f"charged {amount}")

    return acharge


def task_charge(executed: Counter) -> Any:
    """The oracle: the same charge as a plain LangGraph ``@task``."""

    @task
    def charge_task(amount: int) -> str:
        return executed(f"charged {amount}")

    return lambda amount: charge_task(amount).result()


class Caller:
    """Calls a compiled graph's sync or async API."""

    def __init__(self, graph: Any, mode: str) -> None:
        self.graph, self.mode = graph, mode

    def __getattr__(self, name: str) -> Any:
        if self.mode == "sync":
            return getattr(self.graph, name)
        method = getattr(self.graph, "a" + name)
        return lambda *args, **kwargs: self.loop.run_until_complete(method(*args, **kwargs))

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if not hasattr(self, "_loop"):
            self._loop = asyncio.new_event_loop()
        return self._loop


def approved_then_back(graph: Any, thread: str, mode: str = "sync") -> tuple[Caller, Any]:
    """Charge 100, approve, finish; return the caller and the config of the checkpoint ``pay`` interrupted at."""
    caller = Caller(graph, mode)
    config = {"configurable": {"thread_id": thread}}
    caller.invoke({"amount": 100}, config)
    interrupted = caller.get_state(config).config
    caller.invoke(Command(resume="yes"), config)
    return caller, interrupted


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_resume_with_a_changed_input_sent_to_a_checkpoint_the_thread_moved_past_charges_it(platform: Any, mode: str) -> None:
    """``pay`` charged 100 and the thread finished; the operator sends ``Command(update={"amount": 500}, resume=...)``
    to the checkpoint ``pay`` interrupted at. That run is a fork: the charge of 500 runs under a key of its own, as
    ``@task`` runs it; before, the 100 outcome was replayed into the 500 branch."""
    platform.setup()
    executed, keys = Counter(), []
    caller, old = approved_then_back(platform.compile(paying_graph(journaled_charge(executed, keys, mode), mode=mode)), f"t-{uuid.uuid4().hex[:8]}", mode)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputChangedWarning)  # a fork never replays another input's outcome
        out = caller.invoke(Command(update={"amount": 500}, resume="yes"), old)
    oracle = Counter()
    task_caller, task_old = approved_then_back(paying_graph(task_charge(oracle)).compile(checkpointer=InMemorySaver()), "t")
    expected = task_caller.invoke(Command(update={"amount": 500}, resume="yes"), task_old)
    assert out["notes"][-4:] == expected["notes"][-4:] and "charged 500" in out["notes"]
    assert executed.n == oracle.n == 2
    assert len(set(keys)) == 2  # the fork's charge is not the original's key


def test_an_unchanged_resume_sent_to_a_checkpoint_the_thread_moved_past_replays(platform: Any) -> None:
    """Where the journal differs from ``@task`` (docs/guarantees.md): a fork whose effect's input is unchanged replays
    its outcome (0 charges); ``@task`` runs it again (1 charge)."""
    platform.setup()
    executed, keys = Counter(), []
    caller, old = approved_then_back(platform.compile(paying_graph(journaled_charge(executed, keys))), f"t-{uuid.uuid4().hex[:8]}")
    out = caller.invoke(Command(resume="yes"), old)
    oracle = Counter()
    task_caller, task_old = approved_then_back(paying_graph(task_charge(oracle)).compile(checkpointer=InMemorySaver()), "t")
    task_caller.invoke(Command(resume="yes"), task_old)
    assert "charged 100" in out["notes"]
    assert (executed.n, oracle.n) == (1, 2)


def test_two_forks_with_other_inputs_each_charge_their_own(platform: Any) -> None:
    """A ``Command`` sent to the old checkpoint, then an ``update_state`` there (a fork checkpoint of its own: LangGraph
    keeps the first fork's update pending on the old checkpoint, so a second ``Command(update=...)`` there is
    refused by LangGraph itself) and a resume of that fork."""
    platform.setup()
    executed, keys = Counter(), []
    caller, old = approved_then_back(platform.compile(paying_graph(journaled_charge(executed, keys))), f"t-{uuid.uuid4().hex[:8]}")
    caller.invoke(Command(update={"amount": 500}, resume="yes"), old)
    fork = caller.update_state(old, {"amount": 700})
    assert "charged 700" in caller.invoke(Command(resume="yes"), fork)["notes"]
    assert executed.values == ["charged 100", "charged 500", "charged 700"]
    assert len(set(keys)) == 3


# -- an edit inside a compiled child (break 5) ----------------------------------------------------------------------


def child_graph(charge: Any, mode: str = "sync", prepared: bool = False) -> StateGraph:
    """The root runs ``case``, a compiled child whose ``pay`` charges, then interrupts (``prepared``: after
    ``prepare``)."""
    root = StateGraph(State)
    root.add_node("case", paying_graph(charge, mode=mode, prepared=prepared).compile())
    root.add_edge(START, "case")
    return root


def interrupted_in_child(platform: Any, charge: Any, mode: str) -> tuple[Caller, dict[str, Any], dict[str, Any]]:
    """A thread of ``child_graph`` charged 100 and stopped at ``pay``'s interrupt: the caller, the root config and
    the child's config (as LangGraph documents it: ``get_state(config, subgraphs=True).tasks[0].state.config``)."""
    platform.setup()
    caller = Caller(platform.compile(child_graph(charge, mode)), mode)
    config = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}
    caller.invoke({"amount": 100}, config)
    return caller, config, caller.get_state(config, subgraphs=True).tasks[0].state.config


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_edit_inside_a_child_that_leaves_the_charge_alone_replays_it(platform: Any, mode: str) -> None:
    """The operator edits the child's state at its interrupt the way LangGraph documents
    (``get_state(config, subgraphs=True).tasks[0].state.config``), leaving the charge's input alone, then resumes:
    one charge, one key, as at the root."""
    executed, keys = Counter(), []
    caller, config, child = interrupted_in_child(platform, journaled_charge(executed, keys, mode), mode)
    caller.update_state(child, {"memo": "checked by a person"})
    out = caller.invoke(Command(resume="yes"), config)
    assert out["notes"] == ["charged 100", "yes", "checked by a person", "after"]
    assert executed.n == 1 and len(set(keys)) == 1


def test_an_edit_inside_a_child_that_changes_the_charge_runs_it_under_a_new_key(platform: Any) -> None:
    executed, keys = Counter(), []
    caller, config, child = interrupted_in_child(platform, journaled_charge(executed, keys), "sync")
    caller.update_state(child, {"amount": 500})
    caller.update_state(caller.get_state(config, subgraphs=True).tasks[0].state.config, {"memo": "twice edited"})
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputChangedWarning)
        out = caller.invoke(Command(resume="yes"), config)
    assert out["notes"][:3] == ["charged 500", "yes", "twice edited"]
    assert executed.values == ["charged 100", "charged 500"] and len(set(keys)) == 2


def test_an_edit_as_the_interrupted_node_inside_a_child_completes_it(platform: Any) -> None:
    """``as_node``: the edit stands for the node's work; the child goes on without running ``pay`` again."""
    executed, keys = Counter(), []
    caller, config, child = interrupted_in_child(platform, journaled_charge(executed, keys), "sync")
    caller.update_state(child, {"notes": ["settled by hand"]}, as_node="pay")
    out = caller.invoke(None, config)
    assert out["notes"] == ["settled by hand", "after"]
    assert executed.n == 1


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_edit_inside_a_child_whose_later_checkpoints_were_lost_replays_the_charge(platform: Any, mode: str) -> None:
    """Under ``durability="async"`` a failed store of a child's checkpoint does not stop its run (LangGraph stores none
    after it) and the child's interrupt hides the error: the thread stops at ``pay``'s interrupt with only the child's
    input checkpoint stored. The edit through the child's config is made there (LangGraph's edit of an input checkpoint
    drops the input, so the operator gives the amount again); it stands for the input step, so the resume's ``pay`` is
    the visit that charged: one charge, one key."""
    executed, keys = Counter(), []
    platform.setup()
    caller = Caller(platform.compile(child_graph(journaled_charge(executed, keys, mode), mode)), mode)
    config = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}
    with injected(CommandFault(stores_child_checkpoint(0))) as fault:
        caller.invoke({"amount": 100}, config, durability="async")
    assert fault.failed == ["upsert checkpoints"]
    child = caller.get_state(config, subgraphs=True).tasks[0].state
    assert child.metadata["source"] == "input"  # what the edit is made at
    # as_node: what LangGraph infers there from 1.2.24 on (an edit of an input checkpoint is its __start__'s); 1.2.0
    # finds it ambiguous
    caller.update_state(child.config, {"amount": 100, "memo": "checked by a person"}, as_node="__start__")
    out = caller.invoke(Command(resume="yes"), config)
    assert out["notes"] == ["charged 100", "yes", "checked by a person", "after"]
    assert executed.n == 1 and len(set(keys)) == 1


def edited_before_the_interrupt(platform: Any, mode: str) -> tuple[Caller, dict[str, Any], Counter, list[str]]:
    """A thread of ``child_graph(prepared=True)`` stopped at ``pay``'s interrupt, the store of the child's checkpoint
    after ``prepare`` failed (``durability="async"``), and edited through the child's config, at the child's latest
    stored checkpoint: the one before ``prepare``."""
    executed, keys = Counter(), []
    platform.setup()
    caller = Caller(platform.compile(child_graph(journaled_charge(executed, keys, mode), mode, prepared=True)), mode)
    config = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}
    with injected(CommandFault(stores_child_checkpoint(1))) as fault:
        caller.invoke({"amount": 100}, config, durability="async")
    assert fault.failed == ["upsert checkpoints"] and executed.n == 1
    child = caller.get_state(config, subgraphs=True).tasks[0].state
    assert child.metadata["step"] == 0  # two steps before pay's interrupt
    caller.update_state(child.config, {"memo": "checked by a person"})
    return caller, config, executed, keys


@pytest.mark.parametrize("durability", ["sync", "async"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_edit_inside_a_child_made_before_its_interrupt_s_step_replays_the_charge(
    platform: Any, mode: str, durability: str
) -> None:
    """The store of the child's checkpoint after ``prepare`` fails under ``durability="async"``: the thread stops at
    ``pay``'s interrupt with the child's latest stored checkpoint the one before ``prepare``. The edit through the
    child's config is made there, and LangGraph runs ``prepare`` again, then ``pay``, each a step later than they
    ran: ``pay`` is the visit that charged (every later checkpoint of the edited run takes the edit's shift on),
    one charge, one key. Before, only the tasks of the edit's own checkpoint were shifted: ``pay`` charged again
    under a new key (seed 4712026 of the explorer). The resume's ``durability="sync"`` stores each checkpoint before
    its tasks run (its shift is read back); ``"async"`` may run ``pay`` while its checkpoint's store is under way."""
    caller, config, executed, keys = edited_before_the_interrupt(platform, mode)
    out = caller.invoke(Command(resume="yes"), config, durability=durability)
    assert out["notes"] == ["prepared", "charged 100", "yes", "checked by a person", "after"]
    assert executed.n == 1 and len(set(keys)) == 1


def test_a_child_s_checkpoint_whose_store_is_under_way_continues_the_edit_before_it(platform: Any) -> None:
    """``continuations`` of a task prepared from a child's checkpoint not stored yet (its store under way under
    ``durability="async"``): the shift of the edited run, from the latest checkpoint of the run stored before it."""
    caller, config, _, _ = edited_before_the_interrupt(platform, "sync")
    edit = caller.get_state(config, subgraphs=True).tasks[0].state.config["configurable"]
    ns, edited = edit["checkpoint_ns"], edit["checkpoint_id"]
    later = str(uuid6(clock_seq=1))  # a newer checkpoint id of the same run, not stored
    assert later > edited
    saver, thread = platform.checkpointer, config["configurable"]["thread_id"]
    assert {at: stored.shift for at, stored in saver.continuations(thread, {ns: later}).items()} == {ns: 1}
    assert {at: stored.shift for at, stored in saver.continuations(thread, {ns: edited}).items()} == {ns: 1}


# -- a run started from a child's checkpoint (break 6) --------------------------------------------------------------


@pytest.mark.parametrize("given", ["none", "resume"])
def test_a_run_started_from_a_child_s_checkpoint_is_refused_before_anything_runs(platform: Any, given: str) -> None:
    platform.setup()
    executed, keys = Counter(), []
    graph = platform.compile(child_graph(journaled_charge(executed, keys)))
    config = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}
    graph.invoke({"amount": 100}, config)
    child = graph.get_state(config, subgraphs=True).tasks[0].state.config
    with pytest.raises(TopologyError, match="running from a child's checkpoint is not supported") as refused:
        graph.invoke(None if given == "none" else Command(resume="yes"), child)
    assert "compiled with checkpointer=False" not in str(refused.value)
    assert executed.n == 1  # nothing ran again
    assert graph.invoke(Command(resume="yes"), config)["notes"][-1] == "after"  # the thread resumes from the root
    assert executed.n == 1


@pytest.mark.parametrize("stored_by", ["this version", pytest.param("0.4.0", id="stored by 0.4.0")])
def test_every_visit_after_an_edit_inside_a_child_completed_its_node_is_new(
    make_platform: Any, compile_form: str, stored_by: str
) -> None:
    """``as_node`` at ``pay``'s interrupt completes it, and the child loops back to ``pay`` twice: each visit after the
    edit is new, three charges under three keys. The edit stands for the checkpoint after ``pay``, so the run's later
    steps keep their numbers. 0.4.0 stored such an edit as a shift of one with ``pay`` completed (kept for ``pay``'s
    next visit only); the run's later checkpoints take no shift from it, so a visit never meets the one before's."""
    def platform() -> Any:
        made = make_platform()
        return made if compile_form == "platform.compile" else PlainCompile(made)

    first = platform()
    first.setup()
    executed, keys = Counter(), []
    charge = journaled_charge(executed, keys)

    def pay(state: State) -> State:
        done = charge(state["amount"])
        return {"notes": [done, interrupt("approve?")]}

    child = StateGraph(State)
    child.add_node("pay", pay)
    child.add_edge(START, "pay")
    child.add_conditional_edges("pay", lambda state: "pay" if len(state["notes"]) < 5 else "__end__", ["pay", "__end__"])
    root = StateGraph(State)
    root.add_node("case", child.compile())
    root.add_edge(START, "case")
    config = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}
    caller = Caller(first.compile(root), "sync")
    caller.invoke({"amount": 100}, config)
    edit = caller.update_state(caller.get_state(config, subgraphs=True).tasks[0].state.config, {"notes": ["settled by hand"]}, as_node="pay")
    db = first.checkpointer.client[first.checkpointer.db_name]
    stored = db.checkpoints.find_one({k: edit["configurable"][k] for k in ("thread_id", "checkpoint_ns", "checkpoint_id")})
    assert stored.get("shift") is None and stored.get("completed") is None  # it stands for the checkpoint after pay
    if stored_by == "0.4.0":
        db.checkpoints.update_one({"_id": stored["_id"]}, {"$set": {"shift": 1, "completed": ["pay"]}})
        caller = Caller(platform().compile(root), "sync")  # another process on the same database: nothing remembered
    caller.invoke(None, config)
    caller.invoke(Command(resume="yes"), config)
    out = caller.invoke(Command(resume="yes"), config)
    assert out["notes"] == ["settled by hand", "charged 100", "yes", "charged 100", "yes"]
    assert executed.n == 3 and len(set(keys)) == 3


def test_a_checkpoint_known_superseded_stays_so_when_read_again() -> None:
    from langgraph_durable_mongodb.checkpointer.remembered import StoredCheckpoints

    stored = StoredCheckpoints()
    stored.note("t", "", [{"checkpoint_id": "c1"}], written=True)
    stored.supersede("t", "c1")
    stored.note("t", "", [{"checkpoint_id": "c1"}])  # read again (a list, a get_state)
    known = stored.root("t", "c1")
    assert known is not None and known.superseded and not known.written
