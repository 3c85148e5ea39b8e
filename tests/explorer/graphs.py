"""The graph of a drawn plan: a chain of stages, each node counting its own visits from the state.

Every working node computes which visit of it this is from its own notes (``<label>@<visit>#<effect>=<value>``),
calls its effects in order and notes what each returned. An effect's real execution is recorded on the current
ledger (ledger.py) and returns ``<effect name>|v<visit>|t<token>``: the visit it ran for and a token unique to the
execution, so the oracle can tell whose outcome a node got back. Notes are merged as a union (a compiled child
returns its whole state, the parent's notes included).

Stages (``Stage.kind``): ``node`` (looping on itself ``loops`` times), ``parallel`` branches, a compiled ``child``
nested ``depth`` deep (compiled without a checkpointer: it inherits, and may loop), a ``function`` node running such
a child itself, a ``send`` fan-out, an ``interrupt`` (a node, then a node that interrupts after its first effect),
a node with a ``RetryPolicy`` that fails its first attempt of each visit (``retry``), and a ``react`` loop: a
``SecureLLM`` over a scripted chat model issuing two tool calls to a ``ToolNode`` of two ``SecureTool``s.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from langgraph.graph import END, START, StateGraph, add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import RetryPolicy, Send, interrupt

from langgraph_durable_mongodb.journal import SecureLLM, SecureTool, current_effect, effect

from . import ledger, values
from .plans import Fault, Plan, Stage

ANSWER = "yes"  # what every interrupt is answered with


def union(left: list, right: list) -> list:
    return left + [note for note in right if note not in left]


class State(TypedDict, total=False):
    notes: Annotated[list, union]
    messages: Annotated[list, add_messages]
    item: int
    load: Any  # the plan's hostile state (values.py): written by the first input only


class Boom(Exception):
    """The fault ``raise``: an ordinary error in a node."""


class Flaky(Exception):
    """What a ``retry`` stage's node raises on its first attempt of each visit (its RetryPolicy retries it)."""


class Armed:
    """The fault of the history running in this process: ``raise`` fires in the node it names, once."""

    fault: Fault = Fault()
    fired = False
    retried: set[tuple[int, str, int]] = set()  # (life, label, visit) whose first attempt failed (retry stages)


def arm(fault: Fault) -> None:
    Armed.fault, Armed.fired, Armed.retried = fault, False, set()


def maybe_raise(node: str, visit: int, after: int) -> None:
    """The ``raise`` fault, or the ``node_kill`` one (a child process SIGKILLed there, its effects having returned)."""
    fault = Armed.fault
    if fault.kind in ("raise", "node_kill") and not Armed.fired and (fault.node, fault.visit, fault.after) == (node, visit, after):
        Armed.fired = True
        ledger.CURRENT.add("fault", what=f"{fault.kind} in {node} visit {visit} after effect {after}")
        if fault.kind == "node_kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise Boom(f"{node} fails once, visit {visit} after effect {after}")


# -- what an effect does when it really runs ---------------------------------------------------------------


def execute(node: str, item: Any, visit: int, idx: int, name: str, once: bool = False) -> str:
    slot = {"node": node, "item": item, "visit": visit, "idx": idx, "name": name, "once": once}
    token = ledger.CURRENT.executed(slot, current_effect().idempotency_key)
    return f"{name}|v{visit}|t{token}"


def value_parts(value: str) -> tuple[str, int, str] | None:
    """``(name, visit, token)`` of a value an effect returned, None for anything else."""
    found = re.fullmatch(r"(.+)\|v(\d+)\|t([0-9a-f]+)", value)
    return (found[1], int(found[2]), found[3]) if found else None


def normalized(notes: list[str]) -> list[str]:
    """Notes without the execution tokens: what a fault-free run of the same plan notes too."""
    return sorted(re.sub(r"\|t[0-9a-f]+", "", note) for note in notes)


