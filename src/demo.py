"""The main job: a root graph with nested compiled subgraphs, made durable on MongoDB.

Runs on the embedded default (mongomock, in memory) unless ``MONGODB_URI``
is set::

    scripts/demo                      # or: python -m langgraph_durable_mongodb.demo
    MONGODB_URI=mongodb://localhost:27017 scripts/demo
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Annotated, Any, TypedDict

from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from .checkpointer import MongoDBCheckpointer


class CaseState(TypedDict, total=False):
    case: str
    # A child graph returns its whole state, which holds the parent's findings
    # too: keep each finding once.
    findings: Annotated[list[str], lambda a, b: a + [x for x in b if x not in a]]
    decision: str


def build_graph() -> StateGraph:
    """root -> case_investigation (compiled child) -> policy_analysis (compiled child) -> review_policy."""

    def review_policy(state: CaseState) -> dict:
        approval = interrupt({"question": f"approve the policy review of {state['case']}?"})
        return {"findings": [f"policy reviewed (approved={approval})"]}

    policy = StateGraph(CaseState)
    policy.add_node("review_policy", review_policy)
    policy.add_edge(START, "review_policy")

    investigation = StateGraph(CaseState)
    investigation.add_node("gather", lambda s: {"findings": [f"gathered evidence for {s['case']}"]})
    investigation.add_node("policy_analysis", policy.compile())
    investigation.add_edge(START, "gather")
    investigation.add_edge("gather", "policy_analysis")

    root = StateGraph(CaseState)
    root.add_node("case_investigation", investigation.compile())
    root.add_node("decide", lambda s: {"decision": f"closed after {len(s['findings'])} findings"})
    root.add_edge(START, "case_investigation")
    root.add_edge("case_investigation", "decide")
    return root


def open_clients(uri: str | None) -> tuple[Any, str]:
    if uri:
        from pymongo import MongoClient

        return MongoClient(uri), uri
    import mongomock

    return mongomock.MongoClient(), "embedded mongomock (in memory; set MONGODB_URI for a real server)"


def stored_summary(client: Any, db_name: str, thread_id: str) -> dict[str, Any]:
    db = client[db_name]
    checkpoints = list(
        db.checkpoints.find({"thread_id": thread_id}, {"_id": 0, "checkpoint_ns": 1, "checkpoint_id": 1, "metadata": 1})
    )
    return {
        "checkpoints_per_namespace": _count_by(checkpoints, "checkpoint_ns"),
        "blobs": db.checkpoint_blobs.count_documents({"thread_id": thread_id}),
        "writes": db.checkpoint_writes.count_documents({"thread_id": thread_id}),
        "latest_root_metadata": max(
            (c for c in checkpoints if c["checkpoint_ns"] == ""), key=lambda c: c["checkpoint_id"]
        )["metadata"],
    }


def _count_by(docs: list[dict], key: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for doc in docs:
        name = "|".join(seg.split(":")[0] for seg in doc[key].split("|")) if doc[key] else "(root)"
        out[name] = out.get(name, 0) + 1
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--thread", default="case-42", help="thread id (default: case-42)")
    parser.add_argument("--db", default="durable_demo", help="database name (default: durable_demo)")
    args = parser.parse_args(argv)

    client, where = open_clients(os.environ.get("MONGODB_URI"))
    print(f"storage: {where}")
    saver = MongoDBCheckpointer(client, db_name=args.db)
    graph = build_graph().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": args.thread}}
    saver.delete_thread(args.thread)

    first = graph.invoke({"case": "case-42", "findings": []}, config)
    [pending] = first["__interrupt__"]
    print(f"1. run paused in a nested subgraph: {pending.value['question']}")
    state = graph.get_state(config, subgraphs=True)
    print(f"   paused task: {state.tasks[0].name} -> {state.tasks[0].state.tasks[0].name}")
    final = graph.invoke(Command(resume=True), config)
    print(f"2. resumed from MongoDB; final state: {json.dumps(final, indent=None)}")
    print("3. what was stored:")
    print(json.dumps(stored_summary(client, args.db, args.thread), indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
