"""Real graphs (InMemorySaver at the root) resolving their nodes inside a durable scope."""

from __future__ import annotations

import asyncio
import operator
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, RetryPolicy, Send, interrupt

from langgraph_durable_mongodb._langgraph import checkpoint_of
from langgraph_durable_mongodb.errors import NamespaceError, NoDurableScopeError, TopologyError
from langgraph_durable_mongodb.journal.labels import labelled
from langgraph_durable_mongodb.resolver import (
    DurableScope,
    DurableSubgraphResolver,
    NodePosition,
    current_durable_scope,
    durable_scope,
    maybe_durable_scope,
    scoped_aiter,
    scoped_iter,
    visit_position,
)


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    k: int
    visits: int


class LogState(TypedDict):
    log: Annotated[list[str], operator.add]


class Flaky(Exception):
    """Raised once by nodes that a RetryPolicy retries."""


class Journal:
    """Stands in for the activity journal: records where each node's effects would go, and reads them as labels."""

    def __init__(self) -> None:
        self.positions: list[NodePosition] = []
        self.namespaces: list[str] = []
        self.lock = threading.Lock()

    def _entries(self) -> list[dict[str, Any]]:
        start = datetime(2026, 1, 1)
        return [
            {"path": p.path, "node": p.node, "occurrence": p.occurrence, "root_key": p.root_key, "created_at": start + timedelta(seconds=n)}
            for n, p in enumerate(self.positions)
        ]

    @property
    def seen(self) -> list[str]:
        """Every position met, as labels, in the order met."""
        with self.lock:
            return [f"{e['path']} {e['node']}#{e['occurrence']}" for e in labelled(self._entries())]

    def _record(self, config: dict, position: NodePosition) -> str:
        with self.lock:
            self.positions.append(position)
            self.namespaces.append(config["configurable"]["checkpoint_ns"])
        return self.seen[-1]

    def here(self) -> str:
        config = get_config()
        resolved = current_durable_scope().resolve_current(config)
        root = checkpoint_of(config["configurable"], "")
        return self._record(config, visit_position(config["configurable"]["thread_id"], resolved, root_key=root))

    async def ahere(self) -> str:
        return self.here()


@pytest.fixture
def journal() -> Journal:
    return Journal()


def chain(nodes: dict[str, Any], checkpointer: Any = None, state: type = State, **edges: Any) -> Any:
    builder = StateGraph(state)
    previous = START
    for name, action in nodes.items():
        builder.add_node(name, action, **edges.get(name, {}))
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder.compile(checkpointer=checkpointer)


def recording(journal: Journal) -> Callable[[State], dict]:
    def node(state: State) -> dict:
        return {"log": [journal.here()]}

    return node


def config(thread_id: str = "t1") -> dict:
    return {"configurable": {"thread_id": thread_id}}


def example_graph(journal: Journal) -> Any:
    policy = chain({"review_policy": recording(journal)})
    case = chain({"policy_analysis": policy})
    return chain({"case_investigation": case}, checkpointer=InMemorySaver())


def test_concrete_example_and_a_second_invoke(journal: Journal) -> None:
    graph = example_graph(journal)
    resolver = DurableSubgraphResolver.from_graph(graph)
    with durable_scope(resolver):
        graph.invoke({"log": []}, config())
    with durable_scope(resolver):
        graph.invoke({"log": []}, config())  # new input, same thread: new occurrences
    assert journal.seen == [
        "agent/1/case_investigation/1/policy_analysis/1 review_policy#1",
        "agent/1/case_investigation/2/policy_analysis/1 review_policy#1",
    ]
    assert journal.namespaces[0].count("|") == 2


def test_loop_visits_get_successive_ordinals(journal: Journal) -> None:
    inner = StateGraph(State)
    inner.add_node("think", recording(journal))
    inner.add_node("count", lambda s: {"visits": s.get("visits", 0) + 1})
    inner.add_edge(START, "think")
    inner.add_edge("think", "count")
    inner.add_conditional_edges("count", lambda s: "think" if s["visits"] < 2 else END)  # loop inside a child
    case = inner.compile()
    root = StateGraph(State)
    root.add_node("case", case)
    root.add_node("again", lambda s: {"visits": 0})
    root.add_edge(START, "case")
    root.add_conditional_edges("case", lambda s: "again" if len(s["log"]) < 4 else END)  # loop at the root
    root.add_edge("again", "case")
    graph = root.compile(checkpointer=InMemorySaver())
    with durable_scope(DurableSubgraphResolver.from_graph(graph)):
        graph.invoke({"log": [], "visits": 0}, config())
    assert journal.seen == [
        "agent/1/case/1 think#1",
        "agent/1/case/1 think#2",
        "agent/1/case/2 think#1",
        "agent/1/case/2 think#2",
    ]


