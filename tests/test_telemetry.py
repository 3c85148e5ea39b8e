"""OpenTelemetry (issue 46): what the SDK's in-memory exporter and reader see of real runs.

A crashed-then-resumed ReAct turn gives its effects' spans, executed then replayed, under the caller's span; a
run-lock take-over and loss, outcomes unknown and settled, lost records and non-determinism are counted; no
input, outcome or error message reaches an attribute. On the embedded platform and the server tier.
"""

from __future__ import annotations

import asyncio
import contextvars
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Any, TypedDict

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition

from langgraph_durable_mongodb import (
    CheckpointNotStoredError,
    EffectOutcomeUnknownError,
    InputChangedWarning,
    NondeterminismError,
)
from langgraph_durable_mongodb.journal import EffectCall, SecureLLM, SecureTool, effect
from langgraph_durable_mongodb.platform import DurablePlatform
from langgraph_durable_mongodb.runs.run_lock import RunLocks
from langgraph_durable_mongodb.telemetry import instruments

from .journal_helpers import POS, SEARCH, SYNC_KINDS, Counter, owned_entry
from .telemetry_helpers import Telemetry, ToolAsker, app_tracer, attribute, effect_spans

NS = "langgraph_durable_mongodb."
CONFIG = {"configurable": {"thread_id": "case-42"}}


def react(model: ToolAsker, looked_up: Counter, crashes: list[str]) -> StateGraph:
    """agent -> tools -> agent; the tools node dies once after its tool ran (``crashes`` holds what is left)."""
    llm = SecureLLM(model)

    @tool
    def lookup(query: str) -> str:
        """Look a policy up."""
        looked_up()
        return "covered"

    secure = SecureTool(lookup)

    def agent(state: MessagesState) -> dict:
        return {"messages": [llm.invoke(state["messages"])]}

    async def aagent(state: MessagesState) -> dict:
        return {"messages": [await llm.ainvoke(state["messages"])]}

    def tools(state: MessagesState) -> dict:
        message = secure.invoke(state["messages"][-1].tool_calls[0])
        if crashes:
            raise ConnectionError(crashes.pop())
        return {"messages": [message]}

    async def atools(state: MessagesState) -> dict:
        message = await secure.ainvoke(state["messages"][-1].tool_calls[0])
        if crashes:
            raise ConnectionError(crashes.pop())
        return {"messages": [message]}

    from langchain_core.runnables import RunnableLambda

    graph = StateGraph(MessagesState)
    graph.add_node("agent", RunnableLambda(agent, afunc=aagent, name="agent"))
    graph.add_node("tools", RunnableLambda(tools, afunc=atools, name="tools"))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph


async def turn(graph: Any, is_async: bool, inputs: Any, name: str) -> Any:
    """One call of the graph inside an application span named ``name``."""
    with app_tracer().start_as_current_span(name):
        return await graph.ainvoke(inputs, CONFIG) if is_async else graph.invoke(inputs, CONFIG)


