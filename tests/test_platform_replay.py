"""The replay matrix: each row runs a real graph on DurablePlatform and counts real executions.

Offline on the embedded platform (mongomock, sync and async faces on one
store) and on the real-server tier (pymongo MongoClient + AsyncMongoClient).
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import START, StateGraph
from langgraph.types import Command, RetryPolicy, Send, interrupt

from langgraph_durable_mongodb import NondeterminismError, TopologyError
from langgraph_durable_mongodb.journal import SecureLLM, SecureTool, current_effect, effect
from langgraph_durable_mongodb.platform import DurablePlatform

from .graphs import Notes, State, config, nest
from .journal_helpers import Counter, scripted
from .clients import PlainCompile

#: Every test runs on ``platform.compile(builder)`` and on ``builder.compile(checkpointer=platform.checkpointer)``.
pytestmark = pytest.mark.both_compile_forms


def counting_tool(name: str, count: Counter) -> Any:
    @tool(name)
    def lookup(ref: str) -> str:
        """Look a reference up."""
        count()
        return f"{name}({ref})"

    return lookup


def entries(platform: DurablePlatform, thread: str = "case-42") -> list[dict]:
    return sorted(platform.journal.entries(thread), key=lambda d: (d["path"], d["node"], d["occurrence"], d["effect_key"]))


def positions(platform: DurablePlatform, thread: str = "case-42") -> list[tuple]:
    return [(d["path"], d["node"], d["occurrence"], d["effect_key"], d["kind"], d["name"]) for d in entries(platform, thread)]


# -- row 1: a deep node raises after an LLM call and a tool call; invoke(None) resumes


def test_crash_in_a_deep_node_replays_llm_and_tool(platform: DurablePlatform) -> None:
    model, tool_count, crashed = scripted(AIMessage("covered")), Counter(), []
    llm, lookup = SecureLLM(model), SecureTool(counting_tool("lookup_policy", tool_count))

    def review_policy(state: State) -> State:
        reply = llm.invoke("review policy 7")
        found = lookup.invoke({"ref": "7"})
        if not crashed:
            crashed.append(1)
            raise ConnectionError("worker lost")
        return {"notes": [reply.content, found]}

    graph = platform.compile(nest("review_policy", review_policy, "case_investigation", "policy_analysis"))
    with pytest.raises(ConnectionError):
        graph.invoke({"notes": []}, config())
    result = graph.invoke(None, config())
    assert result["notes"] == ["covered", "lookup_policy(7)"]
    assert (len(model.calls), tool_count.n) == (1, 1)
    path = "agent/1/case_investigation/1/policy_analysis/1"
    assert positions(platform) == [
        (path, "review_policy", "1", "1", "llm", "CountingChatModel"),
        (path, "review_policy", "1", "2", "tool", "lookup_policy"),
    ]


# -- row 2: interrupt() after an LLM call in a nested subgraph; Command(resume=...)


async def test_interrupt_then_resume_replays_the_llm_call(platform: DurablePlatform) -> None:
    model = scripted(AIMessage("draft"))
    llm = SecureLLM(model)

    async def review_policy(state: State) -> State:
        draft = await llm.ainvoke("draft a decision")
        approved = interrupt({"draft": draft.content})
        return {"notes": [f"{draft.content}:{approved}"]}

    graph = platform.compile(nest("review_policy", review_policy, "case_investigation", "policy_analysis"))
    first = await graph.ainvoke({"notes": []}, config())
    assert first["__interrupt__"][0].value == {"draft": "draft"}
    result = await graph.ainvoke(Command(resume="yes"), config())
    assert result["notes"] == ["draft:yes"]
    assert len(model.calls) == 1


def _root_review(llm: Any, sync: bool) -> StateGraph:
    def review(state: State) -> State:
        draft = llm.invoke("draft a decision")
        return {"notes": [f"{draft.content}:{interrupt({'draft': draft.content})}"]}

    async def areview(state: State) -> State:
        draft = await llm.ainvoke("draft a decision")
        return {"notes": [f"{draft.content}:{interrupt({'draft': draft.content})}"]}

    graph = StateGraph(State)
    graph.add_node("review", review if sync else areview)
    graph.add_edge(START, "review")
    return graph


def test_a_root_node_resumed_after_its_interrupt_replays_its_llm_call(platform: DurablePlatform) -> None:
    """The resumed occurrence is keyed by a checkpoint this process wrote, then read back at the resume: not new,
    so its entries are read (the run before it ended cleanly, at the interrupt)."""
    model = scripted(AIMessage("draft"))
    graph = platform.compile(_root_review(SecureLLM(model), sync=True))
    assert graph.invoke({"notes": []}, config())["__interrupt__"][0].value == {"draft": "draft"}
    assert graph.invoke(Command(resume="yes"), config())["notes"] == ["draft:yes"]
    assert len(model.calls) == 1


async def test_an_async_root_node_resumed_after_its_interrupt_replays_its_llm_call(platform: DurablePlatform) -> None:
    model = scripted(AIMessage("draft"))
    graph = platform.compile(_root_review(SecureLLM(model), sync=False))
    assert (await graph.ainvoke({"notes": []}, config()))["__interrupt__"][0].value == {"draft": "draft"}
    assert (await graph.ainvoke(Command(resume="yes"), config()))["notes"] == ["draft:yes"]
    assert len(model.calls) == 1


# -- row 3: RetryPolicy: a node fails after effect 1 and is retried


def test_retry_policy_replays_effect_one(platform: DurablePlatform) -> None:
    charges, attempts = Counter(), Counter()

    @effect(kind="payment", name="charge_card")
    def charge(amount: int) -> str:
        charges()
        return f"charged {amount}"

    def pay(state: State) -> State:
        receipt = charge(42)
        attempts()
        if attempts.n == 1:
            raise TimeoutError("downstream flaky")
        return {"notes": [receipt]}

    retry = RetryPolicy(max_attempts=3, initial_interval=0.01, retry_on=TimeoutError)
    graph = platform.compile(nest("pay", pay, "billing", retry=retry))
    assert graph.invoke({"notes": []}, config())["notes"] == ["charged 42"]
    assert (charges.n, attempts.n) == (1, 2)


# -- row 4: RetryPolicy on a function node that runs subgraphs


def test_retry_of_a_function_node_replays_effects_inside_its_children(platform: DurablePlatform) -> None:
    tool_count, attempts = Counter(), Counter()
    lookup = SecureTool(counting_tool("lookup_policy", tool_count))

    def review(state: State) -> State:
        return {"notes": [lookup.invoke({"ref": state.get("item") or "7"})]}

    child = nest("review", review, "policy_analysis").compile()

    def orchestrate(state: State) -> State:
        first = child.invoke({"notes": [], "item": "a"})
        second = child.invoke({"notes": [], "item": "b"})
        attempts()
        if attempts.n == 1:
            raise TimeoutError("flaky after both children ran")
        return {"notes": first["notes"] + second["notes"]}

    root = StateGraph(State)
    retry = RetryPolicy(max_attempts=2, initial_interval=0.01, retry_on=TimeoutError)
    root.add_node("orchestrate", orchestrate, retry_policy=retry)
    root.add_edge(START, "orchestrate")
    graph = platform.compile(root)
    result = graph.invoke({"notes": []}, config())
    assert result["notes"] == ["lookup_policy(a)", "lookup_policy(b)"]
    assert (tool_count.n, attempts.n) == (2, 2)
    assert len({d["path"] for d in entries(platform)}) == 2


# -- row 5: Send fan-out x3, one worker fails; resume


def test_send_fan_out_resume_reruns_only_the_failed_worker(platform: DurablePlatform) -> None:
    executed: list[str] = []
    failed = []

    @effect(kind="tool", name="inspect_item")
    def inspect(item: str) -> str:
        executed.append(item)
        return f"inspected {item}"

    def worker(state: State) -> State:
        result = inspect(state["item"])
        if state["item"] == "b" and not failed:
            failed.append(1)
            raise RuntimeError("worker b crashed after its effect")
        return {"notes": [result]}

    child = StateGraph(State, output_schema=Notes)
    child.add_node("work", worker)
    child.add_edge(START, "work")
    root = StateGraph(State)
    root.add_node("dispatch", lambda s: {})
    root.add_node("worker", child.compile())
    root.add_edge(START, "dispatch")
    root.add_conditional_edges("dispatch", lambda s: [Send("worker", {"item": i, "notes": []}) for i in "abc"])
    graph = platform.compile(root)
    with pytest.raises(RuntimeError):
        graph.invoke({"notes": []}, config())
    result = graph.invoke(None, config())
    assert sorted(result["notes"]) == ["inspected a", "inspected b", "inspected c"]
    assert sorted(executed) == ["a", "b", "c"]  # each worker's effect ran once, b's replayed on resume
    worker_paths = {d["path"] for d in entries(platform)}
    assert len(worker_paths) == 3


# -- row 6: a loop revisits a compiled child


def test_a_loop_gets_a_distinct_position_per_visit(platform: DurablePlatform) -> None:
    calls = Counter()

    @effect(kind="tool", name="probe")
    def probe(n: int) -> int:
        calls()
        return n + 1

    child = nest("step", lambda s: {"count": probe(s.get("count", 0))}, "inner").compile()
    root = StateGraph(State)
    root.add_node("child", child)
    root.add_edge(START, "child")
    root.add_conditional_edges("child", lambda s: "child" if s["count"] < 2 else "__end__")
    graph = platform.compile(root)
    assert graph.invoke({"count": 0}, config())["count"] == 2
    assert calls.n == 2
    assert sorted({d["path"] for d in entries(platform)}) == ["agent/1/child/1/inner/1", "agent/1/child/2/inner/1"]


# -- row 7: a second invoke with new input on the same thread


def test_a_new_invoke_runs_effects_again_at_new_positions(platform: DurablePlatform) -> None:
    calls = Counter()

    @effect(kind="email", name="send_email")
    def send(to: str) -> str:
        calls()
        return f"sent to {to}"

    graph = platform.compile(nest("notify", lambda s: {"notes": [send("ann")]}, "outbox"))
    graph.invoke({"notes": []}, config())
    graph.invoke({"notes": []}, config())
    assert calls.n == 2
    assert len({(d["path"], d["occurrence"]) for d in entries(platform)}) == 2


# -- row 8: a reused thread id (deleted, then run again) gets fresh positions


def test_a_deleted_thread_run_again_runs_its_effects_again(platform: DurablePlatform) -> None:
    calls = Counter()

    @effect(kind="tool", name="probe")
    def probe(n: int) -> int:
        calls()
        return n + 1

    def route(state: State) -> str:
        """Loop until ``count`` reaches the number of x in ``item``; with "xxx", pass through ``pad`` once."""
        if state["count"] >= state["item"].count("x"):
            return "__end__"
        return "pad" if state["item"] == "xxx" and state["count"] == 1 else "child"

    child = nest("step", lambda s: {"count": probe(s.get("count", 0))}, "inner").compile()
    outer = StateGraph(State)  # inside a compiled child, the child is keyed by its step, not its task id
    outer.add_node("child", child)
    outer.add_node("pad", lambda s: {})
    outer.add_edge(START, "child")
    outer.add_conditional_edges("child", route)
    outer.add_edge("pad", "child")
    root = StateGraph(State)
    root.add_node("outer", outer.compile())
    root.add_edge(START, "outer")
    graph = platform.compile(root)

    assert graph.invoke({"count": 0, "item": "xx"}, config())["count"] == 2  # child at steps 1 and 2
    platform.checkpointer.delete_thread("case-42")
    assert graph.invoke({"count": 0, "item": "xxx"}, config())["count"] == 3  # other steps than the first life
    assert calls.n == 5
    # Each visit of the second life has its own position: none replayed another's outcome.
    assert [(d["path"], d["input"]["preview"], d.get("replays", 0)) for d in entries(platform)] == [
        (f"agent/1/outer/1/child/{n}/inner/1", f'{{"n": {n - 1}}}', 0) for n in (1, 2, 3)
    ]


# -- row 9: update_state at an interrupt (edit), then Command(resume=...)


class Review(TypedDict, total=False):
    claim: str
    tone: str
    notes: Annotated[list, operator.add]


def review_graph(platform: DurablePlatform, llm: Any, policy: Counter) -> Any:
    @effect(kind="tool", name="lookup_policy")
    def lookup(ref: str) -> str:
        policy()
        return f"policy for {ref}"

    def review(state: Review) -> Review:
        found = lookup("P-7")  # its input does not depend on the edited field
        draft = llm.invoke(f"assess {state['claim']}")
        approved = interrupt({"draft": draft.content})
        return {"notes": [found, draft.content, approved]}

    graph = StateGraph(Review)
    graph.add_node("intake", lambda s: {"notes": ["intake"]})
    graph.add_node("review", review)
    graph.add_edge(START, "intake")
    graph.add_edge("intake", "review")
    return platform.compile(graph)


@pytest.mark.parametrize(("edit", "llm_runs"), [({"claim": "C-9 (corrected)"}, 2), ({"tone": "formal"}, 1)])
def test_an_edit_at_an_interrupt_continues_the_occurrence(platform: DurablePlatform, edit: dict, llm_runs: int) -> None:
    model, policy = scripted(AIMessage("draft")), Counter()
    graph = review_graph(platform, SecureLLM(model), policy)
    assert graph.invoke({"claim": "C-9"}, config())["__interrupt__"]
    graph.update_state(config(), edit)  # the human edits the state at the interrupt ...
    result = graph.invoke(Command(resume="approved"), config())  # ... then approves
    assert result["notes"] == ["intake", "policy for P-7", "draft", "approved"]
    assert (policy.n, len(model.calls)) == (1, llm_runs)  # unchanged input replays; a changed one runs
    assert {(d["path"], d["node"], d["occurrence"]) for d in entries(platform)} == {("agent/1", "review", "1")}


async def test_an_async_edit_at_an_interrupt_continues_the_occurrence(platform: DurablePlatform) -> None:
    model, policy = scripted(AIMessage("draft")), Counter()
    graph = review_graph(platform, SecureLLM(model), policy)
    assert (await graph.ainvoke({"claim": "C-9"}, config()))["__interrupt__"]
    await graph.aupdate_state(config(), {"tone": "formal"})
    await graph.aupdate_state(config(), {"claim": "C-9 (corrected)"})  # two edits: still the same occurrence
    result = await graph.ainvoke(Command(resume="approved"), config())
    assert result["notes"][1:] == ["policy for P-7", "draft", "approved"]
    assert (policy.n, len(model.calls)) == (1, 2)
    assert {d["occurrence"] for d in entries(platform)} == {"1"}


def test_an_edit_of_an_older_checkpoint_is_a_fork_whose_effects_run(platform: DurablePlatform) -> None:
    model, policy = scripted(AIMessage("draft")), Counter()
    graph = review_graph(platform, SecureLLM(model), policy)
    graph.invoke({"claim": "C-9"}, config())
    graph.invoke(Command(resume="approved"), config())
    before_review = next(s for s in graph.get_state_history(config()) if s.next == ("review",))
    forked = graph.update_state(before_review.config, {"tone": "formal"})  # time travel: a new history
    assert graph.invoke(None, forked)["__interrupt__"]
    assert (policy.n, len(model.calls)) == (2, 2)
    assert sorted(d["occurrence"] for d in entries(platform) if d["kind"] == "tool") == ["1", "2"]


def billing_graph(platform: DurablePlatform, charges: Counter) -> Any:
    """``bill`` charges, then waits for a confirmation; it loops back to itself until ``count`` reaches 2."""

    @effect(kind="payment", name="charge_card", at_most_once=True)
    def charge(visit: int) -> str:
        charges()
        return f"ch_{charges.n}"

    def bill(state: State) -> State:
        charge(1)  # the same input at every visit: only the visit tells two payments apart
        interrupt("confirm the payment")
        return {"count": state.get("count", 0) + 1}

    graph = StateGraph(State)
    graph.add_node("bill", bill)
    graph.add_edge(START, "bill")
    graph.add_conditional_edges("bill", lambda s: "bill" if s.get("count", 0) < 2 else "__end__")
    return platform.compile(graph)


def test_an_edit_as_the_interrupted_node_completes_it_and_its_next_visit_is_new(platform: DurablePlatform) -> None:
    charges = Counter()
    graph = billing_graph(platform, charges)
    assert graph.invoke({"count": 0}, config())["__interrupt__"]
    graph.update_state(config(), {"count": 1}, as_node="bill")  # bill is done: the loop schedules its next visit
    assert graph.invoke(None, config())["__interrupt__"]  # the second visit charges for real
    assert charges.n == 2
    assert [(d["node"], d["occurrence"], d["outcome"]["preview"]) for d in entries(platform)] == [
        ("bill", "1", "ch_1"), ("bill", "2", "ch_2")
    ]


async def test_an_async_edit_as_the_interrupted_node_completes_it_and_its_next_visit_is_new(platform: DurablePlatform) -> None:
    charges = Counter()
    graph = billing_graph(platform, charges)
    assert (await graph.ainvoke({"count": 0}, config()))["__interrupt__"]
    await graph.aupdate_state(config(), {"count": 1}, as_node="bill")
    assert (await graph.ainvoke(None, config()))["__interrupt__"]
    assert charges.n == 2
    assert [d["occurrence"] for d in entries(platform)] == ["1", "2"]


# -- row 10: the code changed so a different tool is called at a recorded position


def test_a_different_tool_at_a_recorded_position_is_nondeterminism(platform: DurablePlatform) -> None:
    crashed = []
    a, b = Counter(), Counter()
    tool_a, tool_b = SecureTool(counting_tool("lookup_policy", a)), SecureTool(counting_tool("lookup_claim", b))
    use = {"tool": tool_a}

    def node(state: State) -> State:
        out = use["tool"].invoke({"ref": "1"})
        if not crashed:
            crashed.append(1)
            raise RuntimeError("crash")
        return {"notes": [out]}

    graph = platform.compile(nest("node", node, "child"))
    with pytest.raises(RuntimeError):
        graph.invoke({"notes": []}, config())
    use["tool"] = tool_b  # the code changed between the run and the resume
    with pytest.raises(NondeterminismError, match="lookup_policy"):
        graph.invoke(None, config())
    assert (a.n, b.n) == (1, 0)


# -- row 11: stream, astream, ainvoke give the same journal as invoke


@pytest.mark.parametrize("mode", ["invoke", "stream", "ainvoke", "astream"])
async def test_every_entry_point_writes_the_same_journal(platform: DurablePlatform, mode: str) -> None:
    model = scripted(AIMessage("ok"))
    llm, lookup = SecureLLM(model), SecureTool(counting_tool("lookup_policy", Counter()))

    def review_policy(state: State) -> State:
        return {"notes": [llm.invoke("hi").content, lookup.invoke({"ref": "7"})]}

    graph = platform.compile(nest("review_policy", review_policy, "case_investigation", "policy_analysis"))
    inputs = {"notes": []}
    if mode == "invoke":
        graph.invoke(inputs, config())
    elif mode == "stream":
        list(graph.stream(inputs, config(), subgraphs=True))
    elif mode == "ainvoke":
        await graph.ainvoke(inputs, config())
    else:
        [c async for c in graph.astream(inputs, config(), subgraphs=True)]
    path = "agent/1/case_investigation/1/policy_analysis/1"
    assert positions(platform) == [
        (path, "review_policy", "1", "1", "llm", "CountingChatModel"),
        (path, "review_policy", "1", "2", "tool", "lookup_policy"),
    ]


def test_idempotency_key_is_stable_across_re_executions(platform: DurablePlatform) -> None:
    keys: list[str] = []
    crashed = []

    @effect(kind="payment", name="charge")
    def charge() -> str:
        keys.append(current_effect().idempotency_key)
        if not crashed:
            crashed.append(1)
            raise ConnectionError("network dropped mid-charge")
        return "ok"

    graph = platform.compile(nest("pay", lambda s: {"notes": [charge()]}, "billing"))
    with pytest.raises(ConnectionError):
        graph.invoke({"notes": []}, config())
    graph.invoke(None, config())
    assert len(keys) == 2 and keys[0] == keys[1]


def child_compiled_with(checkpointer: Any, node: Any, before: Any) -> StateGraph:
    """A root graph running the node ``before``, then ``node`` in a child compiled with ``checkpointer``."""
    inner = StateGraph(State)
    inner.add_node("x", node)
    inner.add_edge(START, "x")
    root = StateGraph(State)
    root.add_node("intake", before)
    root.add_node("child", inner.compile(checkpointer=checkpointer))
    root.add_edge(START, "intake")
    root.add_edge("intake", "child")
    return root


#: What each child's saver is refused for, as ``DurableSubgraphResolver.validate`` words it (both forms).
CHILD_PROBLEMS = {
    "own saver": "was compiled with its own saver (InMemorySaver)",
    True: "was compiled with checkpointer=True; its namespace drops task ids, so its occurrences cannot be told apart",
    False: "was compiled with checkpointer=False; nothing of it is saved, so a resume re-runs it under new task ids",
}


@pytest.mark.parametrize("child_saver", list(CHILD_PROBLEMS), ids=str)
@pytest.mark.parametrize("face", ["sync", "async"])
async def test_both_forms_refuse_a_child_the_platform_cannot_identify_before_any_step(
    platform: DurablePlatform, child_saver: Any, face: str
) -> None:
    """One rule, one message, one time before any step: ``platform.compile`` refuses the graph as it compiles it; the
    plain ``compile(checkpointer=platform.checkpointer)`` compiles it (LangGraph's to do) and refuses its run at its
    start, before the root's first node, with the same ``TopologyError``, sync and async. Nothing ran, nothing was
    saved."""
    from langgraph.checkpoint.memory import InMemorySaver

    runs = Counter()

    @effect(kind="tool", name="lookup")
    def lookup() -> str:
        runs()
        return "found"

    def intake(state: State) -> State:
        runs()
        return {"notes": ["in"]}

    saver = InMemorySaver() if child_saver == "own saver" else child_saver
    builder = child_compiled_with(saver, lambda s: {"notes": [lookup()]}, before=intake)
    message = (
        f"graph 'LangGraph' cannot run durably (1 unsupported shape(s)):\n  - child 'child' {CHILD_PROBLEMS[child_saver]}; "
        "compile it with checkpointer=None so it inherits the root's saver"
    )
    if not isinstance(platform, PlainCompile):
        with pytest.raises(TopologyError) as refused:
            platform.compile(builder)
    else:
        graph = platform.compile(builder)
        with pytest.raises(TopologyError) as refused:
            if face == "sync":
                graph.invoke({"notes": []}, config())
            else:
                await graph.ainvoke({"notes": []}, config())
    assert str(refused.value) == message
    assert runs.n == 0 and entries(platform) == [] and platform.checkpointer.get_tuple(config()) is None


@pytest.mark.parametrize("checkpointer", [True, False])
def test_a_child_built_while_it_runs_is_refused_at_its_first_effect(platform: DurablePlatform, checkpointer: bool) -> None:
    """A child no discovery can see before the run (a node builds and compiles it as it runs) is refused where its
    first effect would start, before the effect runs, in both forms: ``checkpointer=True`` (one history for every
    occurrence) and ``False`` (its runs never saved)."""
    runs = Counter()

    @effect(kind="tool", name="lookup")
    def lookup() -> str:
        runs()
        return "found"

    def x(state: State) -> State:
        inner = StateGraph(State)
        inner.add_node("y", lambda s: {"notes": [lookup()]})
        inner.add_edge(START, "y")
        return inner.compile(checkpointer=checkpointer).invoke(state)

    graph = platform.compile(nest("x", x, "child"))
    with pytest.raises(TopologyError, match=f"child '.+' .*compiled with checkpointer={checkpointer}.*Compile it with checkpointer=None"):
        graph.invoke({"notes": []}, config())
    assert runs.n == 0 and entries(platform) == []


@pytest.mark.parametrize("claim_always", [False, True])
def test_attempt_counts_an_execution_cut_short_where_the_effect_was_claimed(
    make_platform: Any, compile_form: str, claim_always: bool
) -> None:
    """An execution cut short mid-effect (a ``KeyboardInterrupt`` out of the effect ends the run as a kill would,
    its entry left as it stood) is counted by the next one, from the entry, wherever the effect was claimed: the
    plain form, and ``platform.compile`` with ``claim_always``. Under the run lock without it, the at-least-once
    effect ran unclaimed and left no entry: the next execution says attempt 1, as the docs say. (The claim plans are
    one generator for both faces; the async face's claims are counted in tests/test_journal_costs.py.)"""
    platform = make_platform(journal_options={"claim_always": claim_always})
    compile = PlainCompile(platform).compile if compile_form == "plain compile" else platform.compile
    attempts: list[int] = []

    @effect(kind="tool", name="lookup")
    def lookup() -> str:
        attempts.append(current_effect().attempt)
        if len(attempts) == 1:
            raise KeyboardInterrupt
        return "found"

    graph = compile(nest("x", lambda s: {"notes": [lookup()]}, "child"))
    with pytest.raises(KeyboardInterrupt):
        graph.invoke({"notes": []}, config())
    assert graph.invoke(None, config())["notes"] == ["found"]
    counted = claim_always or compile_form == "plain compile"
    assert attempts == ([1, 2] if counted else [1, 1])
    assert [(e["status"], e["attempts"]) for e in entries(platform)] == [("completed", 2 if counted else 1)]


def test_attach_adopts_a_graph_without_saver_and_refuses_one_with(make_platform: Any) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    platform = make_platform()

    builder = nest("n", lambda s: {"notes": ["x"]}, "child")
    graph = platform.attach(builder.compile())
    assert graph.invoke({"notes": []}, config())["notes"] == ["x"]
    assert platform.checkpointer.get_tuple(config()) is not None
    with pytest.raises(TopologyError, match="own saver"):
        platform.attach(builder.compile(checkpointer=InMemorySaver()))


async def test_a_sync_effect_in_an_async_node_does_not_wait_on_the_loop_that_stores_its_checkpoint(
    platform: DurablePlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LangGraph stores the checkpoint in the background on the run's event loop (``durability="async"``, its
    default): a sync effect called on that loop cannot wait for the store without blocking it, so it does not."""
    runs = Counter()

    @effect(kind="tool", name="lookup")
    def lookup(ref: str) -> str:
        runs()
        return f"found {ref}"

    async def node(state: State) -> State:
        return {"notes": [lookup("P-7")]}

    graph = StateGraph(State)
    graph.add_node("n", node)
    graph.add_edge(START, "n")
    compiled = platform.compile(graph)
    assert (await compiled.ainvoke({"notes": []}, config()))["notes"] == ["found P-7"]
    assert (await compiled.ainvoke(None, config()))["notes"] == ["found P-7"]
    assert runs.n == 1
