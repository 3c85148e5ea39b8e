"""The graph of a drawn plan: a chain of stages, each node counting its own visits from the state.

Every working node computes which visit of it this is from its own notes (``<label>@<visit>#<effect>=<value>``),
calls its effects in order and notes what each returned. An effect's real execution is recorded on the current
ledger (ledger.py) and returns ``<effect name>|v<visit>|t<token>``: the visit it ran for and a token unique to the
execution, so the oracle can tell whose outcome a node got back. Notes are merged as a union (a compiled child
returns its whole state, the parent's notes included).

Stages (``Stage.kind``): ``node`` (looping on itself ``loops`` times), ``parallel`` branches, a compiled ``child``
nested ``depth`` deep (compiled without a checkpointer: it inherits, and may loop), a ``function`` node running such
a child itself, a ``send`` fan-out, an ``interrupt`` (a node, then a node that interrupts after its first effect),
a node with a ``RetryPolicy`` that fails its first attempt of each visit (``retry``), a ``react`` loop: a
``SecureLLM`` over a scripted chat model issuing two tool calls to a ``ToolNode`` of two ``SecureTool``s, a node
calling each effect inside a LangGraph ``@task`` (``task``), a function node running an ``@entrypoint`` whose body does
so (``entrypoint``), a node starting its effects together (``pool``: threads under copied contexts, or
``asyncio.gather``), and an ``interrupt`` inside a compiled child (``child_interrupt``).

Modes (``Plan.mode``): sync nodes and effects, async ones, or async nodes calling sync effects (``mixed``). Every
effect's input holds the state's ``salt``, which a fork changes (``Plan.fork``).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import os
import re
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from langgraph.func import entrypoint, task
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
    salt: int
    load: Any  # the plan's hostile state (values.py): written by the first input only


#: The modes of async nodes calling sync effects: directly (``mixed``), or through ``asyncio.to_thread``
#: (``threaded``: ``mixed`` under ``durability="async"``, where a sync effect called on the loop before its checkpoint
#: is stored is refused, ``SyncEffectOnEventLoopError``; a ``@task``'s body runs in a thread already).
MIXED = ("mixed", "threaded")


def sync_effects(mode: str) -> bool:
    """Whether the effects of ``mode`` are sync callables (in ``MIXED``, sync effects in async nodes)."""
    return mode != "async"


async def called(mode: str, call: Callable[..., Any], *args: Any) -> Any:
    """An effect's value as an async node gets it: awaited, or (``threaded``) its sync call run in a thread."""
    if mode == "threaded":
        return await settled(await asyncio.to_thread(call, *args))
    return await settled(call(*args))


async def settled(value: Any) -> Any:
    """An effect's value: awaited when it is an awaitable (an async effect), as it is otherwise."""
    return await value if inspect.isawaitable(value) else value


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
        ledger.current().add("fault", what=f"{fault.kind} in {node} visit {visit} after effect {after}")
        if fault.kind == "node_kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise Boom(f"{node} fails once, visit {visit} after effect {after}")


# -- what an effect does when it really runs ---------------------------------------------------------------


class Plain:
    """Whether the graph being built is the oracle's: every effect a plain LangGraph ``@task`` (no journal), run over
    ``InMemorySaver`` (``history.task_reference``). Set by ``build`` while it builds."""

    on = False


def execute(node: str, item: Any, visit: int, idx: int, name: str, once: bool = False, plain: bool = False) -> str:
    """A real execution of an effect, noted on the ledger with the idempotency key it ran under (``plain``: a plain
    ``@task``'s, which has none)."""
    slot = {"node": node, "item": item, "visit": visit, "idx": idx, "name": name, "once": once}
    token = ledger.current().executed(slot, "@task" if plain else current_effect().idempotency_key)
    return f"{name}|v{visit}|t{token}"


def as_task(name: str, fn: Callable[..., Any], sync: bool) -> Callable[..., Any]:
    """``fn`` as the oracle calls it: a plain ``@task`` named ``name``, waited for (a sync node) or awaited."""
    fn.__name__ = name.replace(".", "_")
    called = task(fn)
    return (lambda *args: called(*args).result()) if sync else called


def value_parts(value: str) -> tuple[str, int, str] | None:
    """``(name, visit, token)`` of a value an effect returned, None for anything else."""
    found = re.fullmatch(r"(.+)\|v(\d+)\|t([0-9a-f]+)", value)
    return (found[1], int(found[2]), found[3]) if found else None


def normalized(notes: list[str]) -> list[str]:
    """Notes without the execution tokens: what a fault-free run of the same plan notes too."""
    return sorted(re.sub(r"\|t[0-9a-f]+", "", note) for note in notes)


