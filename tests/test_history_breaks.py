"""The breaks issue 32 measured, one named test each: a later visit must never get an earlier visit's outcome, an
idempotency key must name one effect only, an ``at_most_once`` effect that returned must never become an unknown
outcome, and effects must never run unjournaled where the user expects durability.

Every test counts the REAL executions of its effects and reads the value each node got back. "Another process" is
a new ``DurablePlatform`` on the same database (nothing of the first one's memory); the child-process forms
(SIGKILL) are in ``test_history_kills.py``. Faults are injected at the interpreters' seam (tests/command_faults.py).

Each failed on main at 37385b2, before positions were keyed by LangGraph's identity of the work.
"""

from __future__ import annotations

import asyncio
import operator
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph
from langgraph.types import RetryPolicy

from langgraph_durable_mongodb import NoDurableScopeError
from langgraph_durable_mongodb.journal import current_effect, effect
from langgraph_durable_mongodb.platform import DurablePlatform

from .clients import PlainCompile
from .command_faults import CommandFault, injected, stores_root_checkpoint
from .graphs import config

#: Every test runs on ``platform.compile(builder)`` and on ``builder.compile(checkpointer=platform.checkpointer)``.
pytestmark = pytest.mark.both_compile_forms

MODES = ["sync", "async"]


class Notes(TypedDict, total=False):
    notes: Annotated[list, operator.add]


class Charges:
    """A payment effect that counts its real executions: ``charge(ref)`` returns ``charged-<ref>``."""

    def __init__(self, *, at_most_once: bool = False) -> None:
        self.made: list[str] = []
        self.keys: dict[str, str] = {}  # the key of each ref's first execution
        self.every_key: list[str] = []  # the key of every execution

        @effect(kind="payment", name="charge", at_most_once=at_most_once)
        def charge(ref: str) -> str:
            return self._made(ref)

        @effect(kind="payment", name="charge", at_most_once=at_most_once)
        async def acharge(ref: str) -> str:
            return self._made(ref)

        self.sync, self.async_ = charge, acharge

    def _made(self, ref: str) -> str:
        self.made.append(ref)
        self.every_key.append(current_effect().idempotency_key)
        self.keys.setdefault(ref, self.every_key[-1])
        return f"charged-{ref}"


def visit_of(state: Notes, node: str) -> int:
    """The visit of ``node`` this is, counted from its own notes (``<node>:<visit>:<value>``)."""
    return sum(1 for n in state.get("notes", []) if n.startswith(f"{node}:")) + 1


def charging_node(node: str, charges: Charges, mode: str, ref: Any = None) -> Any:
    """A node that charges ``<node><visit>`` (or ``ref(visit)``) and notes ``<node>:<visit>:<what it got back>``."""

    def what(state: Notes) -> tuple[int, str]:
        visit = visit_of(state, node)
        return visit, ref(visit) if ref else f"{node}{visit}"

    def sync_node(state: Notes) -> Notes:
        visit, charge_ref = what(state)
        return {"notes": [f"{node}:{visit}:{charges.sync(charge_ref)}"]}

    async def async_node(state: Notes) -> Notes:
        visit, charge_ref = what(state)
        return {"notes": [f"{node}:{visit}:{await charges.async_(charge_ref)}"]}

    return sync_node if mode == "sync" else async_node


def got_back(notes: list[str], node: str) -> list[tuple[int, str]]:
    """``(visit, value)`` of each note ``node`` wrote."""
    return [(int(n.split(":")[1]), n.split(":", 2)[2]) for n in notes if n.startswith(f"{node}:")]


def same_form(platform: Any, made: DurablePlatform) -> Any:
    """``made`` compiling as ``platform`` does (both compile forms)."""
    return PlainCompile(made) if isinstance(platform, PlainCompile) else made


async def run(graph: Any, mode: str, value: Any, thread: str = "case-42", **options: Any) -> Any:
    if mode == "async":
        return await graph.ainvoke(value, config(thread), **options)
    return graph.invoke(value, config(thread), **options)