def children(spans: list[Any], parent: Any) -> list[Any]:
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_a_crashed_then_resumed_react_turn_gives_its_effects_spans_replayed_marked(
    make_platform: Any, otel: Telemetry, is_async: bool
) -> None:
    platform = make_platform()
    model, looked_up = ToolAsker(), Counter()
    graph = platform.compile(react(model, looked_up, ["worker lost"]))
    with pytest.raises(ConnectionError):
        await turn(graph, is_async, {"messages": [HumanMessage("is water damage covered?")]}, "first")
    result = await turn(graph, is_async, None, "resume")
    assert result["messages"][-1].content == "The answer is covered."
    assert (model.calls, looked_up.n) == (2, 1)  # each effect ran once; the resume replayed the tool
    platform.run_locks.wait_releases(10)

    spans = otel.spans()
    first, resume = otel.spans("first")[0], otel.spans("resume")[0]
    under_first, under_resume = effect_spans(children(spans, first)), effect_spans(children(spans, resume))
    assert [(s.name, attribute(s, "execution")) for s in under_first] == [
        ("llm ToolAsker", "executed"), ("tool lookup", "executed"),
    ]
    assert [(s.name, attribute(s, "execution")) for s in under_resume] == [
        ("tool lookup", "replayed"), ("llm ToolAsker", "executed"),
    ]
    ran, replayed = under_first[1], under_resume[0]
    for name in ("idempotency_key", "path", "node", "visit", "key"):  # the same position, met again
        assert attribute(replayed, name) == attribute(ran, name) and attribute(ran, name)
    assert (attribute(ran, "attempt"), attribute(replayed, "attempt")) == (1, 0)
    assert attribute(ran, "node") == "tools" and ran.attributes["gen_ai.conversation.id"] == "case-42"
    assert ran.attributes["gen_ai.tool.call.id"] == attribute(ran, "key").removeprefix("tool_call:")
    assert {attribute(s, "outcome") for s in under_first + under_resume} == {"completed"}
    assert attribute(ran, "at_most_once") is False
    # the journal's own time: a claim and a record under each executed effect, a claim only under the replay (and a
    # wait for its root checkpoint, when a visit's first effect finds it not stored yet: durability="async")
    journal = lambda effect: sorted(s.name for s in children(spans, effect) if s.name != "checkpoint wait_stored")  # noqa: E731
    assert journal(ran) == ["journal claim", "journal record"] and journal(replayed) == ["journal claim"]
    # the run lock and the checkpoint stores under each call's span
    assert {"run_lock take", "checkpoint store"} <= {s.name for s in children(spans, resume)}
    assert otel.added("effects.executed", kind="llm") == 2 and otel.added("effects.executed", kind="tool") == 1
    assert otel.added("effects.replayed", kind="tool") == 1 and otel.added("effects.replayed", kind="llm") == 0
    assert otel.added("effect.duration", kind="tool") == 1 and otel.added("journal.duration") == 4


def test_an_effect_in_an_effect_nests_under_it_and_its_own_calls_under_it(otel: Telemetry) -> None:
    """``Invoke``'s context: what the effect's function does (a nested effect, an instrumented client) is under the
    effect's span; the plain form's thread pool and a pool thread the caller copied its context to alike."""
    platform = DurablePlatform.embedded()

    @effect(kind="payment", name="charge")
    def charge(amount: int) -> str:
        with app_tracer().start_as_current_span("psp call"):
            return f"charged {amount}"

    @effect(kind="order", name="place")
    def place(amount: int) -> str:
        return charge(amount)

    class Order(TypedDict):
        done: str

    graph = StateGraph(Order)
    graph.add_node("pay", lambda state: {"done": place(3)})
    graph.add_edge(START, "pay")
    compiled = graph.compile(checkpointer=platform.checkpointer)
    with ThreadPoolExecutor(1) as pool, app_tracer().start_as_current_span("request"):
        context = contextvars.copy_context()
        assert pool.submit(context.run, compiled.invoke, {"done": ""}, CONFIG).result() == {"done": "charged 3"}
    spans = otel.spans()
    by_name = {s.name: s for s in spans}
    assert by_name["order place"].parent.span_id == by_name["request"].context.span_id
    assert by_name["payment charge"].parent.span_id == by_name["order place"].context.span_id
    assert by_name["psp call"].parent.span_id == by_name["payment charge"].context.span_id


async def test_a_stream_is_one_span_its_record_under_it(otel: Telemetry) -> None:
    """The stream's span is not current while the node handles its chunks, but what the model does while a chunk is
    pulled (``Next``'s context) nests under it."""
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    class Traced(GenericFakeChatModel):
        async def _astream(self, *args: Any, **kwargs: Any) -> Any:
            async for chunk in super()._astream(*args, **kwargs):
                app_tracer().start_span("model read").end()  # under the current span: the stream's
                yield chunk

    platform = DurablePlatform.embedded()
    llm = SecureLLM(Traced(messages=iter([AIMessage("streamed reply")])))

    async def chat(state: MessagesState) -> dict:
        chunks = [chunk async for chunk in llm.astream(state["messages"])]
        return {"messages": [AIMessage("".join(c.content for c in chunks))]}

    graph = StateGraph(MessagesState)
    graph.add_node("chat", chat)
    graph.add_edge(START, "chat")
    compiled = graph.compile(checkpointer=platform.checkpointer)
    with app_tracer().start_as_current_span("request") as request:
        await compiled.ainvoke({"messages": [HumanMessage("hi")]}, CONFIG)
    (stream,) = effect_spans(otel.spans())
    assert stream.name == "llm Traced" and attribute(stream, "execution") == "executed"
    assert stream.parent.span_id == request.get_span_context().span_id
    below = [s.name for s in children(otel.spans(), stream)]
    assert sorted(set(below)) == ["journal claim", "journal record", "model read"] and below.count("model read") > 1