class ScriptedChat(BaseChatModel):
    """Replies to ``slot:<node>|<item>|<visit>|<idx>|<phase>|<salt>``; phase ``tools`` asks for two tool calls."""

    tools_node: str = ""
    plain: bool = False  # the oracle's model: no journal around it

    @property
    def _llm_type(self) -> str:
        return "scripted-explorer"

    def _reply(self, messages: list[BaseMessage]) -> ChatResult:
        node, item, visit, idx, phase, _ = str(messages[-1].content).removeprefix("slot:").split("|")
        name = f"{node}.e{idx}"
        value = execute(node, None if item == "-" else int(item), int(visit), int(idx), name, plain=self.plain)
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


def slot_prompt(node: str, item: Any, visit: int, idx: int, phase: str = "answer", salt: int = 0) -> str:
    return f"slot:{node}|{'-' if item is None else item}|{visit}|{idx}|{phase}|{salt}"


def prompt_messages(prompt: str) -> list[BaseMessage]:
    """A model call's messages: the plan's hostile input first, when it is text, then the slot's prompt."""
    given = values.CURRENT.text_input
    return [*([HumanMessage(given)] if given is not None else []), HumanMessage(prompt)]


class Effects:
    """The effects of one node, made once per graph: ``callables[idx - 1](item, visit, salt)`` runs effect ``idx``.

    ``tasks``: each effect called inside a LangGraph ``@task`` of its own (``<node>_t<idx>``), the node awaiting or
    waiting for its result."""

    def __init__(self, node: str, kinds: tuple[str, ...], mode: str, tasks: bool = False) -> None:
        self.node, self.kinds, self.mode = node, kinds, mode
        self.loads = values.CURRENT
        self.in_task = tasks  # the oracle's effects are then the plain functions the node's task calls
        self.callables = [self._make(idx, kind) for idx, kind in enumerate(kinds, 1)]
        if tasks:
            self.callables = [self._in_task(idx, call) for idx, call in enumerate(self.callables, 1)]

    def _in_task(self, idx: int, call: Callable[..., Any]) -> Callable[..., Any]:
        def body(item: Any, visit: int, salt: int) -> Any:
            return call(item, visit, salt)

        async def abody(item: Any, visit: int, salt: int) -> Any:
            return await settled(call(item, visit, salt))

        body.__name__ = abody.__name__ = f"{self.node}_t{idx}"
        if self.mode == "sync":
            wrapped = task(body)
            return lambda item, visit, salt: wrapped(item, visit, salt).result()
        return task(body if self.mode in MIXED else abody)

    def _plain(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The oracle's effect: a plain ``@task``, or the function itself inside the task a ``task`` stage makes."""
        return fn if self.in_task else as_task(name, fn, self.mode == "sync")

    def _make(self, idx: int, kind: str) -> Callable[..., Any]:
        node, name, sync, plain, loads = self.node, f"{self.node}.e{idx}", sync_effects(self.mode), Plain.on, self.loads
        if plain and kind != "llm":  # the oracle's tool is a plain task as any effect
            kind = "effect"
        if kind in ("effect", "once"):
            once = kind == "once"

            def run(item: Any, visit: int, salt: int, load: Any) -> Any:
                return loads.returned(execute(node, item, visit, idx, name, once, plain))

            async def arun(item: Any, visit: int, salt: int, load: Any) -> Any:
                return loads.returned(execute(node, item, visit, idx, name, once, plain))

            paid = self._plain(name, run if sync else arun) if plain else effect(
                kind="payment" if once else "tool", name=name, at_most_once=once
            )(run if sync else arun)
            return lambda item, visit, salt: paid(item, visit, salt, loads.input)
        if kind == "tool":

            def tool_run(item: int, visit: int, salt: int, load: str | None = None) -> Any:
                return loads.returned(execute(node, None if item < 0 else item, visit, idx, name, plain=plain))

            async def tool_arun(item: int, visit: int, salt: int, load: str | None = None) -> Any:
                return tool_run(item, visit, salt)

            secure = SecureTool(StructuredTool.from_function(tool_run, coroutine=tool_arun, name=f"{node}_e{idx}", description="a tool"))

            def args(item: Any, visit: int, salt: int) -> dict[str, Any]:
                return {"item": -1 if item is None else item, "visit": visit, "salt": salt, "load": loads.text_input}

            if sync:
                return lambda item, visit, salt: secure.invoke(args(item, visit, salt))
            return lambda item, visit, salt: secure.ainvoke(args(item, visit, salt))
        if Plain.on:
            def reply(item: Any, visit: int, salt: int) -> str:
                return str(ScriptedChat(plain=True).invoke(prompt_messages(slot_prompt(node, item, visit, idx, salt=salt))).content)

            async def areply(item: Any, visit: int, salt: int) -> str:
                return str((await ScriptedChat(plain=True).ainvoke(prompt_messages(slot_prompt(node, item, visit, idx, salt=salt)))).content)

            return self._plain(name, reply if sync else areply)
        llm = SecureLLM(ScriptedChat(), effect_name=name)
        if sync:
            return lambda item, visit, salt: llm.invoke(prompt_messages(slot_prompt(node, item, visit, idx, salt=salt))).content

        async def ask(item: Any, visit: int, salt: int) -> str:
            return (await llm.ainvoke(prompt_messages(slot_prompt(node, item, visit, idx, salt=salt)))).content

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
    ledger.current().add("got", node=node, item=item, visit=visit, idx=idx, value=slot, **loaded)
    return f"{label}@{visit}#{idx}={slot}"


def started(node: str, state: State) -> tuple[Any, str, int, int]:
    """A working node's visit as it starts: its ``Send`` item, label, visit and salt (the fault may fire here)."""
    item = state.get("item")
    label = label_of(node, item)
    visit = visit_of(state, label)
    maybe_raise(node, visit, 0)
    return item, label, visit, state.get("salt", 0)


def working_node(
    node: str, kinds: tuple[str, ...], mode: str, before: Callable[[int, int], None] | None = None, tasks: bool = False
) -> Any:
    """A node calling its effects in order (each inside a ``@task`` with ``tasks``); ``before(idx, visit)`` runs before
    effect ``idx`` (an interrupt, a failing first attempt)."""
    effects = Effects(node, kinds, mode, tasks)

    calls = "mixed" if tasks or Plain.on else mode  # a task's body, and the oracle's task, are awaited

    def sync_node(state: State) -> State:
        item, label, visit, salt = started(node, state)
        notes = []
        for idx, call in enumerate(effects.callables, 1):
            if before:
                before(idx, visit)
            notes.append(got(label, node, item, visit, idx, call(item, visit, salt)))
            maybe_raise(node, visit, idx)
        if before:
            before(len(effects.callables) + 1, visit)
        return {"notes": notes}

    async def async_node(state: State) -> State:
        item, label, visit, salt = started(node, state)
        notes = []
        for idx, call in enumerate(effects.callables, 1):
            if before:
                before(idx, visit)
            notes.append(got(label, node, item, visit, idx, await called(calls, call, item, visit, salt)))
            maybe_raise(node, visit, idx)
        if before:
            before(len(effects.callables) + 1, visit)
        return {"notes": notes}

    return sync_node if mode == "sync" else async_node


def pooled_node(node: str, kinds: tuple[str, ...], mode: str) -> Any:
    """A node starting all its effects together: in a thread pool, each under a copy of the node's context (sync), or
    with ``asyncio.gather`` (async; ``mixed``: each sync effect in a thread, ``asyncio.to_thread``)."""
    effects, plain = Effects(node, kinds, mode), Plain.on

    def noted(label: str, item: Any, visit: int, values: list[Any]) -> State:
        notes = []
        for idx, value in enumerate(values, 1):
            notes.append(got(label, node, item, visit, idx, value))
            maybe_raise(node, visit, idx)
        return {"notes": notes}

    def sync_node(state: State) -> State:
        item, label, visit, salt = started(node, state)
        with ThreadPoolExecutor(len(effects.callables)) as pool:
            futures = [pool.submit(contextvars.copy_context().run, call, item, visit, salt) for call in effects.callables]
            return noted(label, item, visit, [f.result() for f in futures])

    async def async_node(state: State) -> State:
        item, label, visit, salt = started(node, state)
        if mode in MIXED and not plain:  # the oracle's sync effects are tasks, which the node awaits
            values = await asyncio.gather(*(asyncio.to_thread(call, item, visit, salt) for call in effects.callables))
        else:
            values = await asyncio.gather(*(call(item, visit, salt) for call in effects.callables))
        return noted(label, item, visit, list(values))

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
        add_interrupting(graph, base, stage, mode)
        graph.add_edge(f"{base}q", then)
    elif kind == "child_interrupt":
        child = StateGraph(State)
        add_interrupting(child, f"{base}p", stage, mode, name=base)
        graph.add_node(base, child.compile())
        graph.add_edge(base, then)
    elif kind == "task":
        graph.add_node(base, working_node(base, stage.effects, mode, tasks=True))
        graph.add_edge(base, then)
    elif kind == "entrypoint":
        graph.add_node(base, entrypoint_node(f"{base}e", stage.effects, mode))
        graph.add_edge(base, then)
    elif kind == "pool":
        graph.add_node(base, pooled_node(base, stage.effects, mode))
        graph.add_edge(base, then)
    elif kind == "retry":
        policy = RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False, retry_on=Flaky)
        graph.add_node(base, working_node(base, stage.effects, mode, before=failing_first_attempt(base)), retry_policy=policy)
        graph.add_edge(base, then)
    else:
        add_react(graph, base, stage, mode, then)
    return base