def send_graph(journal: Journal, order: list[int]) -> Any:
    """plan -> Send('worker', {'k': k}) for k in 0..2; the workers reach the allocator in ``order``."""
    turns = {k: asyncio.Event() for k in order}
    turns[order[0]].set()

    class WorkerState(TypedDict, total=False):
        k: int
        log: Annotated[list[str], operator.add]

    async def review(state: WorkerState) -> dict:
        k = state["k"]
        await asyncio.wait_for(turns[k].wait(), 5)
        text = await journal.ahere()
        if order.index(k) + 1 < len(order):
            turns[order[order.index(k) + 1]].set()
        return {"log": [f"{k}={text}"]}

    worker = chain({"review": review}, state=WorkerState)
    builder = StateGraph(LogState)
    builder.add_node("plan", lambda s: {})
    builder.add_node("worker", worker)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", lambda s: [Send("worker", {"k": k}) for k in range(3)])
    builder.add_edge("worker", END)
    return builder.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize("order", [[0, 1, 2], [2, 1, 0], [1, 2, 0]])
async def test_send_fan_out_identities_do_not_depend_on_arrival_order(order: list[int]) -> None:
    journal = Journal()
    graph = send_graph(journal, order)
    with durable_scope(DurableSubgraphResolver.from_graph(graph)):
        out = await graph.ainvoke({"log": []}, config())
    assert sorted(out["log"]) == [
        "0=agent/1/worker/1.0 review#1",
        "1=agent/1/worker/1.1 review#1",
        "2=agent/1/worker/1.2 review#1",
    ]
    assert [int(text.split("/")[3].split(".")[1].split(" ")[0]) for text in journal.seen] == order  # arrival order


def test_function_node_running_two_subgraphs(journal: Journal) -> None:
    first = chain({"a_leaf": recording(journal)})
    second = chain({"b_leaf": recording(journal)})

    def caller(state: State) -> dict:
        journal.here()
        first.invoke({"log": []})
        second.invoke({"log": []})
        return {}

    graph = chain({"caller": caller}, checkpointer=InMemorySaver())
    with durable_scope(DurableSubgraphResolver.from_graph(graph)):
        graph.invoke({"log": []}, config())
    assert journal.seen == ["agent/1 caller#1", "agent/1/caller/1 a_leaf#1", "agent/1/caller/1+1 b_leaf#1"]
    assert journal.namespaces[2].split("|")[1] == "1"  # LangGraph's subgraph counter


def test_retry_of_a_compiled_child_resolves_to_the_first_attempts_path(journal: Journal) -> None:
    failures = [Flaky()]

    def review(state: State) -> dict:
        journal.here()
        if failures:
            raise failures.pop()
        return {}

    case = chain({"review": review})
    graph = chain(
        {"case": case},
        checkpointer=InMemorySaver(),
        case={"retry_policy": RetryPolicy(retry_on=Flaky, initial_interval=0.001)},
    )
    with durable_scope(DurableSubgraphResolver.from_graph(graph)):
        graph.invoke({"log": []}, config())
    first_ns, second_ns = journal.namespaces
    assert second_ns.split("|")[1] == "1" and "|1|" not in first_ns  # attempt 2 runs the child under case:T|1
    assert first_ns.rsplit(":", 1)[1] != second_ns.rsplit(":", 1)[1]  # the restarted child has new task ids
    assert journal.seen == ["agent/1/case/1 review#1", "agent/1/case/1 review#1"]


def test_retry_at_depth_three_keeps_every_identity(journal: Journal) -> None:
    failures = [Flaky()]

    def review(state: State) -> dict:
        journal.here()
        if failures:
            raise failures.pop()
        return {}

    case = chain({"prepare": lambda s: {}, "policy": chain({"review": review})})
    retry = {"retry_policy": RetryPolicy(retry_on=Flaky, initial_interval=0.001)}
    graph = chain({"intake": lambda s: {}, "case": case}, checkpointer=InMemorySaver(), case=retry)
    with durable_scope(DurableSubgraphResolver.from_graph(graph)):
        graph.invoke({"log": []}, config())
    first, second = journal.namespaces
    assert "|1|policy:" in second and first.split("|")[1] != second.split("|")[2]  # new task ids, same identities
    assert journal.seen == ["agent/1/case/1/policy/1 review#1"] * 2


