"""What LangChain callbacks see of journaled calls, executed and replayed, on DurablePlatform (offline).

Each call shows as one callback run, the wrapped model running inside it. Each test runs a graph whose node calls a ``SecureLLM`` and a ``SecureTool``, then crashes once; the resume
replays both. The fake model reports 15 tokens per real call and counts its real calls.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.callbacks import BaseCallbackHandler, UsageMetadataCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb.journal import SecureLLM, SecureTool
from langgraph_durable_mongodb.platform import DurablePlatform

from .journal_helpers import Counter

USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
META = {"model_name": "fake-usage"}


class UsageModel(BaseChatModel):
    """A chat model answering "covered" for 15 tokens; ``calls`` counts its real calls (invoke or stream)."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "fake-usage"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.calls += 1
        message = AIMessage("covered", usage_metadata=USAGE, response_metadata=META)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.calls += 1
        yield ChatGenerationChunk(message=AIMessageChunk("cov"))
        yield ChatGenerationChunk(message=AIMessageChunk("ered", usage_metadata=USAGE, response_metadata=META))


class Recorder(BaseCallbackHandler):
    """Every chat model and tool run: ``(event, name, tags, metadata["durable"], payload)``."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, list[str], dict | None, Any]] = []
        self._runs: dict[Any, tuple[str, list[str], dict | None]] = {}

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: Any, name: Any = None, **kw: Any) -> None:
        self._start(run_id, name or serialized.get("name"), kw.get("tags"), kw.get("metadata"))

    def on_llm_end(self, response: Any, *, run_id: Any, **kw: Any) -> None:
        self._end("llm", run_id, response.generations[0][0].message)

    def on_tool_start(self, serialized: Any, input_str: Any, *, run_id: Any, **kw: Any) -> None:
        self._start(run_id, serialized.get("name"), kw.get("tags"), kw.get("metadata"))

    def on_tool_end(self, output: Any, *, run_id: Any, **kw: Any) -> None:
        self._end("tool", run_id, output)

    def _start(self, run_id: Any, name: str, tags: Any, metadata: Any) -> None:
        self._runs[run_id] = (name, list(tags or []), (metadata or {}).get("durable"))

    def _end(self, kind: str, run_id: Any, payload: Any) -> None:
        name, tags, durable = self._runs.pop(run_id)
        self.events.append((kind, name, tags, durable, payload))

    def runs(self, kind: str, name: str) -> list[tuple[list[str], dict | None, Any]]:
        return [(tags, durable, payload) for k, n, tags, durable, payload in self.events if (k, n) == (kind, name)]


class State(TypedDict, total=False):
    notes: Annotated[list, operator.add]


def counting_lookup(count: Counter) -> Any:
    @tool("lookup_policy")
    def lookup(ref: str) -> str:
        """Look a policy up."""
        count()
        return f"policy {ref}"

    return lookup


CALL = {"type": "tool_call", "id": "call-7", "name": "lookup_policy", "args": {"ref": "7"}}


def build(mode: str, llm: SecureLLM, lookup: SecureTool) -> StateGraph:
    """One node: the LLM (invoke, ainvoke, stream or astream), the tool for a tool call, then a crash the first time."""
    crashed: list[int] = []

    def crash_once() -> None:
        if not crashed:
            crashed.append(1)
            raise ConnectionError("worker lost")

    def review(state: State) -> State:
        if mode == "stream":
            chunks = list(llm.stream("review policy 7"))
            reply: BaseMessage = sum(chunks[1:], chunks[0])
        else:
            reply = llm.invoke("review policy 7")
        found = lookup.invoke(CALL)
        crash_once()
        return {"notes": [reply, found]}

    async def areview(state: State) -> State:
        if mode == "astream":
            chunks = [chunk async for chunk in llm.astream("review policy 7")]
            reply: BaseMessage = sum(chunks[1:], chunks[0])
        else:
            reply = await llm.ainvoke("review policy 7")
        found = await lookup.ainvoke(CALL)
        crash_once()
        return {"notes": [reply, found]}

    builder = StateGraph(State)
    builder.add_node("review", review if mode in ("invoke", "stream") else areview)
    builder.add_edge(START, "review")
    return builder


@pytest.fixture(params=["platform.compile", "plain compile"])
def compile_graph(request: pytest.FixtureRequest) -> Any:
    platform = DurablePlatform.embedded()
    if request.param == "platform.compile":
        return platform.compile
    return lambda builder: builder.compile(checkpointer=platform.checkpointer)


async def crash_then_resume(graph: Any, mode: str) -> tuple[tuple[Any, Any], tuple[Any, Any, dict]]:
    """The first run (crashes) and the resume, each with its own usage handler and recorder."""
    runs = []
    for inputs in ({"notes": []}, None):
        usage, recorder = UsageMetadataCallbackHandler(), Recorder()
        config = {"configurable": {"thread_id": f"case-{mode}"}, "callbacks": [usage, recorder]}
        try:
            result = await graph.ainvoke(inputs, config) if mode.startswith("a") else graph.invoke(inputs, config)
        except ConnectionError:
            result = None
        runs.append((usage, recorder, result))
    (first_usage, first, _), (usage, resumed, result) = runs
    return (first_usage, first), (usage, resumed, result)


MODES = ["invoke", "ainvoke", "stream", "astream"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_real_call_counts_its_tokens_once_and_a_replay_none(compile_graph: Any, mode: str) -> None:
    model, tool_runs = UsageModel(), Counter()
    graph = compile_graph(build(mode, SecureLLM(model), SecureTool(counting_lookup(tool_runs))))
    (first_usage, _), (usage, _, result) = await crash_then_resume(graph, mode)
    assert first_usage.usage_metadata["fake-usage"]["total_tokens"] == 15
    assert usage.usage_metadata == {}  # the resume made no call
    assert (model.calls, tool_runs.n) == (1, 1)
    reply, found = result["notes"]
    assert (reply.content, reply.usage_metadata["total_tokens"]) == ("covered", 15)  # the recorded message, usage kept
    assert isinstance(found, ToolMessage) and found.content == "policy 7"


@pytest.mark.parametrize("mode", MODES)
async def test_each_run_says_where_it_is_and_whether_it_replayed(compile_graph: Any, mode: str) -> None:
    llm = SecureLLM(UsageModel(), effect_name="reviewer")
    graph = compile_graph(build(mode, llm, SecureTool(counting_lookup(Counter()))))
    (_, first), (_, resumed, _) = await crash_then_resume(graph, mode)

    [(tags, executed, shown)] = first.runs("llm", "UsageModel")
    assert "durable:replayed" not in tags and executed["replayed"] is False
    assert shown.usage_metadata["total_tokens"] == 15  # the one run of the real call reports its tokens
    # the wrapped model ran inside it, not in a run of its own: the run carries the wrapped model's name, once
    assert [e for e in first.events if e[0] == "llm"] == [("llm", "UsageModel", tags, executed, shown)]
    [(tags, replayed, shown)] = resumed.runs("llm", "UsageModel")
    assert "durable:replayed" in tags and replayed == {**executed, "replayed": True}
    assert (shown.content, shown.usage_metadata) == ("covered", None)
    assert len([e for e in resumed.events if e[0] == "llm"]) == 1  # the replay's one run: the model never ran
    assert executed["path"] == "agent/1" and executed["node"] == "review"
    assert executed["idempotency_key"].startswith("ik-") and executed["effect_key"] == "1"


@pytest.mark.parametrize("mode", MODES)
async def test_a_replayed_tool_call_still_runs_the_tool_callbacks(compile_graph: Any, mode: str) -> None:
    graph = compile_graph(build(mode, SecureLLM(UsageModel()), SecureTool(counting_lookup(Counter()))))
    (_, first), (_, resumed, _) = await crash_then_resume(graph, mode)
    [(tags, executed, output)] = first.runs("tool", "lookup_policy")
    assert "durable:replayed" not in tags and executed["replayed"] is False
    assert executed["effect_key"] == "tool_call:call-7"
    [(tags, replayed, replayed_output)] = resumed.runs("tool", "lookup_policy")
    assert "durable:replayed" in tags and replayed == {**executed, "replayed": True}
    assert isinstance(replayed_output, ToolMessage) and replayed_output.content == output.content == "policy 7"
