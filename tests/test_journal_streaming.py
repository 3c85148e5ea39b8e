"""A ``SecureLLM`` streams and shows each call exactly as the bare model does (offline, on DurablePlatform).

A graph whose one node calls the model is run with the bare model and with ``SecureLLM`` around it, and what
``stream_mode=["updates", "messages"]``, ``astream_events`` and callbacks show is compared. Two models: one that
implements only ``_generate`` (it cannot stream) and one that streams three chunks.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict
from uuid import uuid4

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb.journal import SecureLLM
from langgraph_durable_mongodb.platform import DurablePlatform


class GenerateOnly(BaseChatModel):
    """A model with only ``_generate`` (many custom and fake models): ``calls`` counts its real calls."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "generate-only"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.calls += 1
        return ChatResult(generations=[ChatGeneration(message=AIMessage("policy 7 is covered"))])


class Streaming(GenerateOnly):
    """A model that streams its answer in three chunks."""

    def _stream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.calls += 1
        for text in ("policy 7 ", "is ", "covered"):
            yield ChatGenerationChunk(message=AIMessageChunk(text))


class State(TypedDict, total=False):
    notes: Annotated[list, operator.add]


def graph_of(platform: DurablePlatform, llm: Any, is_async: bool, crash_once: bool = False) -> Any:
    """Nodes asking ``llm`` (``invoke``, or ``ainvoke`` when ``is_async``): two in parallel, or one that crashes
    once after its call (``crash_once``)."""
    crashed: list[int] = []

    def crash() -> None:
        if crash_once and not crashed:
            crashed.append(1)
            raise ConnectionError("worker lost")

    def review(state: State) -> State:
        reply = llm.invoke("review policy 7")
        crash()
        return {"notes": [reply.content]}

    async def areview(state: State) -> State:
        reply = await llm.ainvoke("review policy 7")
        crash()
        return {"notes": [reply.content]}

    builder = StateGraph(State)
    for name in ("review",) if crash_once else ("review", "recheck"):
        builder.add_node(name, areview if is_async else review)
        builder.add_edge(START, name)
    return platform.compile(builder)


def config(**extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid4())}, **extra}


def shown(parts: list[Any]) -> list[Any]:
    """What ``stream_mode=["updates", "messages"]`` showed, without the run-specific ids and metadata."""
    out = []
    for mode, payload in parts:
        if mode == "messages":
            message, meta = payload
            out.append((mode, meta["langgraph_node"], type(message).__name__, message.content))
        else:
            out.append((mode, payload))
    return sorted(out, key=repr)


async def stream_parts(graph: Any, is_async: bool, cfg: dict[str, Any], resume: bool = False) -> list[Any]:
    inputs = None if resume else {"notes": []}
    modes = ["updates", "messages"]
    if is_async:
        return [part async for part in graph.astream(inputs, cfg, stream_mode=modes)]
    return list(graph.stream(inputs, cfg, stream_mode=modes))


@pytest.mark.parametrize("model_type", [GenerateOnly, Streaming])
@pytest.mark.parametrize("is_async", [False, True], ids=["stream", "astream"])
async def test_messages_mode_shows_what_the_bare_model_shows(model_type: type, is_async: bool) -> None:
    platform = DurablePlatform.embedded()
    bare, wrapped = model_type(), model_type()
    expected = shown(await stream_parts(graph_of(platform, bare, is_async), is_async, config()))
    got = shown(await stream_parts(graph_of(platform, SecureLLM(wrapped), is_async), is_async, config()))
    assert got == expected
    assert [p for p in got if p[0] == "messages"]  # the model's message(s) were streamed, once per node
    assert wrapped.calls == bare.calls == 2


@pytest.mark.parametrize("model_type", [GenerateOnly, Streaming])
@pytest.mark.parametrize("is_async", [False, True], ids=["stream", "astream"])
async def test_a_replayed_call_streams_its_recorded_message_once(model_type: type, is_async: bool) -> None:
    platform, model = DurablePlatform.embedded(), model_type()
    graph, cfg = graph_of(platform, SecureLLM(model), is_async, crash_once=True), config()
    with pytest.raises(ConnectionError):
        await stream_parts(graph, is_async, cfg)
    resumed = shown(await stream_parts(graph, is_async, cfg, resume=True))
    messages = [p for p in resumed if p[0] == "messages"]
    assert model.calls == 1  # the resume replays
    assert [(p[1], p[3]) for p in messages] == [("review", "policy 7 is covered")]