def add_interrupting(graph: StateGraph, entry: str, stage: Stage, mode: str, name: str | None = None) -> None:
    """``<base>p`` (the graph's entry, named ``entry``), then ``<base>q``, which interrupts after its first effect."""
    base = name or entry
    graph.add_node(entry, working_node(f"{base}p", stage.effects, mode))
    graph.add_node(f"{base}q", working_node(f"{base}q", stage.effects, mode, before=ask_after_first(len(stage.effects))))
    graph.add_edge(entry, f"{base}q")
    if entry != base:  # inside a child: its entry is the START's, its end the graph's
        graph.add_edge(START, entry)


def entrypoint_node(name: str, kinds: tuple[str, ...], mode: str) -> Any:
    """A function node running an ``@entrypoint`` (no checkpointer: it inherits) whose body calls each effect inside a
    ``@task``, as ``name``'s visit."""
    body = working_node(name, kinds, mode, tasks=True)

    @entrypoint()
    def workflow(state: dict[str, Any]) -> dict[str, Any]:
        return body(state)

    @entrypoint()
    async def aworkflow(state: dict[str, Any]) -> dict[str, Any]:
        return await body(state)

    def run(state: State) -> State:
        return {"notes": workflow.invoke(state_of(state))["notes"]}

    async def arun(state: State) -> State:
        return {"notes": (await aworkflow.ainvoke(state_of(state)))["notes"]}

    return run if mode == "sync" else arun


