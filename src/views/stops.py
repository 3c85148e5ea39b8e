"""Why a thread stopped, from stored documents alone: the error LangGraph saved as a failed task's pending write
and the journal's failed entries, the value of an ``interrupt()``, the idempotency keys of outcomes unknown, and
the run lock a crashed process left held.

LangGraph saves a task's error as the write ``__error__`` (the exception's ``repr``) of the checkpoint the task
ran from, once per graph level: the root's names the root-level node, the deepest (the longest namespace under
``<node>:<task_id>``) the node that raised. An ``interrupt()`` is saved the same way as ``__interrupt__``.
``stop_writes_plan`` reads those writes of the latest root checkpoint and its nested namespaces, values
included; ``why_stopped`` shapes them, messages and values redacted as journal previews are unless
``with_outcomes``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from typing import Any

from .._langgraph import ERROR, INTERRUPT, task_node
from ..journal.redaction import redact_text
from ..storage.plans.requests import Find, Plan
from ..storage.schema import CollectionNames
from .values import redacted_values, shown

#: What is read of an error or interrupt write: where, who, and its serialized value (one chunk).
STOP_WRITE_PROJECTION = {
    "_id": 0, "checkpoint_ns": 1, "checkpoint_id": 1, "task_id": 1, "task_path": 1, "channel": 1, "type": 1, "data": 1, "n": 1,
}
#: The most error and interrupt writes read of one thread's latest step, every level included.
MAX_STOP_WRITES = 50
#: Characters of an error's message shown.
MESSAGE_CHARS = 2000
#: An exception's ``repr``: its type, and its arguments in parentheses.
_REPR = re.compile(r"^([A-Za-z_][\w.]*)\((.*)\)$", re.DOTALL)


def stop_writes_plan(names: CollectionNames, thread_id: str, latest_id: str, root_writes: list[Mapping[str, Any]]) -> Plan:
    """The error and interrupt writes of the latest root checkpoint, and those of the namespaces nested under its
    tasks that wrote one (where the node that raised or interrupted ran), values included.

    Args:
        names: the collection names.
        thread_id: the thread (checked by the caller).
        latest_id: the latest root checkpoint's id.
        root_writes: that checkpoint's writes as ``thread_plan`` read them (task ids, paths and channels).

    Returns:
        The write documents (``STOP_WRITE_PROJECTION``), at most ``MAX_STOP_WRITES``; none read when the latest
        checkpoint has no error or interrupt write.
    """
    stopping = [w for w in root_writes if w.get("checkpoint_id") == latest_id and w.get("channel") in (ERROR, INTERRUPT)]
    if not stopping:
        return []
    levels: list[dict[str, Any]] = [{"checkpoint_ns": "", "checkpoint_id": latest_id}]
    for write in stopping:
        under = f"{task_node(write.get('task_path'))}:{write.get('task_id')}"
        levels.append({"checkpoint_ns": {"$gte": under, "$lt": under + "}"}})  # "}" follows "|", the separator
    query = {"thread_id": thread_id, "channel": {"$in": [ERROR, INTERRUPT]}, "chunk": 0, "$or": levels}
    found = yield Find(names.writes, query, STOP_WRITE_PROJECTION, limit=MAX_STOP_WRITES)
    return found


def _exception(text: str) -> tuple[str | None, str]:
    """An exception's ``repr`` as LangGraph saved it, read back as its type and message."""
    match = _REPR.match(text)
    if match is None:
        return None, text
    try:
        args = ast.literal_eval(match[2] + ",") if match[2] else ()
    except (ValueError, SyntaxError):
        return match[1], match[2]
    return match[1], str(args[0]) if len(args) == 1 else ", ".join(map(str, args))


def _path(namespace: str, node: str) -> str:
    """The nodes from the root down to ``node``, ``/``-separated (a namespace's tasks by name)."""
    return "/".join([part.split(":")[0] for part in namespace.split("|") if part] + [node])


def _deepest(writes: list[Mapping[str, Any]], channel: str) -> list[Mapping[str, Any]]:
    """The writes of ``channel`` at the deepest level each root-level task reached (the node that raised)."""
    found = [w for w in writes if w.get("channel") == channel]
    deepest: dict[str, Mapping[str, Any]] = {}
    for write in sorted(found, key=lambda w: len(str(w.get("checkpoint_ns") or ""))):
        namespace = str(write.get("checkpoint_ns") or "")
        top = namespace.split("|")[0] if namespace else f"{task_node(write.get('task_path'))}:{write.get('task_id')}"
        deepest[top] = write
    return list(deepest.values())


