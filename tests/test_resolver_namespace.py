"""Namespace parsing and resolution against a discovered topology (the string alone)."""

from __future__ import annotations

import operator
import uuid
from datetime import datetime, timedelta
from typing import Annotated, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from langgraph_durable_mongodb.errors import NamespaceError
from langgraph_durable_mongodb.journal.labels import labelled
from langgraph_durable_mongodb.resolver import (
    ChildOperationBoundary,
    DurableSubgraphResolver,
    NamespaceSegment,
    ResolvedNamespace,
    parse_namespace,
    visit_position,
)


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _noop(state: State) -> dict:
    return {}


def _chain(*names: str, child: object = None) -> object:
    """A compiled graph running ``names`` in order; ``child`` (if given) is added as node 'child'."""
    builder = StateGraph(State)
    previous = START
    for name in names:
        builder.add_node(name, child if name == "child" else _noop)
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder.compile()


POLICY = _chain("review_policy")
CASE_BUILDER = StateGraph(State)
CASE_BUILDER.add_node("policy_analysis", POLICY)
CASE_BUILDER.add_edge(START, "policy_analysis")
CASE = CASE_BUILDER.compile()


def _caller(state: State) -> dict:
    POLICY.invoke(state)
    POLICY.invoke(state)
    return {}


def _root() -> object:
    builder = StateGraph(State)
    builder.add_node("case_investigation", CASE)
    builder.add_node("caller", _caller)
    builder.add_node("intake", _noop)
    builder.add_edge(START, "intake")
    builder.add_edge("intake", "case_investigation")
    builder.add_edge("case_investigation", "caller")
    return builder.compile()


RESOLVER = DurableSubgraphResolver.from_graph(_root())
EXAMPLE = "case_investigation:task-a|policy_analysis:task-b|review_policy:task-c"


def test_concrete_example_boundaries_and_node() -> None:
    assert RESOLVER.resolve_namespace(EXAMPLE) == [
        ChildOperationBoundary("case_investigation", "task-a"),
        ChildOperationBoundary("policy_analysis", "task-b"),
    ]
    assert RESOLVER.resolve(EXAMPLE) == ResolvedNamespace(
        (ChildOperationBoundary("case_investigation", "task-a"), ChildOperationBoundary("policy_analysis", "task-b")),
        "review_policy",
        "task-c",
    )


def test_concrete_example_operation_path() -> None:
    """The seed's example: a visit is keyed by LangGraph's task identities, and reads as the seed's path."""
    a, b, c, x, y, z = (str(uuid.uuid4()) for _ in range(6))
    first = visit_position("thread-1", RESOLVER.resolve(f"case_investigation:{a}|policy_analysis:{b}|review_policy:{c}"), root_key=a)
    assert (first.path, first.node, first.occurrence) == (f"agent/1/case_investigation/{a}/policy_analysis/{b}", "review_policy", c)
    # A loop's second visit of the child is a new visit under the same parent.
    second = visit_position("thread-1", RESOLVER.resolve(f"case_investigation:{x}|policy_analysis:{y}|review_policy:{z}"), root_key=x)
    start = datetime(2026, 1, 1)
    entries = [
        {"path": p.path, "node": p.node, "occurrence": p.occurrence, "root_key": p.root_key, "created_at": start + timedelta(seconds=n)}
        for n, p in enumerate((first, second))
    ]
    assert [(e["path"], e["node"], e["occurrence"]) for e in labelled(entries)] == [
        ("agent/1/case_investigation/1/policy_analysis/1", "review_policy", "1"),
        ("agent/1/case_investigation/2/policy_analysis/1", "review_policy", "1"),
    ]


def test_root_level_node_has_no_boundaries() -> None:
    assert RESOLVER.resolve("intake:t1") == ResolvedNamespace((), "intake", "t1")


def test_parse_keeps_counters_and_raw_keys() -> None:
    assert parse_namespace("caller:T|1|review_policy:U") == (
        NamespaceSegment("caller", "T", 1, "caller:T", ""),
        NamespaceSegment("review_policy", "U", 0, "caller:T|1|review_policy:U", "caller:T|1"),
    )


def test_counter_after_compiled_child_is_a_retry_and_is_dropped() -> None:
    first = RESOLVER.resolve("case_investigation:A|policy_analysis:B|review_policy:C")
    retried = RESOLVER.resolve("case_investigation:A|2|policy_analysis:B2|review_policy:C2")
    assert first.boundaries[0] == retried.boundaries[0] == ChildOperationBoundary("case_investigation", "A")


