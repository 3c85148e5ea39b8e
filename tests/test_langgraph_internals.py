"""Every LangGraph internal the library relies on (``src/_langgraph.py``), checked against the installed LangGraph.

A LangGraph release that renames a config key, changes the namespace format or
the task paths fails here, by name, instead of somewhere deep in a run.
"""

from __future__ import annotations

import ast
import importlib.util
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.config import get_config
from langgraph.graph import START, StateGraph
from langgraph.types import RetryPolicy, Send

from langgraph_durable_mongodb import _langgraph


class State(TypedDict, total=False):
    seen: Annotated[list, operator.add]


def test_the_namespace_format_and_task_paths_are_what_the_resolver_parses() -> None:
    assert (_langgraph.NS_SEP, _langgraph.NS_END) == ("|", ":")
    assert (_langgraph.PULL, _langgraph.PUSH) == ("__pregel_pull", "__pregel_push")


def run_and_observe(durability: str | None) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    attempts = {"flaky": 0}

    def observe(name: str) -> Any:
        def node(state: State) -> State:
            config = get_config()
            configurable = config["configurable"]
            if name == "flaky":
                attempts["flaky"] += 1
                if attempts["flaky"] == 1:
                    raise ConnectionError("first attempt fails")
            seen.append(
                {
                    "name": name,
                    "ns": configurable["checkpoint_ns"],
                    "writer": _langgraph.task_writer(configurable),
                    "attempt": _langgraph.node_attempt(configurable),
                    "root": _langgraph.checkpoint_of(configurable, ""),
                    "async": _langgraph.runs_durably_async(configurable),
                    "path": config["metadata"]["langgraph_path"],
                    "checkpointer": _langgraph.run_checkpointer(configurable),
                }
            )
            return {"seen": [name]}

        return node

    child = StateGraph(State)
    child.add_node("inner", observe("inner"))
    child.add_edge(START, "inner")
    graph = StateGraph(State)
    graph.add_node("first", observe("first"))
    graph.add_node("flaky", observe("flaky"), retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.01))
    graph.add_node("sub", child.compile())
    graph.add_node("worker", observe("worker"))
    graph.add_edge(START, "first")
    graph.add_edge("first", "flaky")
    graph.add_edge("flaky", "sub")
    graph.add_conditional_edges("sub", lambda s: [Send("worker", {})])
    saver = InMemorySaver()
    compiled = graph.compile(checkpointer=saver)
    compiled.invoke({"seen": []}, {"configurable": {"thread_id": "t"}}, durability=durability)
    assert {s["checkpointer"] is saver for s in seen} == {True}  # CONFIG_KEY_CHECKPOINTER, in the child too
    return seen


def test_inside_a_node_the_config_carries_what_the_journal_reads() -> None:
    seen = {s["name"]: s for s in run_and_observe("async")}
    first, flaky, inner, worker = seen["first"], seen["flaky"], seen["inner"], seen["worker"]
    assert callable(first["writer"]) and first["writer"] is not flaky["writer"]  # one write callable per task
    assert (first["attempt"], flaky["attempt"]) == (1, 2)  # the RetryPolicy retry is attempt 2
    assert first["async"] is True
    assert isinstance(first["root"], str) and first["root"] != flaky["root"]  # each step's root checkpoint
    assert isinstance(inner["root"], str)  # a task inside a child sees the root checkpoint too
    name, sep, task_id = first["ns"].partition(_langgraph.NS_END)
    assert (name, sep) == ("first", ":") and task_id
    outer, _, leaf = inner["ns"].partition(_langgraph.NS_SEP)
    assert outer.startswith("sub:") and leaf.startswith("inner:")
    assert first["path"][0] == _langgraph.PULL
    assert worker["path"][0] == _langgraph.PUSH and worker["path"][1] == 0  # ("__pregel_push", index, ...)


def test_durability_sync_is_not_taken_for_async() -> None:
    assert {s["async"] for s in run_and_observe("sync")} == {False}


def test_a_run_without_a_durability_stores_in_the_background() -> None:
    """LangGraph's default is "async", and it names no durability in the config then, in the child either."""
    assert {s["async"] for s in run_and_observe(None)} == {True}