def test_retry_of_a_node_keeps_its_occurrence(journal: Journal) -> None:
    failures = [Flaky()]

    def review(state: State) -> dict:
        journal.here()
        if failures:
            raise failures.pop()
        return {}

    case = chain({"review": review}, review={"retry_policy": RetryPolicy(retry_on=Flaky, initial_interval=0.001)})
    graph = chain({"case": case}, checkpointer=InMemorySaver())
    with durable_scope(DurableSubgraphResolver.from_graph(graph)):
        graph.invoke({"log": []}, config())
    assert journal.seen == ["agent/1/case/1 review#1", "agent/1/case/1 review#1"]


def test_retry_of_a_function_node_running_two_subgraphs(journal: Journal) -> None:
    first = chain({"a_leaf": recording(journal)})
    second = chain({"b_leaf": recording(journal)})
    failures = [Flaky()]

    def caller(state: State) -> dict:
        first.invoke({"log": []})
        second.invoke({"log": []})
        if failures:
            raise failures.pop()
        return {}

    graph = chain(
        {"caller": caller},
        checkpointer=InMemorySaver(),
        caller={"retry_policy": RetryPolicy(retry_on=Flaky, initial_interval=0.001)},
    )
    with durable_scope(DurableSubgraphResolver.from_graph(graph)):
        graph.invoke({"log": []}, config())
    # LangGraph numbers the four subgraph runs 0, 1, 2, 3; attempt 2 resolves like attempt 1.
    assert [ns.split("|")[1] if ns.count("|") == 2 else "0" for ns in journal.namespaces] == ["0", "1", "2", "3"]
    assert journal.seen == ["agent/1/caller/1 a_leaf#1", "agent/1/caller/1+1 b_leaf#1"] * 2


def test_parallel_branches_in_one_step(journal: Journal) -> None:
    builder = StateGraph(State)
    builder.add_node("left", chain({"leaf": recording(journal)}))
    builder.add_node("right", chain({"leaf": recording(journal)}))
    builder.add_node("plain", recording(journal))
    for name in ("left", "right", "plain"):
        builder.add_edge(START, name)
    graph = builder.compile(checkpointer=InMemorySaver())
    with durable_scope(DurableSubgraphResolver.from_graph(graph)):
        graph.invoke({"log": []}, config())
    assert sorted(journal.seen) == ["agent/1 plain#1", "agent/1/left/1 leaf#1", "agent/1/right/1 leaf#1"]


def depth_three_graph(journal: Journal, with_async: bool = True) -> Any:
    """root -> l1 -> l2 -> l3 -> sync_leaf (thread pool under async) -> async_leaf (if ``with_async``)."""

    async def async_leaf(state: State) -> dict:
        return {"log": [await journal.ahere()]}

    def sync_leaf(state: State) -> dict:
        return {
            "log": [f"{journal.here()} @{'main' if threading.current_thread() is threading.main_thread() else 'pool'}"]
        }

    l3 = chain({"sync_leaf": sync_leaf, "async_leaf": async_leaf if with_async else recording(journal)})
    return chain({"l1": chain({"l2": chain({"l3": l3})})}, checkpointer=InMemorySaver())


async def test_depth_three_async_and_thread_pool_nodes(journal: Journal) -> None:
    graph = depth_three_graph(journal)
    with durable_scope(DurableSubgraphResolver.from_graph(graph)):
        out = await graph.ainvoke({"log": []}, config())
    assert out["log"] == ["agent/1/l1/1/l2/1/l3/1 sync_leaf#1 @pool", "agent/1/l1/1/l2/1/l3/1 async_leaf#1"]


def test_stream_binds_the_scope_for_every_step(journal: Journal) -> None:
    graph = depth_three_graph(journal, with_async=False)
    scope = DurableScope(DurableSubgraphResolver.from_graph(graph))
    stream = graph.stream({"log": []}, config(), stream_mode="updates", subgraphs=True)
    chunks = list(scoped_iter(scope, stream))
    assert len(chunks) >= 4
    assert journal.seen == ["agent/1/l1/1/l2/1/l3/1 sync_leaf#1", "agent/1/l1/1/l2/1/l3/1 async_leaf#1"]
    assert maybe_durable_scope() is None