# -- item 1: a later visit replays an earlier visit's outcome --------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_a_parallel_sibling_failed_and_another_process_resumes_the_second_visit_charges_anew(
    platform: Any, make_platform: Any, mode: str
) -> None:
    """Step 1 runs ``a`` and ``b``; ``b`` raises, ``a``'s writes are saved; another process resumes: ``b`` runs,
    then ``a``'s second visit must charge ``a2`` for real."""
    charges, failures = Charges(), []

    def b(state: Notes) -> Notes:
        if not failures:
            failures.append("b")
            raise RuntimeError("b fails once")
        return {"notes": ["b:1:ok"]}

    async def ab(state: Notes) -> Notes:
        # LangGraph cancels an async sibling when one fails: b fails once a's charge ran (a's first effect waits
        # for its root checkpoint's store, which may take longer than b on a real server)
        for _ in range(500):
            if charges.made or failures:
                break
            await asyncio.sleep(0.01)
        return b(state)

    def builder() -> StateGraph:
        graph = StateGraph(Notes)
        graph.add_node("a", charging_node("a", charges, mode))
        graph.add_node("b", b if mode == "sync" else ab)
        graph.add_edge(START, "a")
        graph.add_edge(START, "b")
        graph.add_edge("b", "a")
        return graph

    with pytest.raises(RuntimeError, match="b fails once"):
        await run(platform.compile(builder()), mode, {"notes": []})
    assert charges.made == ["a1"]
    other = same_form(platform, make_platform())
    result = await run(other.compile(builder()), mode, None)
    assert charges.made == ["a1", "a2"]
    assert got_back(result["notes"], "a") == [(1, "charged-a1"), (2, "charged-a2")]


def looping_builder(node: Any, visits: int) -> StateGraph:
    """``x`` loops on itself until it has made ``visits`` visits."""
    graph = StateGraph(Notes)
    graph.add_node("x", node)
    graph.add_edge(START, "x")
    graph.add_conditional_edges("x", lambda s: "x" if visit_of(s, "x") <= visits else "__end__")
    return graph


@pytest.mark.parametrize("mode", MODES)
async def test_a_loop_whose_step_checkpoint_failed_charges_its_third_visit_anew_in_another_process(
    platform: Any, make_platform: Any, mode: str
) -> None:
    """``x`` loops; step 1 (its second visit) is saved, the store of the step-2 root checkpoint fails; another
    process resumes: the third visit must charge ``3`` for real. (``durability="sync"``: the store fails before the
    third visit can start. The SIGKILL form is in ``test_history_kills.py``.)"""
    durability = "sync"
    charges = Charges()
    builder = looping_builder(charging_node("x", charges, mode, ref=str), visits=3)
    with injected(CommandFault(stores_root_checkpoint(2))) as fault, pytest.raises(Exception, match="injected"):
        await run(platform.compile(builder), mode, {"notes": []}, durability=durability)
    assert fault.failed == ["upsert checkpoints"]
    assert charges.made[:2] == ["1", "2"]
    other = same_form(platform, make_platform())
    result = await run(other.compile(builder), mode, None, durability=durability)
    assert charges.made == ["1", "2", "3"]
    assert got_back(result["notes"], "x") == [(1, "charged-1"), (2, "charged-2"), (3, "charged-3")]


@pytest.mark.parametrize("mode", MODES)
async def test_a_lost_reply_of_a_stored_step_checkpoint_never_hands_the_next_visit_the_last_charge(
    platform: Any, mode: str
) -> None:
    """``durability="async"``: the step-2 root checkpoint is written but its reply is lost; the same process
    resumes: the 4th visit must charge ``4`` for real, never get ``charged-3`` back."""
    charges, third_charged = Charges(), threading.Event()

    def ref(visit: int) -> str:
        if visit == 3:
            third_charged.set()  # the call is made: the store of step 2 may now fail (as it did, at random, in the issue)
        return str(visit)

    graph = platform.compile(looping_builder(charging_node("x", charges, mode, ref=ref), visits=4))
    fault = CommandFault(stores_root_checkpoint(2), lost_reply=True, after=third_charged)
    with injected(fault), pytest.raises(Exception, match="injected"):
        await run(graph, mode, {"notes": []}, durability="async")
    assert fault.failed == ["upsert checkpoints"]
    result = await run(graph, mode, None, durability="async")
    assert sorted(set(charges.made)) == ["1", "2", "3", "4"]
    assert charges.made.count("4") == 1
    assert got_back(result["notes"], "x") == [(v, f"charged-{v}") for v in (1, 2, 3, 4)]