class Watching(InMemorySaver):
    """Records ``child_run_start(config)`` at each read of a checkpoint, as the platform's trace asks it."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: list[Any] = []

    def get_tuple(self, config: Any) -> Any:
        self.starts.append(_langgraph.child_run_start(config))
        return super().get_tuple(config)

    async def aget_tuple(self, config: Any) -> Any:
        self.starts.append(_langgraph.child_run_start(config))
        return InMemorySaver.get_tuple(self, config)  # InMemorySaver's own aget_tuple calls get_tuple


def graph_running_children(saver: InMemorySaver, fails: list[int]) -> Any:
    """``caller`` (a Send from START) runs ``child`` twice per attempt and fails its first attempt; ``direct``
    (an edge) is ``child`` itself."""
    from langgraph.types import RetryPolicy, Send

    inner = StateGraph(State)
    inner.add_node("leaf", lambda state: {"seen": ["leaf"]})
    inner.add_edge(START, "leaf")
    child = inner.compile()

    def caller(state: State) -> State:
        child.invoke({"seen": []})
        child.invoke({"seen": []})
        if not fails:
            fails.append(1)
            raise KeyError("retry me")
        return {"seen": ["caller"]}

    graph = StateGraph(State)
    graph.add_node("caller", caller, retry_policy=RetryPolicy(retry_on=KeyError, initial_interval=0.001, jitter=False))
    graph.add_node("direct", child)
    graph.add_conditional_edges(START, lambda s: [Send("caller", s), "direct"])
    return graph.compile(checkpointer=saver)


def check_child_run_starts(saver: Watching) -> None:
    by_task: dict[str, list[Any]] = {}
    for start in saver.starts[1:]:
        assert start is not None  # each read after the root's starts a child run
        by_task.setdefault(start.task_ns.partition(":")[0], []).append(start)
    assert saver.starts[0] is None  # the root run's read is no child's
    caller, direct = by_task["caller"], by_task["direct"]
    # the counter goes on across attempts (0, 1, then 2, 3) and the attempt is the task's own
    assert [(s.counter, s.attempt) for s in caller] == [(0, 1), (1, 1), (2, 2), (3, 2)]
    assert {s.step for s in caller} == {1} and _langgraph.PUSH == caller[0].path[0] and caller[0].path[1] == 0
    assert [(s.counter, s.attempt, s.path) for s in direct] == [(0, 1, (_langgraph.PULL, "direct"))]


def test_a_child_run_starts_with_a_read_under_the_config_of_the_task_running_it() -> None:
    """``child_run_start``: a child loop reads its namespace with the config of the task that runs it (its metadata,
    counter and attempt); the root's read and ``get_state`` are no child run's."""
    saver = Watching()
    compiled = graph_running_children(saver, [])
    compiled.invoke({"seen": []}, {"configurable": {"thread_id": "t"}})
    check_child_run_starts(saver)
    saver.starts.clear()
    compiled.get_state({"configurable": {"thread_id": "t"}})
    assert saver.starts == [None]


async def test_an_async_child_run_starts_with_a_read_under_the_config_of_the_task_running_it() -> None:
    saver = Watching()
    compiled = graph_running_children(saver, [])
    await compiled.ainvoke({"seen": []}, {"configurable": {"thread_id": "t"}})
    check_child_run_starts(saver)
    saver.starts.clear()
    await compiled.aget_state({"configurable": {"thread_id": "t"}})
    assert saver.starts == [None]


class Running(InMemorySaver):
    """Records ``running_graph()`` at each read a root run starts with (``root_run_start``), and at any other read."""

    def __init__(self) -> None:
        super().__init__()
        self.graphs: list[tuple[bool, Any]] = []

    def get_tuple(self, config: Any) -> Any:
        self.graphs.append((_langgraph.root_run_start(config), _langgraph.running_graph()))
        return super().get_tuple(config)

    async def aget_tuple(self, config: Any) -> Any:
        self.graphs.append((_langgraph.root_run_start(config), _langgraph.running_graph()))
        return InMemorySaver.get_tuple(self, config)


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_a_root_run_reads_its_first_checkpoint_beneath_the_stream_of_the_graph_run(face: str) -> None:
    """The read a root run starts with is made within ``Pregel.stream``/``astream`` of the graph being run, also
    under a subclass that overrides them (``DurableGraph``); ``get_state`` reads outside any run."""

    from langgraph.graph.state import CompiledStateGraph

    class Overriding(CompiledStateGraph):
        def stream(self, *args: Any, **kwargs: Any) -> Any:
            yield from super().stream(*args, **kwargs)

    saver = Running()
    builder = StateGraph(State)
    builder.add_node("n", lambda state: {"seen": ["n"]})
    builder.add_edge(START, "n")
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    if face == "sync":
        graph.invoke({"seen": []}, config)
        overriding = Overriding(**{k: v for k, v in graph.__dict__.items() if k != "__orig_class__"})
        overriding.invoke({"seen": []}, config)
        expected = [(True, graph), (True, overriding)]
    else:
        await graph.ainvoke({"seen": []}, config)
        expected = [(True, graph)]
    assert saver.graphs == expected
    graph.get_state(config)
    assert saver.graphs[-1] == (False, None)


def test_an_edit_as_the_interrupted_node_saves_its_writes_under_that_task_on_the_edited_checkpoint() -> None:
    """``nodes_completed_by_edit`` reads the task paths LangGraph gives the loop's and the edit's pending writes."""
    from langgraph.types import interrupt

    def gate(state: State) -> State:
        interrupt("ok?")
        return {"seen": ["gate"]}

    builder = StateGraph(State)
    builder.add_node("intake", lambda s: {"seen": ["intake"]})
    builder.add_node("gate", gate)
    builder.add_edge(START, "intake")
    builder.add_edge("intake", "gate")
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)

    def edited_writes(thread: str, **update: Any) -> list[dict[str, Any]]:
        config = {"configurable": {"thread_id": thread}}
        graph.invoke({"seen": []}, config)
        edited = saver.get_tuple(config).checkpoint["id"]
        graph.update_state(config, {"seen": ["edited"]}, **update)
        return [
            {"task_id": task_id, "channel": channel, "task_path": task_path}
            for (t, _, checkpoint), writes in saver.writes.items()
            if (t, checkpoint) == (thread, edited)
            for (task_id, _), (_, channel, _, task_path) in writes.items()
        ]

    assert _langgraph.nodes_completed_by_edit(edited_writes("as-last")) == []  # as the node that ran last
    assert _langgraph.nodes_completed_by_edit(edited_writes("as-gate", as_node="gate")) == ["gate"]


def test_a_task_call_names_its_caller_s_path_and_a_counter_that_goes_on_across_the_caller_s_attempts() -> None:
    """``task_call``: a ``@task`` called from a node (and one called from that task) runs in the caller's namespace
    with the caller's step, its ``langgraph_path`` naming the caller's; the caller's call counter restarts with each
    run of its task and goes on across its ``RetryPolicy`` attempts."""
    from langgraph.func import task

    seen: list[tuple[str, Any, Any, int]] = []

    @task
    def inner() -> None:
        config = get_config()
        seen.append(("inner", config["configurable"]["checkpoint_ns"], config["metadata"]["langgraph_path"], config["metadata"]["langgraph_step"]))

    @task
    def outer() -> None:
        config = get_config()
        seen.append(("outer", config["configurable"]["checkpoint_ns"], config["metadata"]["langgraph_path"], config["metadata"]["langgraph_step"]))
        inner().result()

    attempts: list[int] = []

    def node(state: State) -> State:
        attempts.append(1)
        outer().result()
        if len(attempts) == 1:
            raise ConnectionError("retried")
        return {}

    graph = StateGraph(State)
    graph.add_node("caller", node, retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.01, jitter=False, retry_on=ConnectionError))
    graph.add_edge(START, "caller")
    graph.compile(checkpointer=InMemorySaver()).invoke({"seen": []}, {"configurable": {"thread_id": "t"}})
    outers = [s for s in seen if s[0] == "outer"]
    assert [_langgraph.task_call(path).index for _, _, path, _ in outers] == [0, 1]  # the second attempt's is 1
    assert all(_langgraph.task_call(path).caller_path == (_langgraph.PULL, "caller") for _, _, path, _ in outers)
    assert all(ns.startswith("caller:") and ns.split("|")[1].startswith("outer:") for _, ns, _, _ in outers)
    inner_ns, inner_path, inner_step = seen[1][1], seen[1][2], seen[1][3]
    call = _langgraph.task_call(inner_path)
    assert call is not None and call.index == 0 and _langgraph.task_call(call.caller_path).caller_path == (_langgraph.PULL, "caller")
    assert inner_ns.startswith(seen[0][1] + "|inner:") and inner_step == seen[0][3]
    assert _langgraph.task_call((_langgraph.PULL, "caller")) is None
    assert _langgraph.task_call((_langgraph.PUSH, 0, False)) is None  # a Send


def test_a_run_started_from_a_child_s_checkpoint_reads_the_root_with_the_child_s_namespace_in_its_metadata() -> None:
    """``run_start_in_child``: ``invoke`` given a child's config starts a root run whose first read is the root
    namespace's, its metadata still naming the child's namespace; a run given a root config names none."""
    from langgraph.types import interrupt

    class Seen(InMemorySaver):
        starts: list[Any] = []

        def get_tuple(self, config: Any) -> Any:
            if _langgraph.root_run_start(config):
                Seen.starts.append(_langgraph.run_start_in_child(config))
            return super().get_tuple(config)

    child = StateGraph(State)
    child.add_node("ask", lambda state: {"seen": [interrupt("ok?")]})
    child.add_edge(START, "ask")
    root = StateGraph(State)
    root.add_node("case", child.compile())
    root.add_edge(START, "case")
    graph = root.compile(checkpointer=Seen())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"seen": []}, config)
    child_config = graph.get_state(config, subgraphs=True).tasks[0].state.config
    graph.invoke(None, child_config)
    assert Seen.starts[0] is None and Seen.starts[-1] == child_config["configurable"]["checkpoint_ns"]
    assert _langgraph.checkpoint_map(child_config["configurable"])[child_config["configurable"]["checkpoint_ns"]] == child_config["configurable"]["checkpoint_id"]


def test_agent_server_marks_the_runs_it_starts_with_its_version() -> None:
    """``agent_server_run`` reads the mark langgraph-api puts in the metadata of every run it starts (its stream
    module sets it before the graph runs); the real server's stateless run is in ``test_agent_server.py``."""
    found = importlib.util.find_spec("langgraph_api")  # importing its modules needs a server's configuration
    if found is None or not found.submodule_search_locations:
        pytest.skip("langgraph-api is not installed")
    stream = Path(found.submodule_search_locations[0], "stream.py").read_text()
    assert f'config["metadata"]["{_langgraph.AGENT_SERVER_MARK}"] = ' in stream
    assert _langgraph.agent_server_run({"metadata": {_langgraph.AGENT_SERVER_MARK: "0.16.7"}})
    assert not _langgraph.agent_server_run({"metadata": {}, "configurable": {}})


