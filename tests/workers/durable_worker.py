"""A durable run in a child process: the graph of the reliability suite, killable at a chosen point.

Run it as a script (a fresh interpreter) or from a fork server (``main(spec)``);
either way the spec says everything the run needs::

    python tests/workers/durable_worker.py '{"uri": "mongodb://...", "db": "d", "thread": "t1",
        "durability": "sync", "api": "invoke", "log": "/tmp/x/effects.log", "result": "/tmp/x/r1.json",
        "kill_at": 17, "lease_seconds": 1.0}'

The run "resumes until done": with no checkpoint it starts the graph with its
input, with pending nodes it resumes with ``invoke(None)`` (``ainvoke`` with
``"api": "ainvoke"``), and a finished thread is left as it is.

The graph is three levels deep with six secure effects (two ``SecureLLM``
calls, two ``SecureTool`` calls, two ``@effect`` functions)::

    root:                intake [llm triage] -> case_investigation -> decide [@effect issue_payment]
    case_investigation:  gather [tool lookup_policy, tool lookup_claim] -> policy_analysis
    policy_analysis:     review [llm review] -> assess [@effect risk_score]

Each real execution of an effect appends one line to the ``log`` file, outside
MongoDB, and fsyncs it: ``<effect name> <idempotency key> <pid> <t0> <t1>``
(``time.monotonic_ns()`` when the side effect began and ended; the clock is
shared by every process of the machine, so intervals of different processes
compare).

Kill points: with ``kill_at = N`` the process SIGKILLs itself at its N-th
point, with ``kill_on = "effect:review"`` at the first point of that label. Points are counted in order: the start and the acknowledgement of every
database command (pymongo command monitoring, sync and async clients alike),
and the end of every effect's side effect (after its log line is written, before
the effect returns: the effect is then *in flight*). Before dying the label of
the point is appended to ``<result>.killed``. A run without ``kill_at`` writes
the labels of the points it passed to its result (``trace``), so a test can
choose points in range. ``slow_saves`` holds each checkpoint save that long
before it is sent (a slow server, as ``durability="async"`` meets it).
"""

from __future__ import annotations

import asyncio
import json
import operator
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from langgraph.graph import START, StateGraph
from pymongo import monitoring

from langgraph_durable_mongodb.journal import SecureLLM, SecureTool, current_effect, effect
from langgraph_durable_mongodb.platform import DurablePlatform

EFFECTS = ("triage", "lookup_policy", "lookup_claim", "review", "risk_score", "issue_payment")
NOT_COUNTED = {"hello", "ismaster", "isMaster", "ping", "endSessions", "killCursors", "buildInfo", "saslStart", "saslContinue"}


# -- where each real execution is recorded, and where the process may die ------------------------


class KillSwitch(monitoring.CommandListener):
    """Counts points (command starts and acknowledgements, effect ends); SIGKILLs the process at ``kill_at``."""

    def __init__(self, kill_at: int | None = None, marker: Path | None = None, kill_on: str | None = None) -> None:
        self.kill_at, self.kill_on, self.marker = kill_at, kill_on, marker
        self.trace: list[str] = []
        self.odd_replies: list[str] = []  # update replies without nModified (seen from FerretDB under load)
        self.armed = True
        self._lock = threading.Lock()

    @property
    def points(self) -> int:
        return len(self.trace)

    def point(self, label: str) -> None:
        with self._lock:
            if not self.armed:
                return
            self.trace.append(label)
            if self.points != self.kill_at and label != self.kill_on:
                return
            if self.marker is not None:
                append_line(self.marker, f"{self.points} {label}")
            os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(60)  # not reached

    slow_saves = 0.0  # seconds to hold every checkpoint save (the update of `checkpoints`) before it is sent

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if self.slow_saves and event.command_name == "update" and event.command.get("update") == "checkpoints":
            time.sleep(self.slow_saves)  # runs in the thread that saves: a slow server, seen from the client
        if event.command_name not in NOT_COUNTED:
            self.point(f"start:{event.command_name}")

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        if event.command_name == "update" and "nModified" not in event.reply:
            self.odd_replies.append(repr(event.reply)[:500])
        if event.command_name not in NOT_COUNTED:
            self.point(f"ack:{event.command_name}")

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def append_line(path: Path | str, line: str) -> None:
    """Append one line and fsync: it survives the SIGKILL that may follow at once."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


class Run:
    """What effects of this process share: the execution log, the kill switch, a hook for in-process tests."""

    log: Path | None = None
    switch = KillSwitch()
    effect_seconds = 0.0
    #: one effect that takes long (``long_effect``: its name, ``long_seconds``), as a tool call of minutes does
    long_effect: tuple[str, float] | None = None
    hook: Callable[[str], None] | None = None
    #: called with the platform before the run (a fork server's caller may set it to instrument a run)
    on_platform: Callable[[DurablePlatform], None] | None = None


def configure(
    *,
    log: Path | str | None,
    switch: KillSwitch | None = None,
    effect_seconds: float = 0.0,
    hook: Callable[[str], None] | None = None,
) -> KillSwitch:
    Run.log = Path(log) if log is not None else None
    Run.switch = switch or KillSwitch()
    Run.effect_seconds, Run.hook = effect_seconds, hook
    return Run.switch


def _executed(t0: int) -> None:
    info = current_effect()
    if Run.log is not None:
        append_line(Run.log, f"{info.name} {info.idempotency_key} {os.getpid()} {t0} {time.monotonic_ns()}")
    if Run.hook is not None:
        Run.hook(info.name)
    Run.switch.point(f"effect:{info.name}")


def _seconds() -> float:
    """How long the running effect takes: the long effect's seconds, else ``effect_seconds``. The long effect's start
    is appended to ``<log>.started`` (``<name> <pid>``): a test waits for it to redeliver the run meanwhile."""
    if Run.long_effect is not None and current_effect().name == Run.long_effect[0]:
        if Run.log is not None:
            append_line(Run.log.with_name(Run.log.name + ".started"), f"{Run.long_effect[0]} {os.getpid()}")
        return Run.long_effect[1]
    return Run.effect_seconds


def side_effect() -> None:
    t0 = time.monotonic_ns()
    if seconds := _seconds():
        time.sleep(seconds)
    _executed(t0)


async def aside_effect() -> None:
    t0 = time.monotonic_ns()
    if seconds := _seconds():
        await asyncio.sleep(seconds)
    _executed(t0)


# -- the effects ----------------------------------------------------------------------------------


class ScriptedLLM(BaseChatModel):
    """A deterministic chat model: its reply depends on the prompt only."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @staticmethod
    def _reply(messages: list[BaseMessage]) -> ChatResult:
        prompt = messages[-1].content if messages else ""
        return ChatResult(generations=[ChatGeneration(message=AIMessage(f"ok[{len(str(prompt))}]"))])

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        side_effect()
        return self._reply(messages)

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        await aside_effect()
        return self._reply(messages)