# -- item 2: idempotency keys a payment provider can trust ----------------------------------------------------


def pay_builder(charges: Charges, mode: str, ref: str = "order-1") -> StateGraph:
    graph = StateGraph(Notes)
    graph.add_node("pay", charging_node("pay", charges, mode, ref=lambda visit: ref))
    graph.add_edge(START, "pay")
    return graph


@pytest.mark.parametrize("mode", MODES)
async def test_a_new_payment_on_a_reused_thread_id_gets_a_new_key(platform: Any, mode: str) -> None:
    charges = Charges()
    graph = platform.compile(pay_builder(charges, mode, ref="order-1"))
    await run(graph, mode, {"notes": []}, "customer-7")
    if mode == "sync":
        platform.checkpointer.delete_thread("customer-7")
    else:
        await platform.checkpointer.adelete_thread("customer-7")
    graph = platform.compile(pay_builder(charges, mode, ref="order-2"))
    await run(graph, mode, {"notes": []}, "customer-7")
    assert charges.made == ["order-1", "order-2"]
    assert charges.keys["order-1"] != charges.keys["order-2"]


@pytest.mark.parametrize("mode", MODES)
async def test_two_databases_give_different_payments_different_keys(store: Any, compile_form: str, mode: str) -> None:
    """Staging and production (or two tenants) on one provider account: same thread id, same graph, two payments."""
    charges = Charges()
    for i, db_name in enumerate([store.db_name, store.db_name + "_b"]):
        made = DurablePlatform(store.client, async_client=store.async_client, db_name=db_name)
        platform = made if compile_form == "platform.compile" else PlainCompile(made)
        await run(platform.compile(pay_builder(charges, mode, ref=f"order-{i}")), mode, {"notes": []}, "customer-7")
    store.client.drop_database(store.db_name + "_b")
    assert charges.made == ["order-0", "order-1"]
    assert charges.keys["order-0"] != charges.keys["order-1"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_copied_thread_s_new_payment_gets_a_new_key(platform: Any, mode: str) -> None:
    """``copy_thread`` then a new run on the copy: its new payment is not the source's, and has its own key."""
    charges = Charges()
    await run(platform.compile(pay_builder(charges, mode, ref="order-1")), mode, {"notes": []}, "source")
    if mode == "sync":
        platform.checkpointer.copy_thread("source", "target")
    else:
        await platform.checkpointer.acopy_thread("source", "target")
    result = await run(platform.compile(pay_builder(charges, mode, ref="order-2")), mode, {"notes": []}, "target")
    assert charges.made == ["order-1", "order-2"]
    assert charges.keys["order-1"] != charges.keys["order-2"]
    assert got_back(result["notes"], "pay") == [(1, "charged-order-1"), (2, "charged-order-2")]


@pytest.mark.parametrize("mode", MODES)
async def test_one_effect_keeps_one_key_through_a_crash_mid_effect_and_a_retry(platform: Any, mode: str) -> None:
    """The same key on every re-execution of one effect: a failure mid-effect then a resume, and a RetryPolicy
    retry of a node that failed after it."""
    keys: list[str] = []
    failures: list[str] = []

    def charge_once_failing(stage: str) -> str:
        keys.append(current_effect().idempotency_key)
        if stage not in failures:
            failures.append(stage)
            raise ConnectionError(f"the provider dropped the {stage} charge mid-call")
        return f"charged-{stage}"

    sync_charge = effect(kind="payment", name="charge")(charge_once_failing)

    @effect(kind="payment", name="charge")
    async def async_charge(stage: str) -> str:
        return charge_once_failing(stage)

    def crash(state: Notes) -> Notes:
        return {"notes": [sync_charge("crash")]}

    async def acrash(state: Notes) -> Notes:
        return {"notes": [await async_charge("crash")]}

    def retried(state: Notes) -> Notes:
        return {"notes": [sync_charge("retry")]}

    async def aretried(state: Notes) -> Notes:
        return {"notes": [await async_charge("retry")]}

    builder = StateGraph(Notes)
    builder.add_node("crash", crash if mode == "sync" else acrash)
    builder.add_node("retried", retried if mode == "sync" else aretried, retry_policy=RetryPolicy(max_attempts=3, initial_interval=0.01, retry_on=ConnectionError))
    builder.add_edge(START, "crash")
    builder.add_edge("crash", "retried")
    graph = platform.compile(builder)
    with pytest.raises(ConnectionError):
        await run(graph, mode, {"notes": []})
    result = await run(graph, mode, None)
    assert result["notes"] == ["charged-crash", "charged-retry"]
    assert len(keys) == 4 and keys[0] == keys[1] and keys[2] == keys[3] and keys[0] != keys[2]


# -- item 4: no effect runs unjournaled where the user expects durability -------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_a_graph_without_checkpointer_run_from_a_bare_pool_in_a_durable_node_is_refused(platform: Any, mode: str) -> None:
    """A durable node runs a graph compiled without any checkpointer in a ``ThreadPoolExecutor`` that does not copy
    its context: the nested effects must raise ``NoDurableScopeError`` naming ``contextvars``, and not run."""
    charges = Charges()
    nested = StateGraph(Notes)
    nested.add_node("inner", charging_node("inner", charges, "sync", ref=lambda visit: "nested"))
    nested.add_edge(START, "inner")
    compiled = nested.compile()

    def outer(state: Notes) -> Notes:
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(compiled.invoke, {"notes": []}).result()

    async def aouter(state: Notes) -> Notes:
        with ThreadPoolExecutor(1) as pool:
            return await asyncio.get_running_loop().run_in_executor(pool, compiled.invoke, {"notes": []})

    builder = StateGraph(Notes)
    builder.add_node("outer", outer if mode == "sync" else aouter)
    builder.add_edge(START, "outer")
    with pytest.raises(NoDurableScopeError, match="contextvars"):
        await run(platform.compile(builder), mode, {"notes": []})
    assert charges.made == []


def agent_server_stateless_config() -> dict[str, Any]:
    """The config langgraph-api gives a stateless run (``client.runs.stream(None, "agent", ...)``): its markers, and
    the temporary thread it runs on with ``checkpointer=None``."""
    ids = {"run_id": "1f0c0000-0000-6000-8000-000000000001", "assistant_id": "fe096781-5601-53d2-b2f6-0d3403f7e9ca"}
    return {
        "configurable": {"thread_id": "1f0c0000-0000-6000-8000-0000000000aa", "graph_id": "agent", **ids},
        "metadata": {"graph_id": "agent", "run_attempt": 1, "langgraph_api_version": "0.16.7", **ids},
    }


@pytest.mark.parametrize("mode", MODES)
async def test_an_agent_server_stateless_run_keeps_running_its_effects_unjournaled(mode: str) -> None:
    charges = Charges(at_most_once=True)
    graph = pay_builder(charges, mode).compile()  # Agent Server compiles it with checkpointer=None
    for _ in range(2):
        if mode == "sync":
            result = graph.invoke({"notes": []}, agent_server_stateless_config())
        else:
            result = await graph.ainvoke({"notes": []}, agent_server_stateless_config())
        assert got_back(result["notes"], "pay") == [(1, "charged-order-1")]
    assert charges.made == ["order-1", "order-1"]  # nothing to resume, so nothing replays: each run charges
    assert len(set(charges.every_key)) == 2  # and each call has a fresh key