class ScriptedChat(BaseChatModel):
    """Replies to ``slot:<node>|<item>|<visit>|<idx>|<phase>``; phase ``tools`` asks for two tool calls."""

    tools_node: str = ""

    @property
    def _llm_type(self) -> str:
        return "scripted-explorer"

    def _reply(self, messages: list[BaseMessage]) -> ChatResult:
        node, item, visit, idx, phase = str(messages[-1].content).removeprefix("slot:").split("|")
        name = f"{node}.e{idx}"
        value = execute(node, None if item == "-" else int(item), int(visit), int(idx), name)
        calls = []
        if phase == "tools":
            token = value_parts(value)[2]
            calls = [
                {"name": f"{self.tools_node}_t{k}", "args": {"visit": int(visit)}, "id": f"call_{token}_{k}"} for k in (1, 2)
            ]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(values.CURRENT.text(value), tool_calls=calls))])

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        return self._reply(messages)

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        return self._reply(messages)


def slot_prompt(node: str, item: Any, visit: int, idx: int, phase: str = "answer") -> str:
    return f"slot:{node}|{'-' if item is None else item}|{visit}|{idx}|{phase}"


def prompt_messages(prompt: str) -> list[BaseMessage]:
    """A model call's messages: the plan's hostile input first, when it is text, then the slot's prompt."""
    given = values.CURRENT.text_input
    return [*([HumanMessage(given)] if given is not None else []), HumanMessage(prompt)]


class Effects:
    """The effects of one node, made once per graph: ``call(idx, item, visit)`` runs effect ``idx`` (1-based)."""

    def __init__(self, node: str, kinds: tuple[str, ...], mode: str) -> None:
        self.node, self.kinds, self.mode = node, kinds, mode
        self.loads = values.CURRENT
        self.callables = [self._make(idx, kind) for idx, kind in enumerate(kinds, 1)]

    def _make(self, idx: int, kind: str) -> Callable[..., Any]:
        node, name, loads = self.node, f"{self.node}.e{idx}", self.loads
        if kind in ("effect", "once"):
            once = kind == "once"

            def run(item: Any, visit: int, load: Any) -> Any:
                return loads.returned(execute(node, item, visit, idx, name, once))

            async def arun(item: Any, visit: int, load: Any) -> Any:
                return loads.returned(execute(node, item, visit, idx, name, once))

            paid = effect(kind="payment" if once else "tool", name=name, at_most_once=once)(run if self.mode == "sync" else arun)
            return lambda item, visit: paid(item, visit, loads.input)
        if kind == "tool":

            def tool_run(item: int, visit: int, load: str | None = None) -> Any:
                return loads.returned(execute(node, None if item < 0 else item, visit, idx, name))

            async def tool_arun(item: int, visit: int, load: str | None = None) -> Any:
                return tool_run(item, visit)

            secure = SecureTool(StructuredTool.from_function(tool_run, coroutine=tool_arun, name=f"{node}_e{idx}", description="a tool"))

            def args(item: Any, visit: int) -> dict[str, Any]:
                return {"item": -1 if item is None else item, "visit": visit, "load": loads.text_input}

            if self.mode == "sync":
                return lambda item, visit: secure.invoke(args(item, visit))
            return lambda item, visit: secure.ainvoke(args(item, visit))
        llm = SecureLLM(ScriptedChat(), effect_name=name)
        if self.mode == "sync":
            return lambda item, visit: llm.invoke(prompt_messages(slot_prompt(node, item, visit, idx))).content

        async def ask(item: Any, visit: int) -> str:
            return (await llm.ainvoke(prompt_messages(slot_prompt(node, item, visit, idx)))).content

        return ask


def label_of(node: str, item: Any) -> str:
    return node if item is None else f"{node}[{item}]"


def visit_of(state: State, label: str) -> int:
    """Which visit of ``label`` this is: one more than the visits its notes show."""
    visits = {note.split("@", 1)[1].split("#", 1)[0] for note in state.get("notes", []) if note.startswith(label + "@")}
    return len(visits) + 1


def got(label: str, node: str, item: Any, visit: int, idx: int, value: Any) -> str:
    slot, load_ok = values.CURRENT.unwrap(value)
    loaded = {} if load_ok is None else {"load_ok": load_ok}
    ledger.CURRENT.add("got", node=node, item=item, visit=visit, idx=idx, value=slot, **loaded)
    return f"{label}@{visit}#{idx}={slot}"