@pytest.mark.parametrize("kind", [set, frozenset])
def test_equal_sets_built_in_other_orders_are_written_alike_and_load_as_the_plain_type(kind: type) -> None:
    """0 and 8 share a slot of a small set, so the order they were added in is the order they iterate in: the serde
    wrote two equal sets as two byte strings, and a metadata filter on one missed the other."""
    first, second = kind([0]) | kind([8]), kind([8]) | kind([0])
    assert list(first) != list(second)  # the premise: equal sets, iterated apart
    serde = JsonPlusSerializer()
    one, other = serde.dumps_typed(_langgraph.canonical_set(first)), serde.dumps_typed(_langgraph.canonical_set(second))
    assert one == other and one != serde.dumps_typed(second)
    loaded = serde.loads_typed(one)
    assert loaded == first and type(loaded) is kind


#: LangGraph's own strings: channel names, task-path markers and config keys a release may change.
LANGGRAPH_STRINGS = ("__pregel", "__error__", "__interrupt__", "__start__", "branch:to:", "__scratchpad")


def langgraph_strings_outside(src: Path) -> list[tuple[str, str]]:
    """``(module, string)`` for each string constant naming one of LangGraph's internals outside ``_langgraph.py``
    (docstrings aside: they may say what a value looks like)."""
    found = []
    for path in sorted(src.rglob("*.py")):
        if path.name == "_langgraph.py":
            continue
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        found += [(str(path.relative_to(src)), node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                  and any(marker in node.value for marker in LANGGRAPH_STRINGS)]
    return found


def test_the_tasks_a_checkpoint_prepares_are_read_as_langgraph_prepares_them() -> None:
    """``checkpoint_tasks`` names the tasks of a checkpoint as LangGraph's ``get_state`` does: one per ``Send``
    packet of the tasks channel, under the path its writes store, then one per node an edge made due; and
    ``task_outcome`` says, from a task's writes, what ``get_state`` says of it (an interrupt waits, an error)."""
    builder = StateGraph(State)
    builder.add_node("fan", lambda s: {"seen": ["fan"]})
    builder.add_node("work", lambda s: {"seen": [_ask(s)]})
    builder.add_node("after", lambda s: {"seen": ["after"]})
    builder.add_edge(START, "fan")
    builder.add_conditional_edges("fan", lambda s: [Send("work", {"seen": [i]}) for i in range(2)] + ["after"], ["work", "after"])
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"seen": []}, config)
    snapshot = graph.get_state(config)
    stored = saver.get_tuple(config)
    values = stored.checkpoint["channel_values"]
    tasks = _langgraph.checkpoint_tasks([c for c, v in values.items() if v != []], values.get(_langgraph.TASKS))
    assert sorted((t.name, t.path) for t in tasks) == sorted((t.name, _langgraph.task_path_str(t.path)) for t in snapshot.tasks)
    written: dict[str, set[str]] = {}
    for task_id, channel, _ in stored.pending_writes:
        written.setdefault(task_id, set()).add(channel)
    outcomes = {t.name + str(t.path): _langgraph.task_outcome(written.get(t.id, ())) for t in snapshot.tasks}
    assert outcomes == {t.name + str(t.path): "interrupted" if t.interrupts else "done" for t in snapshot.tasks}
    assert snapshot.next == ("work",) and [t.interrupts != () for t in snapshot.tasks if t.name == "work"] == [False, True]
    assert sorted(_langgraph.sent_index(t.path) for t in tasks if t.send is not None) == [0, 1]


