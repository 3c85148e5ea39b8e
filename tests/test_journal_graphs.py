"""The journal in real LangGraph graphs: effects made before a re-run are replayed, not made again."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, RetryPolicy, interrupt
from pydantic import BaseModel

from langgraph_durable_mongodb.journal import SecureLLM, SecureTool, effect, effect_scope

from .journal_helpers import KINDS, SYNC_KINDS, CheckpointNsLocator, Counter, JournalFace, NodeRun, journaled, scripted

CONFIG = {"configurable": {"thread_id": "claim-42"}}


class State(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    notes: Annotated[list, operator.add]


def make_tool(name: str, count: Counter, fail_first: bool = False) -> Any:
    @tool(name)
    def lookup(ref: str) -> str:
        """Look a reference up."""
        count()
        if fail_first and count.n == 1:
            raise ConnectionError(f"{name} backend unreachable")
        return f"{name}({ref}) = ok"

    return lookup


async def invoke(graph: Any, inputs: Any, is_async: bool) -> Any:
    return await graph.ainvoke(inputs, CONFIG) if is_async else graph.invoke(inputs, CONFIG)


@pytest.mark.parametrize("client_kind", KINDS, indirect=True)
@pytest.mark.parametrize(
    ("positions", "path", "occurrence"),
    [("resolver", "agent/1/case_investigation/1", "1"), ("namespace", "case_investigation/1", "2")],
)
async def test_a_deep_node_resumed_after_a_crash_replays_its_llm_and_tool_calls(
    jface: JournalFace, positions: str, path: str, occurrence: str
) -> None:
    model = scripted(AIMessage("Policy 7 covers water damage."))
    llm, lookup = SecureLLM(model), SecureTool(make_tool("lookup_policy", tool_count := Counter()))
    crashed = []

    def policy_analysis(state: State) -> State:
        reply = llm.invoke(state["messages"])
        found = lookup.invoke({"ref": "7"})
        return crash_once({"messages": [reply], "notes": [found]})

    async def apolicy_analysis(state: State) -> State:
        reply = await llm.ainvoke(state["messages"])
        found = await lookup.ainvoke({"ref": "7"})
        return crash_once({"messages": [reply], "notes": [found]})

    def crash_once(update: State) -> State:
        if not crashed:
            crashed.append(True)
            raise RuntimeError("worker crashed")
        return update

    child = StateGraph(State)
    child.add_node("policy_analysis", apolicy_analysis if jface.is_async else policy_analysis)
    child.add_edge(START, "policy_analysis")
    root = StateGraph(State)
    root.add_node("case_investigation", child.compile(checkpointer=None))
    root.add_edge(START, "case_investigation")
    graph = root.compile(checkpointer=InMemorySaver())

    scope = journaled(jface, graph) if positions == "resolver" else effect_scope(jface.journal, CheckpointNsLocator())
    with scope:
        with pytest.raises(RuntimeError, match="worker crashed"):
            await invoke(graph, {"messages": [HumanMessage("Is water damage covered?")]}, jface.is_async)
        result = await invoke(graph, None, jface.is_async)

    assert (len(model.calls), tool_count.n) == (1, 1)
    assert result["messages"][-1].content == "Policy 7 covers water damage."
    assert result["notes"] == ["lookup_policy(7) = ok"]
    entries = await jface.call("entries", "claim-42")
    assert [(e["path"], e["node"], e["occurrence"], e["effect_key"], e["kind"], e["name"], e["status"]) for e in entries] == [
        (path, "policy_analysis", occurrence, "1", "llm", "CountingChatModel", "completed"),
        (path, "policy_analysis", occurrence, "2", "tool", "lookup_policy", "completed"),
    ]


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
async def test_interrupt_then_resume_replays_the_llm_call(jface: JournalFace) -> None:
    model = scripted(AIMessage("Refund 120 EUR?"))
    llm = SecureLLM(model)

    def propose(state: State) -> State:
        proposal = llm.invoke(state["messages"])
        answer = interrupt(proposal.content)
        return {"messages": [proposal], "notes": [answer]}

    builder = StateGraph(State)
    builder.add_node("propose", propose)
    builder.add_edge(START, "propose")
    graph = builder.compile(checkpointer=InMemorySaver())
    with journaled(jface, graph):
        paused = graph.invoke({"messages": [HumanMessage("refund?")]}, CONFIG)
        assert paused["__interrupt__"][0].value == "Refund 120 EUR?"
        result = graph.invoke(Command(resume="approved"), CONFIG)
    assert result["notes"] == ["approved"] and len(model.calls) == 1


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
async def test_a_retry_policy_retry_replays_effect_one_and_restarts_the_ordinals(jface: JournalFace) -> None:
    first, second = Counter(), Counter()

    @effect(kind="fetch")
    def fetch_claim() -> str:
        return first("claim c9")

    @effect(kind="fetch")
    def fetch_policy() -> str:
        second()
        if second.n == 1:
            raise ValueError("timeout")
        return "policy 7"

    def gather(state: State) -> State:
        return {"notes": [fetch_claim(), fetch_policy()]}

    builder = StateGraph(State)
    builder.add_node(
        "gather", gather, retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.01, jitter=False, retry_on=ValueError)
    )
    builder.add_edge(START, "gather")
    graph = builder.compile(checkpointer=InMemorySaver())
    with journaled(jface, graph):
        assert graph.invoke({"notes": []}, CONFIG)["notes"] == ["claim c9", "policy 7"]
    assert (first.n, second.n) == (1, 2)
    entries = await jface.call("entries", "claim-42")
    assert [(e["effect_key"], e["name"], e["attempts"]) for e in entries] == [
        ("1", "test_a_retry_policy_retry_replays_effect_one_and_restarts_the_ordinals.<locals>.fetch_claim", 1),
        ("2", "test_a_retry_policy_retry_replays_effect_one_and_restarts_the_ordinals.<locals>.fetch_policy", 2),
    ]


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
async def test_concurrent_tool_calls_are_keyed_by_their_tool_call_ids(jface: JournalFace) -> None:
    calls = [
        {"name": "lookup_policy", "args": {"ref": "7"}, "id": "call_a"},
        {"name": "lookup_claim", "args": {"ref": "c9"}, "id": "call_b"},
    ]
    model = scripted(AIMessage("", tool_calls=calls), AIMessage("Covered."))
    policy_count, claim_count = Counter(), Counter()
    tools = [
        SecureTool(make_tool("lookup_policy", policy_count)),
        SecureTool(make_tool("lookup_claim", claim_count, fail_first=True)),
    ]
    llm = SecureLLM(model).bind_tools(tools)

    builder = StateGraph(State)
    builder.add_node("agent", lambda state: {"messages": [llm.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode(tools, handle_tool_errors=False))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    graph = builder.compile(checkpointer=InMemorySaver())
    with journaled(jface, graph):
        with pytest.raises(ConnectionError):
            graph.invoke({"messages": [HumanMessage("covered?")]}, CONFIG)
        result = graph.invoke(None, CONFIG)

    assert result["messages"][-1].content == "Covered."
    assert (len(model.calls), policy_count.n, claim_count.n) == (2, 1, 2)  # only the failed call ran again
    assert model.calls[0]["tools"][0]["function"]["name"] == "lookup_policy"
    tool_entries = [e for e in await jface.call("entries", "claim-42") if e["kind"] == "tool"]
    assert sorted((e["node"], e["effect_key"], e["tool_call_id"], e["attempts"]) for e in tool_entries) == [
        ("tools", "tool_call:call_a", "call_a", 1),
        ("tools", "tool_call:call_b", "call_b", 2),
    ]


@pytest.mark.parametrize("client_kind", KINDS, indirect=True)
async def test_a_replayed_stream_yields_the_recorded_message(jface: JournalFace) -> None:
    model = scripted(AIMessage("Policy 7 covers water damage."))
    llm = SecureLLM(model)

    async def stream() -> list[Any]:
        with effect_scope(jface.journal, NodeRun()):
            if jface.is_async:
                return [chunk async for chunk in llm.astream("covered?")]
            return list(llm.stream("covered?"))

    live, replayed = await stream(), await stream()
    assert len(live) > 1 and "".join(c.content for c in live) == "Policy 7 covers water damage."
    assert [c.content for c in replayed] == ["Policy 7 covers water damage."]
    assert len(model.calls) == 1


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
async def test_with_structured_output_is_journaled(jface: JournalFace) -> None:
    class Verdict(BaseModel):
        covered: bool
        reason: str

    call = {"name": "Verdict", "args": {"covered": True, "reason": "water damage"}, "id": "call_v"}
    model = scripted(AIMessage("", tool_calls=[call]))
    judge = SecureLLM(model).with_structured_output(Verdict)
    verdicts = []
    for _ in range(2):
        with effect_scope(jface.journal, NodeRun()):
            verdicts.append(judge.invoke("Is water damage covered?"))
    assert verdicts == [Verdict(covered=True, reason="water damage")] * 2
    assert len(model.calls) == 1


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
@pytest.mark.parametrize("constructor", ["create_agent", "create_react_agent"])
async def test_agent_constructors_run_secure_models_and_tools(jface: JournalFace, constructor: str) -> None:
    model = scripted(
        AIMessage("", tool_calls=[{"name": "lookup_policy", "args": {"ref": "7"}, "id": "call_1"}]), AIMessage("Covered.")
    )
    count = Counter()
    tools = [SecureTool(make_tool("lookup_policy", count, fail_first=True))]
    if constructor == "create_agent":
        from langchain.agents import create_agent

        agent = create_agent(SecureLLM(model), tools=tools, checkpointer=InMemorySaver())
    else:
        from langgraph.prebuilt import create_react_agent

        with pytest.warns(Warning):
            agent = create_react_agent(SecureLLM(model), tools=tools, checkpointer=InMemorySaver())
    with journaled(jface, agent):
        with pytest.raises(ConnectionError):
            agent.invoke({"messages": [HumanMessage("covered?")]}, CONFIG)
        result = agent.invoke(None, CONFIG)
    assert result["messages"][-1].content == "Covered."
    assert (len(model.calls), count.n) == (2, 2)
    kinds = [(e["kind"], e["status"]) for e in await jface.call("entries", "claim-42")]
    assert kinds == [("llm", "completed"), ("tool", "completed"), ("llm", "completed")]


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
async def test_an_interrupt_inside_an_effect_runs_it_again_with_the_answer(jface: JournalFace) -> None:
    count = Counter()

    @effect(kind="payment", at_most_once=True)
    def refund(cents: int) -> str:
        count()
        approved = interrupt(f"refund {cents}?")
        return f"refunded {cents}" if approved else "refused"

    builder = StateGraph(State)
    builder.add_node("settle", lambda state: {"notes": [refund(12000)]})
    builder.add_edge(START, "settle")
    graph = builder.compile(checkpointer=InMemorySaver())
    with journaled(jface, graph):
        graph.invoke({"notes": []}, CONFIG)
        [entry] = await jface.call("entries", "claim-42")
        assert (entry["status"], entry["error"]["type"]) == ("failed", "GraphInterrupt")
        assert graph.invoke(Command(resume=True), CONFIG)["notes"] == ["refunded 12000"]
    assert count.n == 2