def working_node(node: str, kinds: tuple[str, ...], mode: str, before: Callable[[int, int], None] | None = None) -> Any:
    """A node calling its effects in order; ``before(idx, visit)`` runs before effect ``idx`` (an interrupt, a
    failing first attempt)."""
    effects = Effects(node, kinds, mode)

    def start(state: State) -> tuple[Any, str, int]:
        item = state.get("item")
        label = label_of(node, item)
        visit = visit_of(state, label)
        maybe_raise(node, visit, 0)
        return item, label, visit

    def sync_node(state: State) -> State:
        item, label, visit = start(state)
        notes = []
        for idx, call in enumerate(effects.callables, 1):
            if before:
                before(idx, visit)
            notes.append(got(label, node, item, visit, idx, call(item, visit)))
            maybe_raise(node, visit, idx)
        if before:
            before(len(effects.callables) + 1, visit)
        return {"notes": notes}

    async def async_node(state: State) -> State:
        item, label, visit = start(state)
        notes = []
        for idx, call in enumerate(effects.callables, 1):
            if before:
                before(idx, visit)
            notes.append(got(label, node, item, visit, idx, await call(item, visit)))
            maybe_raise(node, visit, idx)
        if before:
            before(len(effects.callables) + 1, visit)
        return {"notes": notes}

    return sync_node if mode == "sync" else async_node


def passing(state: State) -> State:
    return {}


# -- stages ------------------------------------------------------------------------------------------------


def nested(base: str, stage: Stage, mode: str, level: int = 1) -> Any:
    """Compiled children ``depth`` deep; the innermost runs ``<base>d<depth>`` (no checkpointer: they inherit)."""
    graph = StateGraph(State)
    if level == stage.depth:
        inner = f"{base}d{stage.depth}"
        graph.add_node(inner, working_node(inner, stage.effects, mode))
    else:
        inner = f"{base}c{level + 1}"
        graph.add_node(inner, nested(base, stage, mode, level + 1))
    graph.add_edge(START, inner)
    return graph.compile()


def loop_back(graph: StateGraph, at: str, counted: str, loops: int, then: str, to: str | None = None) -> None:
    """After ``at``: back to ``to`` (``at`` itself by default) until ``counted`` has made ``loops`` visits."""
    again = to or at
    graph.add_conditional_edges(at, lambda s: again if visit_of(s, counted) <= loops else then, [again, then])


def add_stage(graph: StateGraph, index: int, stage: Stage, mode: str, then: str) -> str:
    """Add stage ``index`` to ``graph``, flowing into ``then``; returns its entry node."""
    base = f"s{index}"
    kind = stage.kind
    if kind == "node":
        graph.add_node(base, working_node(base, stage.effects, mode))
        loop_back(graph, base, base, stage.loops, then)
    elif kind == "child":
        graph.add_node(base, nested(base, stage, mode))
        loop_back(graph, base, f"{base}d{stage.depth}", stage.loops, then)
    elif kind == "function":
        graph.add_node(base, function_node(nested(base, stage, mode), mode))
        graph.add_edge(base, then)
    elif kind == "parallel":
        branches = [f"{base}b{j}" for j in range(stage.width)]
        graph.add_node(base, passing)
        graph.add_node(f"{base}j", passing)
        for branch in branches:
            graph.add_node(branch, working_node(branch, stage.effects, mode))
            graph.add_edge(base, branch)
        graph.add_edge(branches, f"{base}j")
        loop_back(graph, f"{base}j", branches[0], stage.loops, then, to=base)
    elif kind == "send":
        worker, width = f"{base}w", stage.width
        graph.add_node(base, passing)
        graph.add_node(worker, working_node(worker, stage.effects, mode))
        graph.add_node(f"{base}j", passing)
        graph.add_conditional_edges(base, lambda s: [Send(worker, {"notes": s.get("notes", []), "item": j}) for j in range(width)], [worker])
        graph.add_edge(worker, f"{base}j")
        loop_back(graph, f"{base}j", f"{worker}[0]", stage.loops, then, to=base)
    elif kind == "interrupt":
        graph.add_node(base, working_node(f"{base}p", stage.effects, mode))
        graph.add_node(f"{base}q", working_node(f"{base}q", stage.effects, mode, before=ask_after_first(len(stage.effects))))
        graph.add_edge(base, f"{base}q")
        graph.add_edge(f"{base}q", then)
    elif kind == "retry":
        policy = RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False, retry_on=Flaky)
        graph.add_node(base, working_node(base, stage.effects, mode, before=failing_first_attempt(base)), retry_policy=policy)
        graph.add_edge(base, then)
    else:
        add_react(graph, base, stage, mode, then)
    return base


