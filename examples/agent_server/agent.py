"""A durable case agent for Agent Server (``langgraph dev``): see README.md beside this file.

root -> ``case_investigation`` (compiled child) -> ``policy_analysis`` (compiled
grandchild) -> ``review_policy``, which asks a ``SecureLLM`` and calls the
``SecureTool`` ``lookup_policy``; then ``decide`` (root). ``graph`` is compiled
*without* a checkpointer: the server lends it the one ``langgraph.json`` names
(``langgraph_durable_mongodb.server.checkpointer``), and every run is durable.

Offline: the chat model is a scripted fake that answers from its prompt (no
network, no keys). Nodes are ``async`` (``langgraph dev`` forbids blocking
calls on its event loop); the model and the tool are sync and run in
LangChain's thread pool.

Environment (all optional but ``MONGODB_URI``, which the checkpointer needs):

- ``AGENT_EFFECT_LOG``: a file that gets one JSON line per *real* LLM or tool
  execution (a replay from the journal writes none): how you see, outside
  MongoDB, that a resume did not call them again.
- ``AGENT_CRASH_FILE``: if this file exists when ``review_policy`` has run its
  tool, the node deletes it and fails (once): the run ends in error, and
  ``runs.wait(thread_id, "agent", input=None)`` resumes it.
- ``AGENT_PAUSE_FILE``: while this file exists, ``review_policy`` waits after
  its tool ran (at most ``AGENT_PAUSE_SECONDS``, 120 by default): time to kill
  the server mid-run.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from typing import Annotated, Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb import SecureLLM, SecureTool, current_effect

log = logging.getLogger("agent_server_example")


class CaseState(TypedDict, total=False):
    case: str
    # A compiled child returns its whole state, the parent's findings included: keep each finding once.
    findings: Annotated[list[str], lambda old, new: old + [x for x in new if x not in old]]
    decision: str


class SimulatedCrash(RuntimeError):
    """The worker 'dies' after the tool ran (AGENT_CRASH_FILE)."""


def record_execution(kind: str, name: str) -> None:
    """One real execution: a log line, and a JSON line in AGENT_EFFECT_LOG (fsynced) when it is set."""
    effect = current_effect()
    key = effect.idempotency_key if effect is not None else None
    log.warning("%s %s executed for real (idempotency key %s)", kind, name, key)
    path = os.environ.get("AGENT_EFFECT_LOG")
    if not path:
        return
    line = json.dumps({"kind": kind, "name": name, "key": key, "pid": os.getpid(), "at": time.time()})
    with open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")
        out.flush()
        os.fsync(out.fileno())


class CaseModel(BaseChatModel):
    """A scripted offline chat model: its answer is made from the last prompt."""

    @property
    def _llm_type(self) -> str:
        return "case-model"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        record_execution("llm", type(self).__name__)
        answer = f"{messages[-1].content}: it concerns policy P-7; check its water damage cover."
        return ChatResult(generations=[ChatGeneration(message=AIMessage(answer))])


@tool
def lookup_policy(policy_id: str) -> str:
    """Look up an insurance policy by id."""
    record_execution("tool", "lookup_policy")
    return f"policy {policy_id}: water damage covered up to 10,000 EUR"


llm = SecureLLM(CaseModel())
policy_tool = SecureTool(lookup_policy)


def _take(path: str) -> bool:
    try:
        os.remove(path)
    except FileNotFoundError:
        return False
    return True


async def after_the_tool() -> None:
    """The test hooks: fail once (AGENT_CRASH_FILE), or wait while AGENT_PAUSE_FILE exists."""
    crash = os.environ.get("AGENT_CRASH_FILE")
    if crash and await asyncio.to_thread(_take, crash):
        log.warning("review_policy: simulated crash after the tool ran")
        raise SimulatedCrash("worker lost after the tool ran")
    pause = os.environ.get("AGENT_PAUSE_FILE")
    deadline = time.monotonic() + float(os.environ.get("AGENT_PAUSE_SECONDS", "120"))
    while pause and time.monotonic() < deadline and await asyncio.to_thread(os.path.exists, pause):
        await asyncio.sleep(0.05)


async def review_policy(state: CaseState) -> CaseState:
    advice = await llm.ainvoke(f"Review the policy for {state['case']}")
    policy = await policy_tool.ainvoke({"policy_id": "P-7"})
    await after_the_tool()
    return {"findings": [advice.content, policy]}


async def gather(state: CaseState) -> CaseState:
    return {"findings": [f"evidence gathered for {state['case']}"]}


async def decide(state: CaseState) -> CaseState:
    return {"decision": f"{state['case']}: approved after {len(state['findings'])} findings"}


policy_analysis = StateGraph(CaseState)
policy_analysis.add_node("review_policy", review_policy)
policy_analysis.add_edge(START, "review_policy")

case_investigation = StateGraph(CaseState)
case_investigation.add_node("gather", gather)
case_investigation.add_node("policy_analysis", policy_analysis.compile())  # compiled grandchild, checkpointer=None
case_investigation.add_edge(START, "gather")
case_investigation.add_edge("gather", "policy_analysis")

root = StateGraph(CaseState)
root.add_node("case_investigation", case_investigation.compile())  # compiled child, checkpointer=None
root.add_node("decide", decide)
root.add_edge(START, "case_investigation")
root.add_edge("case_investigation", "decide")

# No checkpointer: Agent Server refuses a graph that has one, and lends it the platform's.
graph = root.compile()