# -- run locks ------------------------------------------------------------------------------------------------------


def _lock(locks: RunLocks, **holder: Any) -> Any:
    runs = locks._sync_io.db["thread_runs"]  # noqa: SLF001 - plant a holder as another run would have left it
    locks.setup()
    runs.update_one({"thread_id": "case-42"}, {"$set": {**holder, "fence": 5}}, upsert=True)
    return runs


def _held_elsewhere(mongo_client: Any, db_name: str, wait_seconds: float, owner: str, lease_seconds: float) -> RunLocks:
    """Run locks whose case-42 lock ``owner`` holds at fence 5, its lease ending in ``lease_seconds``."""
    locks = RunLocks(mongo_client, db_name=db_name, wait_seconds=wait_seconds)
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    _lock(locks, owner=owner, owner_host="another-host", owner_pid=7, lease_until=now + timedelta(seconds=lease_seconds))
    return locks


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
def test_a_take_over_increments_its_counter_and_marks_its_span(mongo_client: Any, db_name: str, otel: Telemetry) -> None:
    locks = _held_elsewhere(mongo_client, db_name, 0, "elsewhere", -1)
    with locks.hold(["case-42"]):
        pass
    assert otel.added("run_locks.taken_over") == 1
    (take,) = otel.spans("run_lock take")
    assert take.attributes[NS + "run_lock.taken_over"] is True and take.attributes[NS + "run_lock.fence"] == 6
    assert [e.name for e in take.events] == ["run_lock taken over"]
    locks.wait_releases(10)
    with locks.hold(["case-42"]):  # released: taken, not taken over
        pass
    assert otel.added("run_locks.taken_over") == 1 and otel.added("run_lock.wait.duration") == 2


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
def test_a_take_that_waits_for_a_live_run_says_so(mongo_client: Any, db_name: str, otel: Telemetry) -> None:
    """It polls while another live run holds the thread (an event per wait), then gives up: the span ends in error."""
    from langgraph_durable_mongodb import ThreadBusyError

    locks = _held_elsewhere(mongo_client, db_name, 1.0, "elsewhere", 60)  # a first poll well within the wait
    with pytest.raises(ThreadBusyError):
        locks.acquire(["case-42"])
    (take,) = otel.spans("run_lock take")
    waits = take.attributes[NS + "run_lock.waits"]
    assert waits >= 1 and [e.name for e in take.events] == ["run_lock wait"] * waits
    assert take.attributes["error.type"] == "langgraph_durable_mongodb.errors.ThreadBusyError"
    assert otel.added("run_lock.wait.duration") == 1 and otel.added("run_locks.taken_over") == 0


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
def test_taking_this_process_s_own_ended_run_s_lock_is_no_take_over(mongo_client: Any, db_name: str, otel: Telemetry) -> None:
    """Its release still under way (``_ended_here``), the lock is this process's to take: not a take-over."""
    locks = _held_elsewhere(mongo_client, db_name, 0, "ended-here", 60)
    RunLocks._note_ended("ended-here", ended=True)
    try:
        with locks.hold(["case-42"]):
            pass
    finally:
        RunLocks._note_ended("ended-here", ended=False)
    assert otel.added("run_locks.taken_over") == 0
    assert otel.spans("run_lock take")[0].attributes[NS + "run_lock.taken_over"] is False


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
def test_a_lost_lock_is_counted_and_spanned_under_the_run(mongo_client: Any, db_name: str, otel: Telemetry) -> None:
    locks = RunLocks(mongo_client, db_name=db_name, wait_seconds=0)
    runs = _lock(locks, owner=None, lease_until=datetime(1970, 1, 1))
    with app_tracer().start_as_current_span("run") as run:
        held = locks.acquire(["case-42"])
    runs.update_one({"thread_id": "case-42"}, {"$inc": {"fence": 1}})  # another run took it over meanwhile
    held.release()
    assert held.lost == ["case-42"] and otel.added("run_locks.lost") == 1
    (lost,) = otel.spans("run_lock lost")
    assert lost.parent.span_id == run.get_span_context().span_id
    assert lost.attributes == {"gen_ai.conversation.id": "case-42", NS + "run_lock.fence": 6}