def ask_after_first(count: int) -> Callable[[int, int], None]:
    """Interrupt after the first effect (before the second, or after the only one)."""

    def before(idx: int, visit: int) -> None:
        if idx == min(2, count + 1):
            interrupt("approve?")

    return before


def failing_first_attempt(label: str) -> Callable[[int, int], None]:
    def before(idx: int, visit: int) -> None:
        key = (ledger.CURRENT.life, label, visit)
        if idx == 2 and key not in Armed.retried:
            Armed.retried.add(key)
            raise Flaky(f"{label} visit {visit}: the first attempt fails after effect 1")

    return before


def function_node(child: Any, mode: str) -> Any:
    def run(state: State) -> State:
        return {"notes": child.invoke({"notes": state.get("notes", [])})["notes"]}

    async def arun(state: State) -> State:
        return {"notes": (await child.ainvoke({"notes": state.get("notes", [])}))["notes"]}

    return run if mode == "sync" else arun


def add_react(graph: StateGraph, base: str, stage: Stage, mode: str, then: str) -> None:
    """``<base>`` asks a SecureLLM, which calls two SecureTools in ``<base>tools`` (a ToolNode), then answers."""
    agent, tools_node = f"{base}llm", f"{base}tools"

    def tool_for(k: int) -> SecureTool:
        name = f"{tools_node}_t{k}"

        def run(visit: int) -> str:
            return values.CURRENT.text(execute(tools_node, None, visit, k, name))

        async def arun(visit: int) -> str:
            return run(visit)

        return SecureTool(StructuredTool.from_function(run, coroutine=arun, name=name, description="a tool"))

    llm = SecureLLM(ScriptedChat(tools_node=tools_node), effect_name=f"{agent}.e1")

    def prompt(state: State) -> tuple[int, str, list[str]]:
        visit = visit_of(state, agent)
        maybe_raise(agent, visit, 0)
        seen = []
        messages = state.get("messages", [])
        if visit % 2 == 0:  # the answer after the tools: note what they returned
            for message in messages:
                if isinstance(message, ToolMessage) and (message.name or "").startswith(tools_node + "_t"):
                    k = int(message.name.rsplit("_t", 1)[1])
                    seen.append(got(tools_node, tools_node, None, visit - 1, k, str(message.content)))
        return visit, slot_prompt(agent, None, visit, 1, "answer" if visit % 2 == 0 else "tools"), seen

    def sync_agent(state: State) -> State:
        visit, text, seen = prompt(state)
        reply = llm.invoke(prompt_messages(text))
        return {"notes": [*seen, got(agent, agent, None, visit, 1, reply.content)], "messages": [reply]}

    async def async_agent(state: State) -> State:
        visit, text, seen = prompt(state)
        reply = await llm.ainvoke(prompt_messages(text))
        return {"notes": [*seen, got(agent, agent, None, visit, 1, reply.content)], "messages": [reply]}

    graph.add_node(base, passing)
    graph.add_node(agent, sync_agent if mode == "sync" else async_agent)
    graph.add_node(tools_node, ToolNode([tool_for(1), tool_for(2)]))
    graph.add_edge(base, agent)
    graph.add_conditional_edges(agent, lambda s: tools_node if s["messages"][-1].tool_calls else then, [tools_node, then])
    graph.add_edge(tools_node, agent)


def first_input() -> State:
    """The thread's first input: no notes, and the plan's hostile state when it has one."""
    loads = values.CURRENT
    return {"notes": []} if loads.drawn is None else {"notes": [], "load": loads.state}


def build(plan: Plan) -> StateGraph:
    """The root graph of ``plan``: its stages in a chain (its hostile values made for its nodes first)."""
    values.CURRENT = values.Loads(plan.values)
    graph = StateGraph(State)
    then = END
    for index in reversed(range(len(plan.stages))):
        then = add_stage(graph, index, plan.stages[index], plan.mode, then)
    graph.add_edge(START, then)
    return graph