def _ask(state: dict) -> str:
    from langgraph.types import interrupt  # noqa: PLC0415 - only this node asks

    return interrupt("approve?") if state["seen"] == [1] else "done"


def test_the_view_serializer_builds_langgraph_s_safe_types_and_no_other() -> None:
    """What a crafted document names (a constructor, a method) is shown as its name and arguments, never called;
    LangGraph's safe types (``Send``, messages) are built as LangGraph builds them."""
    import ormsgpack  # noqa: PLC0415

    serde = JsonPlusSerializer()
    sent = _langgraph.ViewSerializer().loads_typed(serde.dumps_typed([Send("tools", {"tool_call": {"name": "pay", "id": "c1"}})]))
    assert isinstance(sent[0], Send) and _langgraph.tool_call_of(sent[0].arg) == ("pay", "c1")
    crafted = ormsgpack.packb(ormsgpack.Ext(1, ormsgpack.packb(["os", "system", ["echo owned"]])))
    assert _langgraph.ViewSerializer().loads_typed(("msgpack", crafted)) == {"stored": "os.system", "with": ["echo owned"]}
    assert _langgraph.tool_call_of([{"name": "pay", "id": "c2", "args": {}}]) == ("pay", "c2")  # create_agent's


def test_langgraph_strings_live_in_one_module() -> None:
    """A LangGraph release that renames a channel or a task-path marker breaks one place, loudly (issue 35)."""
    assert langgraph_strings_outside(Path(__file__).resolve().parents[1] / "src") == []


def test_the_string_check_sees_one(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text('"""a ``~__pregel_pull, x`` docstring"""\nPULL = "~__pregel_pull, "\n')
    assert langgraph_strings_outside(tmp_path) == [("m.py", "~__pregel_pull, ")]
