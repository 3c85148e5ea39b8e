"""Topology discovery and the refusals of ``DurableSubgraphResolver.validate``."""

from __future__ import annotations

import functools
import operator
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from langgraph_durable_mongodb.errors import InvalidInputError, TopologyError
from langgraph_durable_mongodb.resolver import DurableSubgraphResolver, NodeKind


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _noop(state: State) -> dict:
    return {}


def _graph(nodes: dict[str, Any], checkpointer: Any = None) -> Any:
    """Nodes run in the given order."""
    builder = StateGraph(State)
    previous = START
    for name, action in nodes.items():
        builder.add_node(name, action)
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder.compile(checkpointer=checkpointer)


def _kinds(graph: Any) -> dict[str, NodeKind]:
    return {name: node.kind for name, node in DurableSubgraphResolver.from_graph(graph).topology.root.nodes.items()}


def test_discovers_names_per_level_and_compiled_children() -> None:
    policy = _graph({"review_policy": _noop})
    case = _graph({"policy_analysis": policy})
    root = _graph({"intake": _noop, "case_investigation": case})
    topology = DurableSubgraphResolver.from_graph(root).topology
    assert topology.issues == ()
    assert _kinds(root) == {
        "__start__": NodeKind.ORDINARY,
        "intake": NodeKind.ORDINARY,
        "case_investigation": NodeKind.CHILD,
    }
    (case_level,) = topology.root.nodes["case_investigation"].subgraphs
    assert set(case_level.nodes) == {"__start__", "policy_analysis"}
    (policy_level,) = case_level.nodes["policy_analysis"].subgraphs
    assert set(policy_level.nodes) == {"__start__", "review_policy"}
    assert policy_level.nodes["review_policy"].kind is NodeKind.ORDINARY


def test_one_compiled_instance_used_twice_is_discovered_once() -> None:
    shared = _graph({"work": _noop})
    root = _graph({"first": shared, "second": shared, "wrapped": shared.with_listeners(on_start=print)})
    nodes = DurableSubgraphResolver.from_graph(root).topology.root.nodes
    assert nodes["wrapped"].kind is NodeKind.CHILD  # a binding around a compiled graph is still the graph
    assert nodes["first"].subgraphs[0] is nodes["second"].subgraphs[0] is nodes["wrapped"].subgraphs[0]


class _Agent:
    def __init__(self, graph: Any) -> None:
        self.graph = graph

    def run(self, state: State) -> dict:
        return self.graph.invoke(state)


def _helper_running(graph_box: dict[str, Any], state: State) -> dict:
    return graph_box["graph"].invoke(state)


HELPER_GRAPH = _graph({"e_node": _noop})


def _helper_using_global(state: State) -> dict:
    return HELPER_GRAPH.invoke(state)


def test_function_nodes_that_run_compiled_graphs_are_found_where_langgraph_misses_them() -> None:
    sub_a, sub_b, sub_c, sub_d = (_graph({f"{n}_node": _noop}) for n in "abcd")

    def two_graphs(state: State) -> dict:  # LangGraph keeps only the first graph it finds
        sub_a.invoke(state)
        return sub_b.invoke(state)

    def default_arg(state: State, graph: Any = sub_d) -> dict:
        return graph.invoke(state)

    def via_helper(state: State) -> dict:
        return _helper_using_global(state)

    root = _graph(
        {
            "two_graphs": two_graphs,
            "partial": functools.partial(_helper_running, {"graph": sub_c}),
            "method": _Agent(sub_d).run,
            "default_arg": default_arg,
            "via_helper": via_helper,
        }
    )
    nodes = DurableSubgraphResolver.from_graph(root).topology.root.nodes
    expected = {
        "two_graphs": {"a_node", "b_node"},
        "partial": {"c_node"},
        "method": {"d_node"},
        "default_arg": {"d_node"},
        "via_helper": {"e_node"},
    }
    for name, inner in expected.items():
        assert nodes[name].kind is NodeKind.CALLER, name
        assert {n for level in nodes[name].subgraphs for n in level.nodes} - {"__start__"} == inner, name
    # What LangGraph's own PregelNode.subgraphs sees, for comparison:
    assert [len(root.nodes[name].subgraphs) for name in expected] == [1, 0, 0, 0, 0]


