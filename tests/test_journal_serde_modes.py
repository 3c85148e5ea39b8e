"""A replayed effect returns the type the first run returned, whatever the serde mode.

Under ``LANGGRAPH_STRICT_MSGPACK=true``, ``compile()`` (and every run) hands LangGraph a clone of the saver
made by ``with_allowlist``, whose serde also reads the types of the graph's schemas. The journal records
and replays each run's effects with that clone's serde: before, it kept the original one, and a
``Quote`` returned by the first run came back as ``{'amount': 42}`` on replay.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, TypedDict

import pytest
from langchain_core.tools import tool
from langgraph._internal import _serde as compile_serde
from langgraph.checkpoint.serde import _msgpack
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph
from pydantic import BaseModel


from langgraph_durable_mongodb.journal import SecureTool, effect


@dataclasses.dataclass
class DataQuote:
    amount: int


class ModelQuote(BaseModel):
    amount: int


@pytest.fixture(params=["strict", "default"])
def serde_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """What ``LANGGRAPH_STRICT_MSGPACK=true`` sets at import: the serde's and ``compile``'s strict flags."""
    strict = request.param == "strict"
    monkeypatch.setattr(_msgpack, "STRICT_MSGPACK_ENABLED", strict)
    monkeypatch.setattr(compile_serde, "STRICT_MSGPACK_ENABLED", strict)
    return request.param


def quote_graph(platform: Any, quote_type: type, wrapper: str, form: str, runs: list[int], crashes: list[int]) -> Any:
    """A node that gets a quote from an effect, then crashes once; the resume replays the effect."""

    # The quote type is in the state schema, so on the graph's allowlist.
    State = TypedDict("State", {"quote": Optional[quote_type], "got": str}, total=False)  # type: ignore[misc]

    def fetch() -> Any:
        runs.append(1)
        return quote_type(amount=42)

    if wrapper == "effect":
        get_quote = effect(kind="quote", name="get_quote")(fetch)
        call = get_quote
    else:

        @tool
        def quote_tool(ref: str) -> Any:
            """Get a quote."""
            return fetch()

        secure = SecureTool(quote_tool)
        call = lambda: secure.invoke({"ref": "r1"})  # noqa: E731

    def node(state: dict) -> dict:
        quote = call()
        if not crashes:
            crashes.append(1)
            raise ConnectionError("crash after the effect")
        return {"quote": quote, "got": type(quote).__name__}

    builder = StateGraph(State)
    builder.add_node("quote", node)
    builder.add_edge(START, "quote")
    if form == "platform.compile":
        return platform.compile(builder)
    if form == "attach":  # compiled with the platform's saver: under strict msgpack, with its clone
        return platform.attach(builder.compile(checkpointer=platform.checkpointer))
    if form == "attach, with_config":  # copies of the graph, which LangGraph's own copy strips of the allowlist
        return platform.attach(builder.compile()).with_config(run_name="quotes")
    return builder.compile(checkpointer=platform.checkpointer)


@pytest.mark.parametrize("form", ["platform.compile", "plain compile", "attach", "attach, with_config"])
@pytest.mark.parametrize("wrapper", ["effect", "SecureTool"])
@pytest.mark.parametrize("quote_type", [DataQuote, ModelQuote], ids=["dataclass", "pydantic"])
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_a_replayed_outcome_has_the_type_of_the_first_run(
    make_platform: Any, serde_mode: str, is_async: bool, quote_type: type, wrapper: str, form: str
) -> None:
    runs: list[int] = []
    crashes: list[int] = []
    # Built now, under the mode (the saver's default serde was built when LangGraph was imported).
    graph = quote_graph(make_platform(serde=JsonPlusSerializer()), quote_type, wrapper, form, runs, crashes)
    if serde_mode == "strict" and not form.startswith("attach"):  # attach keeps the saver; each run clones it
        assert graph.checkpointer.serde is not graph.checkpointer.base_saver.serde  # compile made the clone
    config = {"configurable": {"thread_id": "quote-1"}}
    with pytest.raises(ConnectionError):
        await graph.ainvoke({}, config) if is_async else graph.invoke({}, config)
    result = await graph.ainvoke(None, config) if is_async else graph.invoke(None, config)
    assert runs == [1]  # executed once, replayed on the resume
    assert result["got"] == quote_type.__name__ and result["quote"] == quote_type(amount=42)
