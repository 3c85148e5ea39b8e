"""Graphs the test modules share (no tests here): their states, builders, and how to run them in either mode."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.channels.delta import DeltaChannel
from langgraph.graph import START, StateGraph
from langgraph.types import RetryPolicy, Send, interrupt

from langgraph_durable_mongodb.journal import effect


class Notes(TypedDict, total=False):
    """Notes the nodes append to."""

    notes: Annotated[list, operator.add]


class State(TypedDict, total=False):
    """Notes, plus an item a node works on and a count it raises."""

    notes: Annotated[list, operator.add]
    item: str
    count: int


class Log(TypedDict):
    """A log the nodes append to, and a step count."""

    log: Annotated[list, operator.add]
    n: int


def config(thread: str = "case-42") -> dict:
    """The run config of ``thread``."""
    return {"configurable": {"thread_id": thread}}


async def invoke(graph: Any, mode: str, value: Any, thread_id: str) -> Any:
    """``graph.invoke`` (``mode`` "sync") or ``ainvoke`` (``mode`` "async") of ``value`` on ``thread_id``."""
    return await graph.ainvoke(value, config(thread_id)) if mode == "async" else graph.invoke(value, config(thread_id))


async def state_of(graph: Any, mode: str, thread_id: str) -> Any:
    """``graph.get_state`` (``mode`` "sync") or ``aget_state`` (``mode`` "async") of ``thread_id``."""
    return await graph.aget_state(config(thread_id)) if mode == "async" else graph.get_state(config(thread_id))


def note_graph() -> StateGraph:
    """One node, ``note``, that notes "seen"."""
    graph = StateGraph(Notes)
    graph.add_node("note", lambda state: {"notes": ["seen"]})
    graph.add_edge(START, "note")
    return graph


def nest(node_name: str, node: Any, *children: str, retry: RetryPolicy | None = None) -> StateGraph:
    """A graph running ``node`` inside compiled children named ``children`` (outermost first)."""
    inner = StateGraph(State)
    inner.add_node(node_name, node, retry_policy=retry)
    inner.add_edge(START, node_name)
    graph = inner
    for name in reversed(children):
        outer = StateGraph(State)
        outer.add_node(name, graph.compile())
        outer.add_edge(START, name)
        graph = outer
    return graph


def nested_graph() -> StateGraph:
    """``first``, then ``middle`` (a compiled child) running ``inner`` (its own compiled child, whose ``review``
    interrupts) and then ``after``."""

    def review(state: Log) -> dict:
        answer = interrupt("approve?")
        return {"log": [f"review:{answer}"], "n": state["n"] + 1}

    inner = StateGraph(Log)
    inner.add_node("review", review)
    inner.add_edge(START, "review")
    middle = StateGraph(Log)
    middle.add_node("inner", inner.compile())
    middle.add_node("after", lambda s: {"log": ["after"]})
    middle.add_edge(START, "inner")
    middle.add_edge("inner", "after")
    root = StateGraph(Log)
    root.add_node("first", lambda s: {"log": ["first"]})
    root.add_node("middle", middle.compile())
    root.add_edge(START, "first")
    root.add_edge("first", "middle")
    return root


def append_writes(state: list, writes: list) -> list:
    """The chat's ``DeltaChannel`` operator: ``state`` with each write's messages appended."""
    return state + [w for batch in writes for w in (batch if isinstance(batch, list) else [batch])]


class Chat(TypedDict):
    messages: Annotated[list, DeltaChannel(append_writes, snapshot_frequency=7)]


def chat_graph() -> StateGraph:
    """One node, ``reply``, that replies to the latest message (messages in a ``DeltaChannel``)."""
    g = StateGraph(Chat)
    g.add_node("reply", lambda s: {"messages": [f"reply to {s['messages'][-1]}"]})
    g.add_edge(START, "reply")
    return g


async def run_chat(saver: Any, is_async: bool, turns: int) -> tuple[Any, list]:
    """``turns`` turns of ``chat_graph`` on thread "chat": the compiled graph and the messages at the end."""
    graph, chat = chat_graph().compile(checkpointer=saver), config("chat")
    for turn in range(turns):
        if is_async:
            await graph.ainvoke({"messages": [f"user {turn}"]}, chat)
        else:
            graph.invoke({"messages": [f"user {turn}"]}, chat)
    state = await graph.aget_state(chat) if is_async else graph.get_state(chat)
    return graph, state.values["messages"]


#: The effects a ``three_effects`` node runs.
EFFECTS = 3


def three_effects(at_most_once: bool = False, fail_once: list[bool] | None = None) -> StateGraph:
    """One node, ``work``, that runs ``EFFECTS`` tool effects (``lookup``) and then, when ``fail_once`` holds
    an item, empties it and fails."""

    @effect(kind="tool", name="lookup", at_most_once=at_most_once)
    def lookup(ref: str) -> str:
        return f"found {ref}"

    def node(state: Notes) -> Notes:
        found = [lookup(str(i)) for i in range(EFFECTS)]
        if fail_once:
            fail_once.clear()
            raise ConnectionError("worker lost after the effects")
        return {"notes": found}

    graph = StateGraph(Notes)
    graph.add_node("work", node)
    graph.add_edge(START, "work")
    return graph


async def run_probe(platform: Any, thread_id: str, calls: list[str], is_async: bool) -> None:
    """A node two compiled children deep whose one effect appends to ``calls`` when it really runs."""

    @effect(kind="tool", name="probe")
    def probe(n: int) -> int:
        calls.append(thread_id)
        return n + 1

    @effect(kind="tool", name="probe")
    async def aprobe(n: int) -> int:
        calls.append(thread_id)
        return n + 1

    async def astep(state: State) -> State:
        return {"count": await aprobe(state.get("count", 0))}

    step = astep if is_async else (lambda s: {"count": probe(s.get("count", 0))})
    graph = platform.compile(nest("step", step, "outer", "inner"))
    config = {"configurable": {"thread_id": thread_id}}
    if is_async:
        await graph.ainvoke({"count": 0}, config)
    else:
        graph.invoke({"count": 0}, config)


class Upgraded(TypedDict, total=False):
    notes: Annotated[list, operator.add]
    turns: int
    item: str


def format2_case(executed: list[str]) -> StateGraph:
    """The graph whose run ``tests/golden/format2_case-7.json`` holds as storage format 2 wrote it (0.1.0 at
    37385b2, on mongomock), interrupted in ``gate`` after its payment: a root loop (``act`` twice), a compiled
    child (``case``: ``review``), a ``Send`` fan-out (``worker`` a, b), then ``gate``. Each effect's real
    executions go to ``executed``."""

    @effect(kind="tool", name="act")
    def act(turn: int) -> str:
        executed.append(f"act {turn}")
        return f"acted {turn}"

    @effect(kind="tool", name="inspect")
    def inspect_case(turn: int) -> str:
        executed.append(f"inspect {turn}")
        return f"inspected {turn}"

    @effect(kind="tool", name="work")
    def work(item: str) -> str:
        executed.append(f"work {item}")
        return item.upper()

    @effect(kind="payment", name="pay", at_most_once=True)
    def pay(n: int) -> str:
        executed.append(f"pay {n}")
        return f"paid {n}"

    def looping(state: Upgraded) -> Upgraded:
        turn = state.get("turns", 0) + 1
        return {"notes": [act(turn)], "turns": turn}

    def gate(state: Upgraded) -> Upgraded:
        paid = pay(len(state["notes"]))
        return {"notes": [paid, f"gate:{interrupt('approve?')}"]}

    child = StateGraph(Upgraded)
    child.add_node("review", lambda s: {"notes": [inspect_case(s["turns"])]})
    child.add_edge(START, "review")
    root = StateGraph(Upgraded)
    root.add_node("act", looping)
    root.add_node("case", child.compile())
    root.add_node("fan", lambda s: {})
    root.add_node("worker", lambda s: {"notes": [work(s["item"])]})
    root.add_node("gate", gate)
    root.add_edge(START, "act")
    root.add_conditional_edges("act", lambda s: "act" if s["turns"] < 2 else "case")
    root.add_edge("case", "fan")
    root.add_conditional_edges("fan", lambda s: [Send("worker", {"item": i}) for i in ("a", "b")], ["worker"])
    root.add_edge("worker", "gate")
    return root
