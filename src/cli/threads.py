"""Read views of threads: the thread list and one thread's checkpoints and operation tree."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from datetime import datetime
from typing import Any, TextIO

from .._bson import OPTIONAL, document_problem
from .._langgraph import NS_END, NS_SEP
from ..storage.plans import lease
from ..views import plans, tree
from ..views.commands import unknown_thread
from ..views.states import effect_state
from ..views.stored import ThreadDocuments
from .terminal import escaped, printable

#: What ``inspect`` reports as the web inspector says it (``ThreadViews.thread``).
SHOWN_BY_INSPECT = ("state", "due", "tasks", "runs", "stopped", "more_open")


def _namespace_label(ns: str) -> str:
    """``case_investigation:abc|policy_analysis:def`` -> ``case_investigation|policy_analysis``."""
    return NS_SEP.join(seg.split(NS_END)[0] for seg in ns.split(NS_SEP)) if ns else "(root)"


#: What ``inspect`` reads of a checkpoint, and of a journal entry for the operation tree.
CHECKPOINT_FIELDS = {
    "checkpoint_ns": (str,), "checkpoint_id": (str,), "metadata": (dict, OPTIONAL), "ts": (str, datetime, OPTIONAL)
}
ENTRY_FIELDS = {
    "path": (str,), "node": (str,), "kind": (str,), "name": (str,), "status": (str,),
    "occurrence": (str, int, OPTIONAL), "effect_key": (str, OPTIONAL), "attempts": (int, OPTIONAL),
    "duration_ms": (int, float, OPTIONAL), "started_at": (datetime, OPTIONAL), "error": (dict, str, OPTIONAL),
}


def readable_documents(
    collection: str, docs: Iterable[dict[str, Any]], fields: dict[str, tuple[type, ...]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """``docs`` split into those holding ``fields`` as written and the problems of the others (each naming the
    collection, the ``_id`` and the field: ``_bson.document_problem``)."""
    good, problems = [], []
    for doc in docs:
        problem = document_problem(collection, doc, fields)
        good.append(doc) if problem is None else problems.append(str(problem))
    return good, problems


def listed_row(row: dict[str, Any]) -> dict[str, Any]:
    """A thread of the web inspector's list (``ThreadViews.threads``) as ``threads`` lists it."""
    return {"thread_id": row["thread_id"], "state": row["state"], "due": row["due"], "latest_step": row["step"],
            "checkpoints": row["checkpoints"], "updated": row["updated"] or "", "effects": row["effects"]}


def render_threads(rows: list[dict[str, Any]], found: dict[str, Any], out: TextIO, *, state: str | None = None) -> None:
    """The thread table (its state, what is due), and how to ask for the next page when there is one (stored text
    escaped)."""
    rows = escaped(rows)
    if not rows:
        out.write(f"no threads{f' {state}' if state else ''}\n")
    else:
        headers = {"thread_id": "THREAD", "state": "STATE", "latest_step": "STEP", "checkpoints": "CHECKPOINTS"}
        widths = {k: max(len(str(r[k])) for r in [{k: header}, *rows]) for k, header in headers.items()}
        out.write(f"{'THREAD':<{widths['thread_id']}}  {'STATE':<{widths['state']}}  "
                  f"{'STEP':>{widths['latest_step']}}  {'CHECKPOINTS':>{widths['checkpoints']}}  UPDATED  DUE\n")
        for r in rows:
            out.write(f"{r['thread_id']:<{widths['thread_id']}}  {r['state']:<{widths['state']}}  "
                      f"{r['latest_step']!s:>{widths['latest_step']}}  "
                      f"{r['checkpoints']!s:>{widths['checkpoints']}}  "
                      f"{r['updated'] or '-'}  {', '.join(r['due']) or '-'}\n")
    if found.get("more"):
        judged = f"judged {found['scanned']} threads; " if state else ""
        filtered = f" --state {shlex.quote(state)}" if state else ""
        out.write(f"{judged}more: --after {shlex.quote(printable(str(found['next_after'])))}{filtered}\n")