async def test_astream_pulled_from_different_asyncio_tasks(journal: Journal) -> None:
    graph = depth_three_graph(journal)
    scope = DurableScope(DurableSubgraphResolver.from_graph(graph))
    chunks = scoped_aiter(scope, graph.astream({"log": []}, config(), stream_mode="updates", subgraphs=True))
    pulled_by: set[str] = set()

    async def pull() -> Any:
        pulled_by.add(asyncio.current_task().get_name())
        return await chunks.__anext__()

    count = 0
    while True:
        try:
            await asyncio.create_task(pull())  # each step resumes the generator in a new task
        except StopAsyncIteration:
            break
        count += 1
    assert count >= 4 and len(pulled_by) == count + 1
    assert journal.seen == ["agent/1/l1/1/l2/1/l3/1 sync_leaf#1", "agent/1/l1/1/l2/1/l3/1 async_leaf#1"]


def test_interrupt_and_resume_keep_positions(journal: Journal) -> None:
    def review(state: State) -> dict:
        journal.here()
        return {"log": [interrupt("approve?")]}

    graph = chain({"case": chain({"policy": chain({"review": review})})}, checkpointer=InMemorySaver())
    with durable_scope(DurableSubgraphResolver.from_graph(graph)):
        assert "__interrupt__" in graph.invoke({"log": []}, config())
    with durable_scope(DurableSubgraphResolver.from_graph(graph)):
        assert graph.invoke(Command(resume="yes"), config())["log"] == ["yes"]
    assert journal.seen == ["agent/1/case/1/policy/1 review#1"] * 2


def test_outside_any_scope(journal: Journal) -> None:
    observed = []

    def node(state: State) -> dict:
        observed.append(maybe_durable_scope())
        with pytest.raises(NoDurableScopeError, match="no durable scope is bound: compile the graph with the platform checkpointer"):
            current_durable_scope()
        return {}

    graph = chain({"case": chain({"node": node})}, checkpointer=InMemorySaver())
    graph.invoke({"log": []}, config())
    assert observed == [None]
    scope = DurableScope(DurableSubgraphResolver.from_graph(graph))
    with pytest.raises(NamespaceError, match="outside a LangGraph node"):
        scope.resolve_current()


def test_scope_bound_inside_a_node_cannot_resolve_children(journal: Journal) -> None:
    resolver_box: dict[str, Any] = {}
    outcomes = []

    def late(state: State) -> dict:
        with durable_scope(resolver_box["resolver"]):
            try:
                outcomes.append(journal.here())
            except NoDurableScopeError as error:
                outcomes.append(str(error))
        return {}

    builder = StateGraph(State)
    builder.add_node("top", late)
    builder.add_node("case", chain({"inner": late}))
    builder.add_edge(START, "top")
    builder.add_edge("top", "case")
    graph = builder.compile(checkpointer=InMemorySaver())
    resolver_box["resolver"] = DurableSubgraphResolver.from_graph(graph)
    graph.invoke({"log": []}, config())
    assert outcomes[0] == "agent/1 top#1"
    assert outcomes[1].startswith("the durable scope did not see task 'case' (case:")
    assert "bind the scope around the whole graph call" in outcomes[1]


def test_scope_refuses_an_unsupported_topology() -> None:
    graph = chain({"child": chain({"x": lambda s: {}}, checkpointer=True)}, checkpointer=InMemorySaver())
    resolver = DurableSubgraphResolver.from_graph(graph)
    with pytest.raises(TopologyError, match="child 'child' was compiled with checkpointer=True"):
        DurableScope(resolver)
    assert maybe_durable_scope() is None


def fan_out_to_tool(journal: Journal, checkpointer: Any = None) -> Any:
    def tool(state: dict) -> dict:
        return {"log": [f"{state['k']}={journal.here()}"]}

    builder = StateGraph(LogState)
    builder.add_node("plan", lambda s: {})
    builder.add_node("tool", tool)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", lambda s: [Send("tool", {"k": k}) for k in range(3)])
    return builder.compile(checkpointer=checkpointer)


def test_send_to_an_ordinary_node_numbers_its_occurrences_by_send_index(journal: Journal) -> None:
    graph = fan_out_to_tool(journal, checkpointer=InMemorySaver())
    with durable_scope(DurableSubgraphResolver.from_graph(graph)):
        out = graph.invoke({"log": []}, config())
    assert sorted(out["log"]) == ["0=agent/1 tool#1.0", "1=agent/1 tool#1.1", "2=agent/1 tool#1.2"]


def test_send_inside_a_child_run(journal: Journal) -> None:
    graph = chain({"first": fan_out_to_tool(journal), "second": fan_out_to_tool(journal)}, checkpointer=InMemorySaver())
    with durable_scope(DurableSubgraphResolver.from_graph(graph)):
        graph.invoke({"log": []}, config())
    assert sorted(journal.seen) == [f"agent/1/{child}/1 tool#1.{k}" for child in ("first", "second") for k in range(3)]