def test_a_wait_for_a_root_checkpoint_is_a_span(otel: Telemetry) -> None:
    platform = DurablePlatform.embedded()
    with pytest.raises(CheckpointNotStoredError):
        platform.checkpointer.wait_stored("case-42", "never-stored", timeout=0.01)
    (wait,) = otel.spans("checkpoint wait_stored")
    assert wait.attributes[NS + "checkpoint.id"] == "never-stored"
    assert wait.attributes["error.type"] == "langgraph_durable_mongodb.errors.CheckpointNotStoredError"


# -- the journal's counters ---------------------------------------------------------------------------------------------


async def test_an_outcome_unknown_is_counted_once_until_a_person_settles_it(jface: Any, otel: Telemetry) -> None:
    """Every run that meets it raises; only the first marks its entry (``unknown_since``) and counts it awaiting.
    ``resolve`` takes it off once; the next run replays the decision."""
    call = EffectCall("tool", "search", input={"q": "weather"}, at_most_once=True)
    await jface.raw_insert(owned_entry(lease_seconds=-1, at_most_once=True))
    for _ in range(2):
        with pytest.raises(EffectOutcomeUnknownError):
            await jface.run(call, jface.fn(_never), position=POS)
    assert otel.added("outcomes.unknown", kind="tool") == 1 and otel.added("outcomes.awaiting") == 1
    (entry,) = await jface.raw({"chunk": 0})
    assert isinstance(entry["unknown_since"], datetime)
    assert [attribute(s, "outcome") for s in effect_spans(otel.spans())] == ["unknown", "unknown"]
    await jface.call("resolve", POS, "sunny")
    await jface.call("resolve", POS, "sunny")  # a second decision on a settled entry takes nothing off
    assert otel.added("outcomes.resolved", decision="resolved") == 1 and otel.added("outcomes.awaiting") == 0
    assert "unknown_since" not in (await jface.raw({"chunk": 0}))[0]
    assert await jface.run(call, jface.fn(_never), position=POS) == "sunny"


async def test_a_run_that_read_the_entry_unmarked_does_not_count_it_again(jface: Any, otel: Telemetry) -> None:
    """Two runs meet the outcome unknown at once, both read it unmarked: the conditional mark lets one count it."""
    call = EffectCall("tool", "search", input={"q": "weather"}, at_most_once=True)
    await jface.raw_insert(owned_entry(lease_seconds=-1, at_most_once=True))
    (unmarked,) = await jface.raw({"chunk": 0})
    for _ in range(2):
        mark = jface.journal._mark_unknown(call, POS, unmarked)  # noqa: SLF001 - each run's mark, as it read the entry
        await jface.journal._arun(mark) if jface.is_async else jface.journal._run(mark)  # noqa: SLF001
    assert otel.added("outcomes.unknown", kind="tool") == 1 and otel.added("outcomes.awaiting") == 1


async def test_a_discarded_unknown_outcome_is_taken_off(jface: Any, otel: Telemetry) -> None:
    call = EffectCall("tool", "search", input={"q": "weather"}, at_most_once=True)
    await jface.raw_insert(owned_entry(lease_seconds=-1, at_most_once=True))
    with pytest.raises(EffectOutcomeUnknownError):
        await jface.run(call, jface.fn(_never), position=POS)
    await jface.call("discard", POS)
    assert otel.added("outcomes.resolved", decision="discarded") == 1 and otel.added("outcomes.awaiting") == 0