def test_ordinary_function_node_stays_ordinary() -> None:
    def formats(state: State) -> dict:
        return {"log": [",".join(sorted(state["log"]))]}

    assert _kinds(_graph({"formats": formats}))["formats"] is NodeKind.ORDINARY


def test_supported_children_validate() -> None:
    child = _graph({"work": _noop})
    DurableSubgraphResolver.from_graph(_graph({"child": child}, checkpointer=InMemorySaver())).validate()


@pytest.mark.parametrize(
    ("checkpointer", "message"),
    [
        (
            True,
            "child 'case_investigation/policy_analysis' was compiled with checkpointer=True; its namespace drops "
            "task ids, so its occurrences cannot be told apart; compile it with checkpointer=None so it inherits "
            "the root's saver",
        ),
        (
            False,
            "child 'case_investigation/policy_analysis' was compiled with checkpointer=False; nothing of it is "
            "saved, so a resume re-runs it under new task ids; compile it with checkpointer=None so it inherits "
            "the root's saver",
        ),
        (
            InMemorySaver(),
            "child 'case_investigation/policy_analysis' was compiled with its own saver (InMemorySaver); compile "
            "it with checkpointer=None so it inherits the root's saver",
        ),
    ],
    ids=["true", "false", "own-saver"],
)
def test_refuses_children_not_inheriting_the_root_saver(checkpointer: Any, message: str) -> None:
    policy = _graph({"review_policy": _noop}, checkpointer=checkpointer)
    root = _graph({"case_investigation": _graph({"policy_analysis": policy})}, checkpointer=InMemorySaver())
    resolver = DurableSubgraphResolver.from_graph(root)
    assert [issue.path for issue in resolver.issues] == ["case_investigation/policy_analysis"]
    with pytest.raises(TopologyError) as error:
        resolver.validate()
    assert message in str(error.value)


def test_refuses_graph_run_by_function_node_with_checkpointer_false() -> None:
    hidden = _graph({"work": _noop}, checkpointer=False)

    def runs_hidden(state: State) -> dict:
        return hidden.invoke(state)

    root = _graph({"runs_hidden": runs_hidden})
    assert root.nodes["runs_hidden"].subgraphs == []  # LangGraph skips checkpointer=False graphs
    with pytest.raises(
        TopologyError, match="graph 'LangGraph' run by node 'runs_hidden' was compiled with checkpointer=False"
    ):
        DurableSubgraphResolver.from_graph(root).validate()


def test_refuses_cycle_without_recursing_forever() -> None:
    box: dict[str, Any] = {}

    def recurse(state: State) -> dict:
        return box["graph"].invoke(state)

    inner = _graph({"recurse": recurse})
    root = _graph({"outer": inner})
    box["graph"] = root  # root -> outer (inner) -> recurse -> root
    resolver = DurableSubgraphResolver.from_graph(root)
    (issue,) = resolver.issues
    assert issue.path == "outer/recurse"
    with pytest.raises(
        TopologyError,
        match=r"child 'outer/recurse' runs graph 'LangGraph', which already encloses it at '<root>' \(cyclic",
    ):
        resolver.validate()
    # The cyclic topology is still a finite walk for any finite namespace.
    assert [b.name for b in resolver.resolve_namespace("outer:a|recurse:b|outer:c|recurse:d")] == [
        "outer",
        "recurse",
        "outer",
    ]


def test_validate_names_every_issue() -> None:
    root = _graph(
        {"a": _graph({"x": _noop}, checkpointer=True), "b": _graph({"y": _noop}, checkpointer=False)},
        checkpointer=InMemorySaver(),
    )
    with pytest.raises(TopologyError, match=r"2 unsupported shape\(s\)") as error:
        DurableSubgraphResolver.from_graph(root).validate()
    assert "child 'a' was compiled with checkpointer=True" in str(error.value)
    assert "child 'b' was compiled with checkpointer=False" in str(error.value)


def test_from_graph_refuses_a_builder() -> None:
    with pytest.raises(InvalidInputError, match="pass the result of StateGraph.compile"):
        DurableSubgraphResolver.from_graph(StateGraph(State))