def why_stopped(
    state: str, writes: list[Mapping[str, Any]], effects: list[Mapping[str, Any]], lock: Mapping[str, Any] | None,
    decode: Callable[[Mapping[str, Any]], Any], *, with_outcomes: bool, step_at: Any = None,
) -> dict[str, Any]:
    """What stopped a thread, for its page, its JSON and ``inspect``.

    Args:
        state: the thread's state (``states.THREAD_STATES``).
        writes: ``stop_writes_plan``'s documents.
        effects: the thread's effects as the views show them (``state``, ``error``, ``attempts``, ...).
        lock: its run lock document, if any.
        decode: a write document's value (raises when it cannot be read).
        with_outcomes: show messages and values whole (else redacted as journal previews are).
        step_at: when the latest root step began: the ``at`` of LangGraph's errors, which are saved with no time
            of their own (a journal entry's is when it failed; ``attempts`` is the journal's alone).

    Returns:
        ``{"state", "errors": [{"source", "node", "path", "type", "message", "at", "attempts", ...}],
        "interrupts": [{"node", "path", "value"}], "unknown": [{"position", "kind", "name", "idempotency_key"}],
        "crashed_run": {"owner", "host", "pid", "started_at", "lease_until"} or None}``.
    """
    clean = (lambda text: text) if with_outcomes else redact_text
    errors = [{**_graph_error(w, decode, clean), "at": step_at} for w in _deepest(writes, ERROR)]
    errors += [
        {"source": "journal", "node": e.get("node"), "path": e.get("path"), "kind": e.get("kind"), "name": e.get("name"),
         "type": (e.get("error") or {}).get("type"), "message": (e.get("error") or {}).get("message"),
         "at": e.get("finished_at") or e.get("updated_at"), "attempts": e.get("attempts")}
        for e in effects if e.get("state") == "failed"
    ]
    interrupts = [
        {"node": task_node(w.get("task_path")), "path": _path(str(w.get("checkpoint_ns") or ""), task_node(w.get("task_path"))),
         "value": _value(w, decode, with_outcomes)}
        for w in _deepest(writes, INTERRUPT)
    ]
    unknown = [
        {"position": e.get("position"), "kind": e.get("kind"), "name": e.get("name"), "idempotency_key": e.get("idempotency_key")}
        for e in effects if e.get("state") == "outcome unknown"
    ]
    crashed = None
    if state == "crashed" and lock is not None:
        crashed = {f: lock.get(k) for f, k in (("owner", "owner"), ("host", "owner_host"), ("pid", "owner_pid"),
                                               ("started_at", "started_at"), ("lease_until", "lease_until"))}
    return {"state": state, "errors": errors, "interrupts": interrupts, "unknown": unknown, "crashed_run": crashed}


def _graph_error(write: Mapping[str, Any], decode: Callable[[Mapping[str, Any]], Any], clean: Callable[[str], str]) -> dict[str, Any]:
    """LangGraph's error write as an error the page shows: the node that raised, its exception's type and message."""
    node = task_node(write.get("task_path"))
    try:
        saved = decode(write)
    except Exception as error:  # noqa: BLE001 - an encrypted or damaged value: say so, show the rest
        kind, message = None, f"the error cannot be read here ({type(error).__name__}): encrypted, or written by another serde"
    else:
        kind, message = _exception(saved if isinstance(saved, str) else repr(saved))
        message = clean(message)[:MESSAGE_CHARS]
    return {"source": "langgraph", "node": node, "path": _path(str(write.get("checkpoint_ns") or ""), node),
            "type": kind, "message": message, "at": None, "attempts": None}


def _value(write: Mapping[str, Any], decode: Callable[[Mapping[str, Any]], Any], with_outcomes: bool) -> Any:
    """An interrupt write's value, plain (redacted unless ``with_outcomes``), or why it cannot be read."""
    try:
        value = decode(write)
    except Exception as error:  # noqa: BLE001 - as for errors
        return shown(f"the value cannot be read here ({type(error).__name__}): encrypted, or written by another serde")
    return shown(value) if with_outcomes else redacted_values({"value": value})["value"]
