"""The main job: a durable agent whose run crashes part-way and resumes without repeating its effects.

The reference scenario: root -> ``case_investigation`` (compiled child) ->
``policy_analysis`` (compiled child) -> ``review_policy`` (node), which asks a
``SecureLLM`` (a deterministic fake chat model: no network, no keys) and calls
the secure tool ``lookup_policy``. The run fails once after the tool ran, is
resumed, and the LLM and the tool are replayed from the journal.

Runs on the embedded default (mongomock, in memory) unless ``MONGODB_URI`` is set::

    scripts/demo                                        # simulated crash, resume, in one process
    MONGODB_URI=mongodb://localhost:27017 scripts/demo --crash   # SIGKILL itself after the tool ran
    MONGODB_URI=mongodb://localhost:27017 scripts/demo           # a new process resumes the thread
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Annotated, Any, TypedDict, cast

from bson import json_util
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.config import get_config
from langgraph.graph import START, StateGraph

from .journal import SecureLLM, SecureTool
from .platform import DurablePlatform
from .storage.connections import DRIVER_INFO, masked_uri

PATH = "agent/1/case_investigation/1/policy_analysis/1"
EXECUTED: dict[str, int] = {"llm": 0, "tool": 0}


class CaseState(TypedDict, total=False):
    case: str
    # A child graph returns its whole state, which holds the parent's findings too: keep each once.
    findings: Annotated[list[str], lambda a, b: a + [x for x in b if x not in a]]
    decision: str


class SimulatedCrash(RuntimeError):
    """The worker 'dies' after the tool ran (in-process stand-in for a crash)."""


class CaseModel(GenericFakeChatModel):
    """A scripted chat model that says when it is really called."""

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        EXECUTED["llm"] += 1
        print(f"    llm   {type(self).__name__:<14} executed for real (call #{EXECUTED['llm']})")
        return super()._generate(*args, **kwargs)


@tool
def lookup_policy(policy_id: str) -> str:
    """Look up an insurance policy by id."""
    EXECUTED["tool"] += 1
    print(f"    tool  lookup_policy  executed for real (call #{EXECUTED['tool']})")
    return f"policy {policy_id}: water damage covered up to 10,000 EUR"


def build_graph(crash: str, journal: Any = None) -> StateGraph[CaseState]:
    """root -> case_investigation -> policy_analysis -> review_policy (``crash``: none, raise or kill; a kill waits
    for ``journal`` to hold both outcomes first)."""
    llm = SecureLLM(
        CaseModel(messages=iter([AIMessage("The claim concerns policy P-7; check its water damage cover.")]))
    )
    policy_tool = SecureTool(lookup_policy)

    def review_policy(state: CaseState) -> CaseState:
        advice = llm.invoke(f"Review the policy for {state['case']}")
        policy = policy_tool.invoke({"policy_id": "P-7"})
        if crash == "raise":
            raise SimulatedCrash("worker lost after the tool ran")
        if crash == "kill":
            # An outcome is recorded while the node goes on (the node's next effect, and its writes, wait for it):
            # the crash is staged once both records are stored, as it would come a moment later.
            _journaled(journal, get_config()["configurable"]["thread_id"], 2)
            print("  ✗ SIGKILL after the tool ran: the process dies now; run the demo again to resume")
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        return {"findings": [cast(str, advice.content), policy]}  # CaseModel's one answer: text

    policy = StateGraph(CaseState)
    policy.add_node("review_policy", review_policy)
    policy.add_edge(START, "review_policy")
    investigation = StateGraph(CaseState)
    investigation.add_node("gather", lambda s: {"findings": [f"evidence gathered for {s['case']}"]})
    investigation.add_node("policy_analysis", policy.compile())
    investigation.add_edge(START, "gather")
    investigation.add_edge("gather", "policy_analysis")
    root = StateGraph(CaseState)
    root.add_node("case_investigation", investigation.compile())
    root.add_node("decide", lambda s: {"decision": f"approved after {len(s['findings'])} findings"})
    root.add_edge(START, "case_investigation")
    root.add_edge("case_investigation", "decide")
    return root


def _journaled(journal: Any, thread_id: str, count: int, timeout: float = 30.0) -> None:
    """Wait until the thread's journal holds ``count`` completed entries."""
    deadline = time.monotonic() + timeout
    while sum(e.get("status") == "completed" for e in journal.entries(thread_id)) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the journal of {thread_id!r} did not record {count} outcomes in {timeout:g} s")
        time.sleep(0.01)


