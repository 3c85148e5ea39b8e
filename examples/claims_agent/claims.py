"""A claims agent: LangGraph's prebuilt ReAct agent, durable on MongoDB.

The agent (``create_react_agent``, or LangChain's ``create_agent``) looks a policy up, asks a person to approve
the payout (``interrupt()``) and pays the claim. The model is ``SecureLLM``-wrapped, the lookup and the payment
are ``SecureTool``s, and the payment is ``at_most_once``: if the worker dies while paying, the payment is never
made again blind. ``run.py`` drives it through a real SIGKILL.

The model is ``ClaimsModel``, an offline stand-in for ``ChatOpenAI`` & co that supports ``bind_tools`` (LangChain's
``GenericFakeChatModel`` does not, so ``create_react_agent`` fails with it): it decides from the conversation
alone, so any process can go on with it. The payment provider is ``Provider``, a file of charges that keeps one
charge per idempotency key, as Stripe does.
"""

from __future__ import annotations

import json
import os
import signal
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.types import interrupt

from langgraph_durable_mongodb import DurablePlatform, SecureLLM, SecureTool, current_effect

CLAIM, POLICY, CENTS = "claim-7731", "P-7", 120_000
#: Set in the environment of a worker that should die right after the provider charged (run.py sets it).
CRASH_AFTER_CHARGE = "CLAIMS_CRASH_AFTER_CHARGE"


class Provider:
    """A payment provider in a JSON file (``CLAIMS_LEDGER``): one charge per idempotency key, written to disk before
    it answers, so a charge survives the worker that asked for it."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path or os.environ["CLAIMS_LEDGER"])

    def charges(self) -> dict[str, dict[str, Any]]:
        """Every charge, by idempotency key."""
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    def charge(self, claim: str, cents: int, idempotency_key: str) -> dict[str, Any]:
        """Charge once per key: the same key gets the first charge back."""
        charges = self.charges()
        if idempotency_key not in charges:
            charges[idempotency_key] = {"id": f"ch_{len(charges) + 1:03d}", "claim": claim, "cents": cents}
            written = self.path.with_suffix(".tmp")
            with written.open("w") as out:
                json.dump(charges, out)
                out.flush()
                os.fsync(out.fileno())
            written.replace(self.path)
        return charges[idempotency_key]


def receipt(charge: dict[str, Any]) -> str:
    """What ``pay_claim`` returns for a charge: a person settling an unknown outcome records the same text."""
    return f"paid {charge['cents']} cents on {charge['claim']} (charge {charge['id']})"


@tool
def lookup_policy(policy_id: str) -> str:
    """Look up an insurance policy by id."""
    return f"policy {policy_id}: water damage covered up to 10,000 EUR"


@tool
def request_approval(claim_id: str, cents: int) -> str:
    """Ask a person to approve paying a claim; returns their answer."""
    answer = interrupt({"question": f"approve paying {cents / 100:,.2f} EUR on {claim_id}?", "claim": claim_id})
    return "approved" if answer == "approve" else f"rejected: {answer}"


@tool
def pay_claim(claim_id: str, cents: int) -> str:
    """Pay a claim out."""
    charge = Provider().charge(claim_id, cents, current_effect().idempotency_key)
    if os.environ.get(CRASH_AFTER_CHARGE):
        os.kill(os.getpid(), signal.SIGKILL)  # the worker dies: charged, and the journal never heard of it
    return receipt(charge)


TOOLS = [SecureTool(lookup_policy), request_approval, SecureTool(pay_claim, at_most_once=True)]


class ClaimsModel(BaseChatModel):
    """An offline chat model that handles one claim: lookup, approval, payment, answer. It supports ``bind_tools``
    (the tools are named in its script, so binding changes nothing) and decides from the messages alone."""

    @property
    def _llm_type(self) -> str:
        return "claims-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ClaimsModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.decide(messages))])

    @staticmethod
    def decide(messages: list[BaseMessage]) -> AIMessage:
        done = {m.name: str(m.content) for m in messages if isinstance(m, ToolMessage)}
        if "lookup_policy" not in done:
            return _call("lookup_policy", {"policy_id": POLICY})
        if "request_approval" not in done:
            return _call("request_approval", {"claim_id": CLAIM, "cents": CENTS})
        if done["request_approval"] != "approved":
            return AIMessage(f"Claim {CLAIM} is not paid: {done['request_approval']}.")
        if "pay_claim" not in done:
            return _call("pay_claim", {"claim_id": CLAIM, "cents": CENTS})
        return AIMessage(f"Claim {CLAIM} is covered by {POLICY} and was {done['pay_claim']}.")


def _call(name: str, args: dict[str, Any]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call_{name}"}])


def agent(platform: DurablePlatform, builder: str = "create_react_agent") -> Any:
    """The claims agent, built by LangGraph's ``create_react_agent`` or LangChain's ``create_agent``, compiled on
    ``platform`` (``attach``: both builders compile the graph themselves)."""
    model = SecureLLM(ClaimsModel())
    if builder == "create_agent":
        from langchain.agents import create_agent

        return platform.attach(create_agent(model, tools=TOOLS))
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():  # LangGraph 1.x points to create_agent; both are shown here
        warnings.simplefilter("ignore", DeprecationWarning)
        return platform.attach(create_react_agent(model, tools=TOOLS))