class Runs(BaseCallbackHandler):
    """Chat model runs seen by callbacks: each run's name, tags, ``durable`` metadata and token count."""

    def __init__(self) -> None:
        self.runs: dict[Any, dict[str, Any]] = {}

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: Any, **kw: Any) -> None:
        durable = (kw.get("metadata") or {}).get("durable")
        self.runs[run_id] = {"name": kw.get("name") or serialized.get("name"), "tags": kw.get("tags"), "durable": durable, "tokens": 0}

    def on_llm_new_token(self, token: str, *, run_id: Any, **kw: Any) -> None:
        self.runs[run_id]["tokens"] += 1


async def run_events(graph: Any, is_async: bool, cfg: dict[str, Any], inputs: Any) -> list[dict[str, Any]]:
    """The chat model runs of one run (crashed or not): from ``astream_events`` (async), from callbacks under
    ``stream`` (sync)."""
    runs = Runs()
    try:
        if not is_async:
            list(graph.stream(inputs, {**cfg, "callbacks": [runs]}, stream_mode="messages"))
        else:
            async for event in graph.astream_events(inputs, cfg, version="v2"):
                if event["event"] == "on_chat_model_start":
                    durable = event["metadata"].get("durable")
                    runs.runs[event["run_id"]] = {"name": event["name"], "tags": event["tags"], "durable": durable, "tokens": 0}
                elif event["event"] == "on_chat_model_stream":
                    runs.runs[event["run_id"]]["tokens"] += 1
    except ConnectionError:
        pass
    return sorted(runs.runs.values(), key=repr)


@pytest.mark.parametrize("model_type", [GenerateOnly, Streaming])
@pytest.mark.parametrize("is_async", [False, True], ids=["callbacks", "astream_events"])
async def test_each_call_shows_once_real_or_replayed(model_type: type, is_async: bool) -> None:
    platform = DurablePlatform.embedded()
    bare = await run_events(graph_of(platform, model_type(), is_async), is_async, config(), {"notes": []})
    model = model_type()
    graph, cfg = graph_of(platform, SecureLLM(model), is_async), config()
    real = await run_events(graph, is_async, cfg, {"notes": []})
    assert len(real) == len(bare) == 2  # one run per node's call: no second run for the wrapped model
    assert [r["tokens"] for r in real] == [r["tokens"] for r in bare]
    assert [r["name"] for r in real] == [r["name"] for r in bare] == [model_type.__name__] * 2  # filters still match
    assert all(r["durable"]["replayed"] is False and "durable:replayed" not in r["tags"] for r in real)
    assert {r["durable"]["node"] for r in real} == {"review", "recheck"}

    graph, cfg = graph_of(platform, SecureLLM(model), is_async, crash_once=True), config()
    [crashed] = await run_events(graph, is_async, cfg, {"notes": []})
    [replayed] = await run_events(graph, is_async, cfg, None)
    assert model.calls == 3  # the resume replays
    assert crashed["durable"]["replayed"] is False
    assert replayed["durable"]["replayed"] is True and "durable:replayed" in replayed["tags"]
    assert replayed["name"] == crashed["name"] == model_type.__name__
    assert (crashed["tokens"], replayed["tokens"]) == ((4, 1) if model_type is Streaming else (0, 0))


@pytest.mark.parametrize("model_type", [GenerateOnly, Streaming])
@pytest.mark.parametrize("is_async", [False, True], ids=["stream", "astream"])
async def test_a_model_bound_with_a_config_keeps_it_in_a_nested_run_and_still_streams(
    model_type: type, is_async: bool
) -> None:
    # Its config (tags here; callbacks, run names) belongs to its own run: it runs through stream, nested, not streamed twice.
    platform, model = DurablePlatform.embedded(), model_type()
    graph = graph_of(platform, SecureLLM(model.with_config(tags=["reviewer"])), is_async)
    runs, cfg = Runs(), config()
    parts = [p async for p in graph.astream({"notes": []}, {**cfg, "callbacks": [runs]}, stream_mode=["updates", "messages"])] \
        if is_async else list(graph.stream({"notes": []}, {**cfg, "callbacks": [runs]}, stream_mode=["updates", "messages"]))
    expected = shown(await stream_parts(graph_of(platform, model_type(), is_async), is_async, config()))
    assert shown(parts) == expected
    nested = [r for r in runs.runs.values() if "reviewer" in (r["tags"] or [])]
    assert len(nested) == 2 and all("nostream" in r["tags"] for r in nested)
    assert model.calls == 2