def test_counter_after_function_node_is_its_nth_subgraph_run() -> None:
    assert RESOLVER.resolve_namespace("caller:T|review_policy:U") == [ChildOperationBoundary("caller", "T", 0)]
    assert RESOLVER.resolve_namespace("caller:T|1|review_policy:V") == [ChildOperationBoundary("caller", "T", 1)]


@pytest.mark.parametrize(
    ("ns", "message"),
    [
        ("", "names no node"),
        ("unknown:t1", "names no node of the root graph"),
        ("case_investigation:a|nope:b", "names no node of the graphs run by 'case_investigation'"),
        ("intake:t1|review_policy:t2", "continues beneath 'intake', a node that runs no compiled graph"),
        (
            "case_investigation:a|policy_analysis:b",
            "ends at 'case_investigation/policy_analysis', which is a compiled child",
        ),
        ("case_investigation|policy_analysis:b|review_policy:c", "has no task id"),
        ("1|intake:t1", "follows no 'name:task_id' segment"),
        ("caller:T|1|2|review_policy:U", "follows no 'name:task_id' segment"),
        ("caller:T|0|review_policy:U", "zero subgraph counter"),
        ("caller:T|1", "ends with a subgraph counter"),
        ("caller:T||review_policy:U", "not of the form 'name:task_id'"),
        ("intake:", "not of the form 'name:task_id'"),
    ],
)
def test_unexplained_namespaces_are_refused(ns: str, message: str) -> None:
    with pytest.raises(NamespaceError, match=message):
        RESOLVER.resolve(ns)


def test_non_string_namespace_is_refused() -> None:
    with pytest.raises(NamespaceError, match="a checkpoint namespace is a string, got list"):
        RESOLVER.resolve(["intake:t1"])


def test_function_node_running_graphs_that_disagree_on_a_node_is_ambiguous() -> None:
    inner = _chain("step")
    holder = StateGraph(State)
    holder.add_node("step", inner)  # 'step' is a compiled child here ...
    holder.add_edge(START, "step")
    wraps_child = holder.compile()
    plain = _chain("step")  # ... and an ordinary node here

    def caller(state: State) -> dict:
        wraps_child.invoke(state)
        plain.invoke(state)
        return {}

    builder = StateGraph(State)
    builder.add_node("caller", caller)
    builder.add_edge(START, "caller")
    resolver = DurableSubgraphResolver.from_graph(builder.compile())
    with pytest.raises(
        NamespaceError, match="node 'step' of the graphs run by 'caller' is child in one graph and ordinary"
    ):
        resolver.resolve("caller:T|step:U")


def test_the_running_task_is_the_last_segment_prepared_from_its_loops_checkpoint() -> None:
    from langgraph_durable_mongodb._langgraph import CONFIG_KEY_CHECKPOINT_MAP, RunningTask
    from langgraph_durable_mongodb.resolver.namespace import root_task_name, running_tasks

    checkpoints = {"": "c0", "a:T": "c1", "a:T|1": "c2"}

    def tasks(ns: str, path: object = None) -> tuple[RunningTask, ...]:
        return running_tasks({"configurable": {"checkpoint_ns": ns, CONFIG_KEY_CHECKPOINT_MAP: checkpoints}, "metadata": {"langgraph_path": path}})

    assert tasks("a:T|1|b:U") == (RunningTask("U", "a:T|1", "c2"),)  # the counter stays on the loop's key
    assert tasks("a:T") == (RunningTask("T", "", "c0"),)
    assert tasks("z:T|b:U") == ()  # no such loop
    assert tasks("") == ()  # outside a task
    assert tasks("a:T|1") == ()  # a run, no task
    # A @task call runs on its caller's loop, which saves the caller's writes and the call's each on its own.
    node = ("__pregel_pull", "a")
    call = ("__pregel_push", node, 0, True)
    assert tasks("a:T|t:C", call) == (RunningTask("T", "", "c0"), RunningTask("C", "", "c0"))
    nested = ("__pregel_push", call, 1, True)
    assert tasks("a:T|1|b:U|t:C|u:D", nested) == tuple(RunningTask(t, "a:T|1", "c2") for t in "UCD")
    assert tasks("t:C", nested) == ()  # more calls than segments: not a namespace LangGraph makes
    assert root_task_name("agent:T|child|x:U") == "agent"  # unchecked past the first segment
