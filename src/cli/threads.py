"""Read views of threads: the thread list and one thread's checkpoints and operation tree."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any, TextIO

from ..schema import CollectionNames
from .exits import EXIT_UNKNOWN_THREAD, CliError


def _namespace_label(ns: str) -> str:
    """``case_investigation:abc|policy_analysis:def`` -> ``case_investigation|policy_analysis``."""
    return "|".join(seg.split(":")[0] for seg in ns.split("|")) if ns else "(root)"


def threads(db: Any, names: CollectionNames, limit: int) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    cursor = db[names.checkpoints].find(
        {}, {"_id": 0, "thread_id": 1, "checkpoint_ns": 1, "checkpoint_id": 1, "ts": 1, "metadata.step": 1}
    )
    for doc in cursor.batch_size(10_000):
        row = rows.setdefault(
            doc["thread_id"], {"thread_id": doc["thread_id"], "checkpoints": 0, "latest_step": None, "updated": ""}
        )
        row["checkpoints"] += 1
        row["updated"] = max(row["updated"], doc.get("ts") or "")
        if doc["checkpoint_ns"] == "" and doc["checkpoint_id"] > row.get("_latest", ""):
            row["_latest"] = doc["checkpoint_id"]
            row["latest_step"] = (doc.get("metadata") or {}).get("step")
    ordered = sorted(rows.values(), key=lambda r: r["updated"], reverse=True)[:limit]
    for row in ordered:
        row.pop("_latest", None)
    return ordered


def inspect_thread(db: Any, names: CollectionNames, thread_id: str) -> dict[str, Any]:
    docs = list(
        db[names.checkpoints].find(
            {"thread_id": thread_id},
            {"_id": 0, "checkpoint_ns": 1, "checkpoint_id": 1, "ts": 1, "metadata.step": 1, "metadata.source": 1},
        )
    )
    journal = list(db[names.journal].find({"thread_id": thread_id, "chunk": 0}, {"_id": 0, "outcome.data": 0}))
    if not docs and not journal:
        raise CliError(f"unknown thread {thread_id!r}: no checkpoints and no journal entries", EXIT_UNKNOWN_THREAD)
    per_ns: dict[str, dict[str, Any]] = {}
    for doc in sorted(docs, key=lambda d: d["checkpoint_id"]):
        label = _namespace_label(doc["checkpoint_ns"])
        entry = per_ns.setdefault(label, {"namespace": label, "checkpoints": 0, "occurrences": set()})
        entry["checkpoints"] += 1
        entry["occurrences"].add(doc["checkpoint_ns"])
        entry.update(latest_id=doc["checkpoint_id"], latest_step=(doc.get("metadata") or {}).get("step"), updated=doc.get("ts"))
    namespaces = [{**e, "occurrences": len(e["occurrences"])} for e in sorted(per_ns.values(), key=lambda e: e["namespace"])]
    return {"thread_id": thread_id, "namespaces": namespaces, "operations": operation_tree(journal)}


def operation_tree(journal: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Journal entries grouped by path, then node occurrence, in the order they started."""
    by_path: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for doc in sorted(journal, key=lambda d: (d.get("path", ""), d.get("started_at") or 0)):
        node = f"{doc.get('node')}#{doc.get('occurrence', 1)}"
        by_path[doc.get("path", "?")][node].append(
            {
                "kind": doc.get("kind"),
                "name": doc.get("name"),
                "key": doc.get("effect_key"),
                "status": doc.get("status"),
                "attempts": doc.get("attempts", 0),
                "replays": doc.get("replays", 0),
                "duration_ms": doc.get("duration_ms"),
                "error": (doc.get("error") or {}).get("type") if isinstance(doc.get("error"), dict) else doc.get("error"),
            }
        )
    return [
        {"path": path, "nodes": [{"node": node, "effects": effects} for node, effects in nodes.items()]}
        for path, nodes in sorted(by_path.items())
    ]


def render_inspect(report: dict[str, Any], out: TextIO) -> None:
    out.write(f"thread {report['thread_id']}\n\ncheckpoints\n")
    width = max([len(n["namespace"]) for n in report["namespaces"]] + [9])
    for ns in report["namespaces"]:
        out.write(
            f"  {ns['namespace']:<{width}}  {ns['checkpoints']:>3} checkpoints, {ns['occurrences']} occurrence(s)"
            f"  latest step {ns['latest_step']}\n"
        )
    out.write("\noperations\n")
    if not report["operations"]:
        out.write("  (no journaled effects)\n")
        return
    tree: dict[str, Any] = {}
    for op in report["operations"]:
        segments = op["path"].split("/")
        branch = tree
        for i in range(0, len(segments), 2):
            branch = branch.setdefault("/".join(segments[i : i + 2]), {})
        for node in op["nodes"]:
            branch[node["node"]] = [_effect_line(e) for e in node["effects"]]
    [(root, children)] = tree.items() if len(tree) == 1 else [("", tree)]
    out.write(f"  {root}\n")
    _render_branch(children, "  ", out)


def _render_branch(branch: dict[str, Any] | list[str], prefix: str, out: TextIO) -> None:
    items = list(branch.items()) if isinstance(branch, dict) else [(line, None) for line in branch]
    for i, (label, children) in enumerate(items):
        last = i == len(items) - 1
        out.write(f"{prefix}{'└─' if last else '├─'} {label}\n")
        if children:
            _render_branch(children, prefix + ("   " if last else "│  "), out)


def _effect_line(effect: dict[str, Any]) -> str:
    duration = f"{effect['duration_ms']:.0f} ms" if isinstance(effect["duration_ms"], (int, float)) else "-"
    replay = f"  replayed {effect['replays']}x" if effect["replays"] else ""  # counted by claims only
    error = f"  {effect['error']}" if effect["error"] else ""
    return (
        f"{effect['kind']:<5} {effect['name']:<20} {effect['status']:<9} attempts {effect['attempts']}"
        f"  {duration:>7}{replay}{error}"
    )