async def _never() -> str:
    raise AssertionError("an effect whose outcome is unknown must not run")


async def test_non_determinism_is_counted(jface: Any, otel: Telemetry) -> None:
    async def sunny() -> str:
        return "sunny"

    await jface.run(SEARCH, jface.fn(sunny), position=POS)
    with pytest.warns(InputChangedWarning):
        await jface.run(EffectCall("tool", "search", input={"q": "rain"}), jface.fn(sunny), position=POS)
    with pytest.raises(NondeterminismError):
        await jface.run(EffectCall("tool", "book", input={}), jface.fn(sunny), position=POS)
    assert otel.added("nondeterminism.detected", reason="input_changed", action="warned") == 1
    assert otel.added("nondeterminism.detected", reason="effect_changed", action="raised") == 1


async def test_a_record_fenced_out_is_counted(jface: Any, otel: Telemetry) -> None:
    """Another worker takes the position over while the effect runs: its record is lost."""

    async def taken_over() -> str:
        await jface.raw_update({"chunk": 0}, {"$inc": {"fence": 1}})
        return "sunny"

    assert await jface.run(SEARCH, jface.fn(taken_over), position=POS) == "sunny"
    assert otel.added("records.lost", kind="tool") == 1


# -- nothing secret ---------------------------------------------------------------------------------------------------

SECRET = "sk-live-7f3a9c1e5b"


def _texts(otel: Telemetry) -> list[str]:
    """Every text the telemetry holds: span names, attributes, events' names and attributes, status descriptions,
    metric attributes."""
    texts: list[str] = []
    for span in otel.spans():
        texts += [span.name, str(span.status.description or "")]
        texts += [f"{k}={v}" for k, v in (span.attributes or {}).items()]
        for event in span.events:
            texts += [event.name, *(f"{k}={v}" for k, v in (event.attributes or {}).items())]
    texts += [f"{name} {dict(attributes)}" for name, attributes in otel.points()]
    return texts


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_no_input_outcome_or_error_message_reaches_the_telemetry(otel: Telemetry, is_async: bool) -> None:
    platform = DurablePlatform.embedded()

    @effect(kind="payment")
    def charge(card: dict) -> dict:
        return {"receipt": f"paid with {card['api_key']}", "token": SECRET}

    @effect(kind="payment")
    def refund(card: dict) -> dict:
        raise ValueError(f"refund refused for password {card['password']}")

    @effect(kind="payment")
    async def acharge(card: dict) -> dict:
        return {"receipt": f"paid with {card['api_key']}", "token": SECRET}

    class Pay(TypedDict):
        note: str

    def pay(state: Pay) -> Pay:
        card = {"api_key": SECRET, "password": SECRET, "number": SECRET}
        charge(card)
        try:
            refund(card)
        except ValueError:
            pass
        return {"note": "done"}

    async def apay(state: Pay) -> Pay:
        await acharge({"api_key": SECRET})
        return pay(state)

    graph = StateGraph(Pay)
    graph.add_node("pay", apay if is_async else pay)
    graph.add_edge(START, "pay")
    compiled = graph.compile(checkpointer=platform.checkpointer)
    for _ in range(2):  # executed, then replayed
        await compiled.ainvoke({"note": ""}, {"configurable": {"thread_id": f"t-{_}"}}) if is_async else (
            compiled.invoke({"note": ""}, {"configurable": {"thread_id": f"t-{_}"}}))
    texts = _texts(otel)
    assert len(effect_spans(otel.spans())) >= 4 and any("ValueError" in t for t in texts)  # it read real spans
    assert [t for t in texts if SECRET in t] == []


# -- the extra's absence costs nothing ---------------------------------------------------------------------------------


def test_no_module_imports_opentelemetry_but_lazily_in_one_place() -> None:
    """``opentelemetry`` is imported inside a function of ``telemetry/instruments.py`` only: importing the package,
    or any module of it, imports nothing of it."""
    import ast
    from pathlib import Path

    src = Path(instruments.__file__).resolve().parents[1]
    found = []
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text())
        top = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "opentelemetry" for n in names):
                found.append((str(path.relative_to(src)), id(node) in top))
    assert found and {where for where, _ in found} == {"telemetry/instruments.py"}
    assert not any(at_top for _, at_top in found)