def _tool(name: str) -> SecureTool:
    def run(ref: str) -> str:
        side_effect()
        return f"{name}({ref})"

    async def arun(ref: str) -> str:
        await aside_effect()
        return f"{name}({ref})"

    return SecureTool(StructuredTool.from_function(func=run, coroutine=arun, name=name, description=f"{name} a reference"))


triage_llm = SecureLLM(ScriptedLLM(), effect_name="triage")
review_llm = SecureLLM(ScriptedLLM(), effect_name="review")
lookup_policy = _tool("lookup_policy")
lookup_claim = _tool("lookup_claim")


@effect(kind="tool", name="risk_score")
def risk_score(case: str, notes: int) -> int:
    side_effect()
    return len(case) * 10 + notes


@effect(kind="tool", name="risk_score")
async def arisk_score(case: str, notes: int) -> int:
    await aside_effect()
    return len(case) * 10 + notes


@effect(kind="payment", name="issue_payment")
def issue_payment(case: str, cents: int) -> str:
    side_effect()
    return f"paid {cents} for {case}"


@effect(kind="payment", name="issue_payment")
async def aissue_payment(case: str, cents: int) -> str:
    await aside_effect()
    return f"paid {cents} for {case}"


# -- the graph: three levels, six effects ----------------------------------------------------------


class State(TypedDict, total=False):
    case: str
    notes: Annotated[list, operator.add]
    decision: str


def _sync_nodes() -> dict[str, Callable]:
    def intake(s: State) -> State:
        return {"notes": ["intake:" + triage_llm.invoke(f"triage case {s['case']}").content]}

    def gather(s: State) -> State:
        return {"notes": [lookup_policy.invoke({"ref": s["case"]}), lookup_claim.invoke({"ref": s["case"]})]}

    def review(s: State) -> State:
        return {"notes": ["review:" + review_llm.invoke(f"review {s['case']}: {'; '.join(s['notes'])}").content]}

    def assess(s: State) -> State:
        return {"notes": [f"risk:{risk_score(s['case'], len(s['notes']))}"]}

    def decide(s: State) -> State:
        return {"decision": issue_payment(s["case"], 100 * len(s["notes"]))}

    return {"intake": intake, "gather": gather, "review": review, "assess": assess, "decide": decide}


def _async_nodes() -> dict[str, Callable]:
    async def intake(s: State) -> State:
        return {"notes": ["intake:" + (await triage_llm.ainvoke(f"triage case {s['case']}")).content]}

    async def gather(s: State) -> State:
        return {"notes": [await lookup_policy.ainvoke({"ref": s["case"]}), await lookup_claim.ainvoke({"ref": s["case"]})]}

    async def review(s: State) -> State:
        return {"notes": ["review:" + (await review_llm.ainvoke(f"review {s['case']}: {'; '.join(s['notes'])}")).content]}

    async def assess(s: State) -> State:
        return {"notes": [f"risk:{await arisk_score(s['case'], len(s['notes']))}"]}

    async def decide(s: State) -> State:
        return {"decision": await aissue_payment(s["case"], 100 * len(s["notes"]))}

    return {"intake": intake, "gather": gather, "review": review, "assess": assess, "decide": decide}