def inspect_thread(stored: ThreadDocuments, thread_id: str) -> dict[str, Any]:
    """The thread's checkpoints per namespace and its operation tree.

    Args:
        stored: the database's documents.
        thread_id: the thread.

    Returns:
        ``{"thread_id", "namespaces", "operations", "problems"}``: ``problems`` names each document that could
        not be read (collection, ``_id``, field); the rest is built from the others.

    Raises:
        CliError: the thread has no checkpoints and no journal entries (``EXIT_UNKNOWN_THREAD``).
        IncompatibleStorageError: the database holds a foreign format.
    """
    docs, journal = stored.inspected(thread_id)
    if not docs and not journal:
        raise unknown_thread(thread_id)
    names = stored.names
    docs, problems = readable_documents(names.checkpoints, docs, CHECKPOINT_FIELDS)
    journal, more = readable_documents(names.journal, journal, ENTRY_FIELDS)
    per_ns: dict[str, dict[str, Any]] = {}
    for doc in sorted(docs, key=lambda d: d["checkpoint_id"]):
        label = _namespace_label(doc["checkpoint_ns"])
        entry = per_ns.setdefault(label, {"namespace": label, "checkpoints": 0, "occurrences": set()})
        entry["checkpoints"] += 1
        entry["occurrences"].add(doc["checkpoint_ns"])
        entry.update(
            latest_id=doc["checkpoint_id"], latest_step=(doc.get("metadata") or {}).get("step"), updated=doc.get("ts")
        )
    namespaces = [
        {**e, "occurrences": len(e["occurrences"])} for e in sorted(per_ns.values(), key=lambda e: e["namespace"])
    ]
    operations = operation_tree(journal)
    return {"thread_id": thread_id, "namespaces": namespaces, "operations": operations, "problems": problems + more}