SUBPROCESS_EFFECT = """
import sys
{block}
from langgraph.graph import START, StateGraph
from typing import TypedDict
from langgraph_durable_mongodb import DurablePlatform
from langgraph_durable_mongodb.journal import effect
from langgraph_durable_mongodb.telemetry import instruments, watches

@effect(kind="tool")
def lookup(q: str) -> str:
    return q.upper()

class S(TypedDict):
    q: str

graph = StateGraph(S)
graph.add_node("n", lambda s: {{"q": lookup(s["q"])}})
graph.add_edge(START, "n")
platform = DurablePlatform.embedded()
assert platform.compile(graph).invoke({{"q": "x"}}, {{"configurable": {{"thread_id": "t"}}}}) == {{"q": "X"}}
print(sorted({{m.split(".")[0] for m in sys.modules if m.startswith("opentelemetry")}}),
      instruments._Found.missing, watches.effect_watch("tool", "lookup", False) is watches.UNWATCHED)
"""

BLOCKED = """
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry":
            raise ImportError("opentelemetry is not installed")
sys.meta_path.insert(0, Blocked())
"""


def _run_child(block: str) -> str:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", SUBPROCESS_EFFECT.format(block=block)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_without_the_api_an_effect_runs_and_imports_nothing_of_it() -> None:
    assert _run_child(BLOCKED) == "[] True True"


def test_with_the_api_and_no_provider_configured_an_effect_builds_no_span() -> None:
    """The no-op tracer's case: nothing configured, every factory answers ``UNWATCHED`` (no span, no measure)."""
    assert _run_child("") == "['opentelemetry'] False True"


def test_the_run_s_loop_keeps_its_context(otel: Telemetry) -> None:
    """An async effect's span is detached on the task that attached it: the caller's span is current again after."""
    platform = DurablePlatform.embedded()

    @effect(kind="tool")
    async def lookup(q: str) -> str:
        await asyncio.sleep(0)
        return q

    class S(TypedDict):
        q: str

    async def node(state: S) -> S:
        from opentelemetry import trace

        before = trace.get_current_span()
        await lookup("a")
        assert trace.get_current_span() is before
        return {"q": await lookup("b")}

    graph = StateGraph(S)
    graph.add_node("n", node)
    graph.add_edge(START, "n")
    assert asyncio.run(graph.compile(checkpointer=platform.checkpointer).ainvoke({"q": ""}, CONFIG)) == {"q": "b"}
    assert len(effect_spans(otel.spans())) == 2


def test_the_functional_api_and_a_sync_effect_in_an_async_node_nest_alike(otel: Telemetry) -> None:
    """Every caller: an ``@entrypoint`` calling an effect, and a sync effect called from an async node (a sync call
    on the event loop): each effect's span is under the span current where the graph was called."""
    from langgraph.func import entrypoint

    platform = DurablePlatform.embedded()

    @effect(kind="tool", name="lookup")
    def lookup(q: str) -> str:
        return q.upper()

    @entrypoint(checkpointer=platform.checkpointer)
    def flow(q: str) -> str:
        return lookup(q)

    class S(TypedDict):
        q: str

    async def node(state: S) -> S:
        return {"q": lookup(state["q"])}  # sync, on the loop

    graph = StateGraph(S)
    graph.add_node("n", node)
    graph.add_edge(START, "n")
    compiled = graph.compile(checkpointer=platform.checkpointer)
    with app_tracer().start_as_current_span("functional") as functional:
        assert flow.invoke("a", {"configurable": {"thread_id": "f"}}) == "A"
    with app_tracer().start_as_current_span("async node") as async_node:
        assert asyncio.run(compiled.ainvoke({"q": "b"}, {"configurable": {"thread_id": "g"}})) == {"q": "B"}
    first, second = effect_spans(otel.spans())
    assert first.parent.span_id == functional.get_span_context().span_id
    assert second.parent.span_id == async_node.get_span_context().span_id
    assert {attribute(first, "execution"), attribute(second, "execution")} == {"executed"}