def state_of(state: State) -> dict[str, Any]:
    """What a function node hands the graph it runs: the notes (to count visits by) and the salt."""
    return {"notes": state.get("notes", []), "salt": state.get("salt", 0)}


def ask_after_first(count: int) -> Callable[[int, int], None]:
    """Interrupt after the first effect (before the second, or after the only one)."""

    def before(idx: int, visit: int) -> None:
        if idx == min(2, count + 1):
            interrupt("approve?")

    return before


def failing_first_attempt(label: str) -> Callable[[int, int], None]:
    def before(idx: int, visit: int) -> None:
        key = (ledger.current().life, label, visit)
        if idx == 2 and key not in Armed.retried:
            Armed.retried.add(key)
            raise Flaky(f"{label} visit {visit}: the first attempt fails after effect 1")

    return before


def function_node(child: Any, mode: str) -> Any:
    def run(state: State) -> State:
        return {"notes": child.invoke(state_of(state))["notes"]}

    async def arun(state: State) -> State:
        return {"notes": (await child.ainvoke(state_of(state)))["notes"]}

    return run if mode == "sync" else arun


def add_react(graph: StateGraph, base: str, stage: Stage, mode: str, then: str) -> None:
    """``<base>`` asks a SecureLLM, which calls two SecureTools in ``<base>tools`` (a ToolNode), then answers."""
    agent, tools_node = f"{base}llm", f"{base}tools"

    plain = Plain.on

    def tool_for(k: int) -> Any:
        name = f"{tools_node}_t{k}"

        def run(visit: int, salt: int = 0) -> str:
            return values.CURRENT.text(execute(tools_node, None, visit, k, name, plain=plain))

        async def arun(visit: int, salt: int = 0) -> str:
            return run(visit, salt)

        made = StructuredTool.from_function(run, coroutine=arun, name=name, description="a tool")
        return made if plain else SecureTool(made)

    model = ScriptedChat(tools_node=tools_node, plain=plain)
    llm = model if plain else SecureLLM(model, effect_name=f"{agent}.e1")

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
        phase = "answer" if visit % 2 == 0 else "tools"
        return visit, slot_prompt(agent, None, visit, 1, phase, salt=state.get("salt", 0)), seen

    def sync_agent(state: State) -> State:
        visit, text, seen = prompt(state)
        reply = llm.invoke(prompt_messages(text))
        return {"notes": [*seen, got(agent, agent, None, visit, 1, reply.content)], "messages": [reply]}

    async def async_agent(state: State) -> State:
        visit, text, seen = prompt(state)
        reply = await (llm.ainvoke(prompt_messages(text)) if mode == "async" or plain else called(mode, llm.invoke, prompt_messages(text)))
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


def build(plan: Plan, plain: bool = False) -> StateGraph:
    """The root graph of ``plan``: its stages in a chain (its hostile values made for its nodes first); ``plain``: the
    oracle's, each effect a plain ``@task``."""
    values.CURRENT = values.Loads(plan.values)
    graph = StateGraph(State)
    then = END
    mode = "threaded" if plan.mode == "mixed" and plan.durability == "async" else plan.mode
    Plain.on = plain
    try:
        for index in reversed(range(len(plan.stages))):
            then = add_stage(graph, index, plan.stages[index], mode, then)
    finally:
        Plain.on = False
    graph.add_edge(START, then)
    return graph