def build_graph(api: str = "invoke") -> StateGraph:
    """The builder; ``api="ainvoke"`` gives async nodes (effects on the async client)."""
    nodes = _async_nodes() if api == "ainvoke" else _sync_nodes()

    def chain(*names: str, children: dict[str, Any] | None = None) -> StateGraph:
        g = StateGraph(State)
        previous = START
        for name in names:
            g.add_node(name, (children or {}).get(name) or nodes[name])
            g.add_edge(previous, name)
            previous = name
        return g

    policy_analysis = chain("review", "assess").compile()
    case_investigation = chain("gather", "policy_analysis", children={"policy_analysis": policy_analysis}).compile()
    return chain("intake", "case_investigation", "decide", children={"case_investigation": case_investigation})


def inputs(case: str) -> State:
    return {"case": case, "notes": []}


def run_until_done(graph: Any, case: str, config: dict, durability: str, api: str) -> dict[str, Any]:
    """Start the thread, or resume it, or leave a finished one; returns the run's final state."""
    if api == "ainvoke":
        return asyncio.run(_arun_until_done(graph, case, config, durability))
    snapshot = graph.get_state(config)
    if snapshot.metadata is None:
        return graph.invoke(inputs(case), config, durability=durability)
    if snapshot.tasks:  # not `next`: a task whose writes were saved is not in `next`, yet its step is not over
        return graph.invoke(None, config, durability=durability)
    return snapshot.values


async def _arun_until_done(graph: Any, case: str, config: dict, durability: str) -> Any:
    snapshot = await graph.aget_state(config)
    if snapshot.metadata is None:
        return await graph.ainvoke(inputs(case), config, durability=durability)
    if snapshot.tasks:
        return await graph.ainvoke(None, config, durability=durability)
    return snapshot.values


# -- the process -------------------------------------------------------------------------------------


def main(spec: dict[str, Any]) -> int:
    """Run the spec's thread until done (or until the kill point); write ``spec["result"]``."""
    from pymongo import AsyncMongoClient, MongoClient

    if spec.get("stderr"):  # a fork server's children inherit its stdout/stderr: keep ours apart
        fd = os.open(spec["stderr"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    result_path = Path(spec["result"])
    switch = configure(
        log=spec["log"],
        switch=KillSwitch(spec.get("kill_at"), result_path.with_suffix(".killed"), spec.get("kill_on")),
        effect_seconds=spec.get("effect_seconds", 0.0),
    )
    switch.slow_saves = spec.get("slow_saves", 0.0)
    Run.long_effect = (spec["long_effect"], spec.get("long_seconds", 5.0)) if spec.get("long_effect") else None
    switch.armed = False  # the points are the run's, not the connection set-up's
    timeout_ms = int(spec.get("server_selection_ms", 20_000))
    client = MongoClient(spec["uri"], event_listeners=[switch], serverSelectionTimeoutMS=timeout_ms)
    async_client = AsyncMongoClient(spec["uri"], event_listeners=[switch], serverSelectionTimeoutMS=timeout_ms)
    journal_options = {"lease_seconds": spec.get("lease_seconds", 1.0), "wait_seconds": spec.get("wait_seconds", 60.0)}
    platform = DurablePlatform(
        client, async_client=async_client, db_name=spec["db"], journal_options=journal_options,
        exclusive_runs=spec.get("exclusive_runs", True),  # False: only the journal's fences keep runs apart
        run_lease_seconds=spec.get("run_lease_seconds", 30.0), run_wait_seconds=spec.get("run_wait_seconds", 30.0),
    )
    if Run.on_platform is not None:
        Run.on_platform(platform)
    api = spec.get("api", "invoke")
    graph = platform.compile(build_graph(api))
    client.admin.command("ping")
    if spec.get("start_at"):  # a barrier: processes started together run together
        time.sleep(max(0.0, spec["start_at"] - time.time()))
    config = {"configurable": {"thread_id": spec["thread"]}}
    started = time.monotonic()
    switch.armed = True
    outcome: dict[str, Any] = {"pid": os.getpid()}
    try:
        values = run_until_done(graph, spec.get("case", spec["thread"]), config, spec.get("durability", "sync"), api)
        outcome.update(status="done", values=values)
    except Exception as exc:  # noqa: BLE001 - reported to the test
        outcome.update(
            status="error", error=f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}", traceback=traceback.format_exc()
        )
    switch.armed = False
    outcome.update(points=switch.points, trace=switch.trace, odd_replies=switch.odd_replies, seconds=round(time.monotonic() - started, 3))
    partial = result_path.with_suffix(".partial")
    partial.write_text(json.dumps(outcome, default=str))
    partial.replace(result_path)
    platform.close()  # before the client: it waits for the run lock's background release (docs/platform.md)
    client.close()  # the async client needs no closing: the process ends here
    return 0 if outcome["status"] == "done" else 3


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))