def operation_tree(journal: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Journal entries grouped by path, then node occurrence, both in the order they ran; effects in the order they
    started (``views.tree.operation_tree``)."""
    return tree.operation_tree(journal, _effect)


def _effect(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": doc.get("kind"),
        "name": doc.get("name"),
        "tool_call_id": doc.get("tool_call_id") if isinstance(doc.get("tool_call_id"), str) else None,
        "key": doc.get("effect_key"),
        "status": doc.get("status"),
        "state": effect_state(doc, lease.utcnow()),
        "attempts": doc.get("attempts", 0),
        "replayed": False,  # proven or not by ``mark_replayed``, as the web inspector proves it
        "duration_ms": doc.get("duration_ms"),
        "error": (doc.get("error") or {}).get("type") if isinstance(doc.get("error"), dict) else doc.get("error"),
    }


def mark_replayed(operations: list[dict[str, Any]], shown: list[dict[str, Any]]) -> None:
    """Mark the effects of ``operations`` (``operation_tree``) that the web inspector's ``shown`` operations
    (``ThreadViews.thread``) prove replayed, matched by path, node occurrence and effect key.

    Args:
        operations: the CLI's operation tree, marked in place.
        shown: the views' operation tree of the same thread.
    """
    proven = {
        (op["path"], node["node"], e["effect_key"])
        for op in shown for node in op["nodes"] for e in node["effects"] if e["replayed"]
    }
    for op in operations:
        for node in op["nodes"]:
            for effect in node["effects"]:
                effect["replayed"] = (op["path"], node["node"], effect["key"]) in proven


def render_inspect(report: dict[str, Any], out: TextIO) -> None:
    """The thread's state and why it stopped, its runs, its namespaces and its operation tree (stored text
    escaped), as its page says them."""
    report = escaped(report)
    out.write(f"thread {report['thread_id']}\n")
    if report.get("state"):
        out.write(f"\nstate {report['state']}\n")
        _render_due(report.get("tasks") or [], out)
        _render_stopped(report.get("stopped") or {}, out)
    if report.get("more_open"):
        shown = plans.OPEN_SHOWN
        out.write(f"  (more than {shown} entries failed or never finished: why it stopped is read from the latest "
                  f"{shown}; `journal {shlex.quote(report['thread_id'])}` lists them all)\n")
    _render_runs(report.get("runs") or [], out)
    out.write("\ncheckpoints\n")
    _render_namespaces(report["namespaces"], out)
    out.write("\noperations\n")
    _render_operations(report["operations"], out)


def _render_operations(operations: list[dict[str, Any]], out: TextIO) -> None:
    """The operation tree: paths, node visits, and one line per effect."""
    if not operations:
        out.write("  (no journaled effects)\n")
        return
    tree: dict[str, Any] = {}
    effects = [e for op in operations for node in op["nodes"] for e in node["effects"]]
    widths = {field: max(len(str(e[field])) for e in effects) for field in ("kind", "name", "state")}
    for op in operations:
        segments = op["path"].split("/")
        branch = tree
        for i in range(0, len(segments), 2):
            branch = branch.setdefault("/".join(segments[i : i + 2]), {})
        for node in op["nodes"]:
            branch[f"{node['name']} ({node['visit']})"] = [_effect_line(e, widths) for e in node["effects"]]
    [(root, children)] = tree.items() if len(tree) == 1 else [("", tree)]
    out.write(f"  {root}\n")
    _render_branch(children, "  ", out)


def _render_namespaces(namespaces: list[dict[str, Any]], out: TextIO) -> None:
    """One line per namespace: its checkpoints, occurrences and latest step."""
    width = max([len(n["namespace"]) for n in namespaces] + [9])
    for ns in namespaces:
        out.write(
            f"  {ns['namespace']:<{width}}  {ns['checkpoints']:>3} checkpoints, {ns['occurrences']} occurrence(s)"
            f"  latest step {ns['latest_step']}\n"
        )


def _task(node: Any, call: Any) -> str:
    """A task as a person reads it: its node, and the tool call a ``Send`` handed it (name and id)."""
    return f"{node}{_call(call)}"


def _call(call: Any) -> str:
    """`` (name id)`` of a tool call (``{"name", "id"}``, or its id alone), or nothing."""
    if isinstance(call, dict):
        return f" ({call['name']} {call['id']})"
    return f" (tool call {call})" if call else ""


def _render_due(tasks: list[dict[str, Any]], out: TextIO) -> None:
    """What the latest root checkpoint has yet to run (a ``Send`` by its node and tool call)."""
    due = [_task(t["name"] or "Send", t["tool_call"]) for t in tasks if t["status"] in ("due", "interrupted")]
    if due:
        out.write(f"  due        {', '.join(due)}\n")


def _render_stopped(stopped: dict[str, Any], out: TextIO) -> None:
    """Why the thread stopped (``views.stops.why_stopped``), one line each, as its page says it; the commands that
    settle an outcome unknown on lines of their own, to copy."""
    crashed = stopped.get("crashed_run")
    if crashed:
        out.write(f"  crashed    the run of {crashed['owner']} on {crashed['host']} pid {crashed['pid']} (started "
                  f"{crashed['started_at']}) never released its lock: its process died\n")
    for e in stopped.get("errors", []):
        when = e["at"] or "-"
        where = f"at {when}, attempt {e['attempts']}" if e["source"] == "journal" else f"in the step begun {when}"
        at = (
            f"{e['path']}{_call(e.get('tool_call'))}" if e["source"] != "journal"
            else f"{e['path']} {_task(e['node'], e.get('tool_call'))} {e['kind']} {e['name']}"
        )
        out.write(f"  error      {at}: {e['type'] or 'error'} {e['message'] or ''} ({where})\n")
    for i in stopped.get("interrupts", []):
        asked = i["question"] if i.get("question") is not None else i["value"]["summary"]
        out.write(f"  interrupt  {i['path']}{_call(i.get('tool_call'))}: {asked}\n")
    for u in stopped.get("unknown", []):
        out.write(
            f"  unknown    {u['kind']} {u['name']}: idempotency key {u['idempotency_key']}; settle it with one of\n"
        )
        for command in u.get("commands", []):
            out.write(f"               {command}\n")


def _render_runs(runs: list[dict[str, Any]], out: TextIO) -> None:
    """One line per run: its process, when it ran, how it ended, what it executed and replayed."""
    if not runs:
        return
    inferred = " (inferred from the processes that claimed effects: these runs took no lock)"
    out.write("\nruns" + (inferred if runs[0]["inferred"] else "") + "\n")
    for run in runs:
        ended = run["ended_at"] or "now"
        mark = "  ✕" if run["ended"] in ("crashed", "lock lost") else ""
        out.write(f"  run {run['n']}  pid {run['pid']} on {run['host']}  {run['started_at']} to {ended}  "
                  f"{run['ended']}{mark}  executed {run['executed']}, replayed {run['replayed']}\n")


def _render_branch(branch: dict[str, Any] | list[str], prefix: str, out: TextIO) -> None:
    items = list(branch.items()) if isinstance(branch, dict) else [(line, None) for line in branch]  # as they ran
    for i, (label, children) in enumerate(items):
        last = i == len(items) - 1
        out.write(f"{prefix}{'└─' if last else '├─'} {label}\n")
        if children:
            _render_branch(children, prefix + ("   " if last else "│  "), out)


def _effect_line(effect: dict[str, Any], widths: dict[str, int]) -> str:
    """One effect's row, its columns as wide as the thread's widest kind, name and state."""
    duration = f"{effect['duration_ms']:.0f} ms" if isinstance(effect["duration_ms"], (int, float)) else "-"
    replay = "  replayed" if effect["replayed"] else ""
    call = f"  tool call {effect['tool_call_id']}" if effect.get("tool_call_id") else ""
    # any other status was edited by hand
    odd = f"  status {effect['status']}" if effect["status"] not in ("started", "completed", "failed") else ""
    error = f"  {effect['error']}" if effect["error"] else ""
    return (
        f"{effect['kind']:<{widths['kind']}} {effect['name']:<{widths['name']}} {effect['state']:<{widths['state']}}"
        f" attempts {effect['attempts']}"
        f"  {duration:>7}{replay}{call}{odd}{error}"
    )