def open_platform(uri: str | None, db_name: str) -> tuple[Any, DurablePlatform, str]:
    if not uri:
        platform = DurablePlatform.embedded(db_name=db_name)
        return None, platform, "embedded mongomock (in memory; set MONGODB_URI for a real server)"
    from pymongo import AsyncMongoClient, MongoClient

    client: MongoClient[dict[str, Any]] = MongoClient(uri, serverSelectionTimeoutMS=5000, driver=DRIVER_INFO)
    platform = DurablePlatform(client, async_client=AsyncMongoClient(uri, driver=DRIVER_INFO), db_name=db_name)
    return client, platform, masked_uri(uri)  # printed: never the password


def show_journal(platform: DurablePlatform, thread_id: str) -> None:
    for doc in platform.journal.entries(thread_id):
        print(f"    {doc['kind']:<5} {doc['name']:<14} status {doc['status']}, executed {doc['attempts']}x")


#: The journal table's columns: fields of an entry (the outcome: its preview).
COLUMNS = ("path", "node", "kind", "name", "status", "attempts", "idempotency_key", "outcome")


def show_table(docs: list[dict[str, Any]]) -> None:
    """The journal entries as a compact table, one row per entry."""
    rows = [[str(doc.get(field, "")) for field in COLUMNS[:-1]] + [_outcome(doc)] for doc in docs]
    widths = [max(len(cell) for cell in column) for column in zip(COLUMNS, *rows, strict=True)]
    for cells in (COLUMNS, *rows):
        print("    " + "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip())


def _outcome(doc: dict[str, Any], width: int = 40) -> str:
    """An entry's outcome preview, cut to ``width`` characters."""
    preview = str((doc.get("outcome") or {}).get("preview", ""))
    return preview if len(preview) <= width else preview[: width - 1] + "…"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--thread", default="case-42", help="thread id (default: case-42)")
    parser.add_argument("--db", default="durable_demo", help="database name (default: durable_demo)")
    parser.add_argument(
        "--crash", action="store_true", help="SIGKILL the process after the tool ran (needs MONGODB_URI)"
    )
    parser.add_argument("--raw", action="store_true", help="also print the journal's documents as stored")
    args = parser.parse_args(argv)
    uri = os.environ.get("MONGODB_URI")
    if args.crash and not uri:
        parser.error("--crash kills the process, and the embedded mongomock dies with it: set MONGODB_URI")

    client, platform, where = open_platform(uri, args.db)
    config = {"configurable": {"thread_id": args.thread}}
    print(f"storage: {where}, database {args.db!r}")
    print("graph:   root -> case_investigation -> policy_analysis -> review_policy (topology validated)")

    graph = platform.compile(build_graph("none"))
    resuming = bool(graph.get_state(config).next)  # type: ignore[attr-defined]  # DurableGraph: a Pregel at run time
    if resuming:
        print(f"\nthread {args.thread} was interrupted by a crash: resuming it in a new process")
    else:
        platform.checkpointer.delete_thread(args.thread)
        print(f"\nrun 1: invoke (thread {args.thread})")
        print(f"  review_policy at {PATH}")
        graph = platform.compile(build_graph("kill" if args.crash else "raise", platform.journal))
        inputs = {"case": "claim 7731", "findings": []}
        try:
            graph.invoke(inputs, config)  # type: ignore[attr-defined]  # DurableGraph: a Pregel at run time
        except SimulatedCrash as crash:
            print(f"  ✗ simulated crash: {crash}")
        print("  journal after the crash:")
        show_journal(platform, args.thread)
        print("\nrun 2: resume with invoke(None, config)")
    print(f"  review_policy at {PATH} runs again; its effects come from the journal")
    before = dict(EXECUTED)
    graph = platform.compile(build_graph("none"))
    final = graph.invoke(None, config)  # type: ignore[attr-defined]  # DurableGraph: a Pregel at run time
    print(f"  real calls during the resume: llm {EXECUTED['llm'] - before['llm']}, "
          f"tool {EXECUTED['tool'] - before['tool']}")
    print("  journal after the resume:")
    show_journal(platform, args.thread)
    print(f"\nfinal state: {json.dumps(final)}")
    db = (platform.checkpointer.client or client)[args.db]
    print("\njournal of the thread (--raw: the documents as stored, each keyed by its visit):")
    show_table(platform.journal.entries(args.thread))
    if args.raw:
        docs = list(db[platform.checkpointer.collections.journal].find({"thread_id": args.thread}, {"_id": 0}))
        print(json_util.dumps(docs, indent=2, json_options=json_util.RELAXED_JSON_OPTIONS))
    if client is not None:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
