"""Why a thread stopped, from stored documents alone: the error LangGraph saved as a failed task's pending write
and the journal's failed entries, the question of an ``interrupt()``, the outcomes unknown (their idempotency key,
and the commands that settle them), and the run lock a crashed process left held.

LangGraph saves a task's error as the write ``__error__`` (the exception's ``repr``) of the checkpoint the task
ran from, once per graph level: the root's names the root-level task, the deepest (the longest namespace under
``<node>:<task_id>``) the node that raised. An ``interrupt()`` is saved the same way as ``__interrupt__``.
``stop_writes_plan`` reads those writes of the latest root checkpoint and its nested namespaces, values
included; ``why_stopped`` shapes them. Every task is named as the graph names it: a ``Send`` by the node it was
sent to and, sent to a ``ToolNode``, its tool call's name and id (``states.checkpoint_tasks_of``); every text is
scrubbed of the thread's credential values unless ``--with-outcomes``.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .._langgraph import ERROR, INTERRUPT, NS_END, NS_SEP, sent_index, task_node
from ..journal.redaction import credential_values, redact, scrub
from ..storage.plans import lease
from ..storage.plans.requests import Find, Plan, ask
from ..storage.schema import CollectionNames
from .effects import mapping, text
from .states import lease_live
from .values import shown

#: What is read of an error or interrupt write: where, who, and its serialized value (one chunk).
STOP_WRITE_PROJECTION = {
    "_id": 0, "checkpoint_ns": 1, "checkpoint_id": 1, "task_id": 1, "task_path": 1, "channel": 1, "type": 1, "data": 1,
    "n": 1,
}
#: The most error and interrupt writes read of one thread's latest step, every level included.
MAX_STOP_WRITES = 50
#: Characters of an error's message shown.
MESSAGE_CHARS = 2000
#: An exception's ``repr``: its type, and its arguments in parentheses.
_REPR = re.compile(r"^([A-Za-z_][\w.]*)\((.*)\)$", re.DOTALL)
#: Where an error's message says which commands settle it (``EffectOutcomeUnknownError``): the page shows them
#: apart, each in a block a person copies.
_SHELL = re.compile(r";?\s*from a shell \(with --uri and --db of this database\):.*$", re.DOTALL)


def stop_writes_plan(
    names: CollectionNames, thread_id: str, latest_id: Any, root_writes: list[Mapping[str, Any]]
) -> Plan[list[dict[str, Any]]]:
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
    stopping = [
        w for w in root_writes if w.get("checkpoint_id") == latest_id and w.get("channel") in (ERROR, INTERRUPT)
    ]
    if not stopping or not isinstance(latest_id, str):
        return []
    levels: list[dict[str, Any]] = [{"checkpoint_ns": "", "checkpoint_id": latest_id}]
    for task_id in sorted({w["task_id"] for w in stopping if isinstance(w.get("task_id"), str)}):
        # the task's namespace, whatever its node's name (a Send's is not in its path): "<node>:<task id>", then "|"
        pattern = f"^[^{re.escape(NS_SEP)}]*{re.escape(NS_END + task_id)}($|{re.escape(NS_SEP)})"
        levels.append({"checkpoint_ns": {"$regex": pattern}})
    query = {"thread_id": thread_id, "channel": {"$in": [ERROR, INTERRUPT]}, "chunk": 0, "$or": levels}
    found = yield from ask(Find(names.writes, query, STOP_WRITE_PROJECTION, limit=MAX_STOP_WRITES))
    return found


def _exception(message: str) -> tuple[str | None, str]:
    """An exception's ``repr`` as LangGraph saved it, read back as its type and message."""
    match = _REPR.match(message)
    if match is None:
        return None, message
    try:
        args: tuple[Any, ...] = ast.literal_eval(match[2] + ",") if match[2] else ()
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return match[1], match[2]
    return match[1], str(args[0]) if len(args) == 1 else ", ".join(map(str, args))


class Namer:
    """Names the task that wrote a write, as the graph names it: a pulled task by its node, a ``Send`` by the node
    it was sent to (from the latest checkpoint's tasks, or from the journal's entries of that visit) and its tool
    call, a task of a nested graph by its namespace.

    Args:
        tasks: the latest root checkpoint's tasks (``states.checkpoint_tasks_of``).
        sent: ``{(root checkpoint id, Send index): node}`` from the journal's entries.
    """

    def __init__(self, tasks: Iterable[Mapping[str, Any]], sent: Mapping[tuple[str, int], str] | None = None) -> None:
        self.by_task_id = {t["task_id"]: t for t in tasks if t.get("task_id")}
        self.sent = sent or {}

    def sent_to(self, checkpoint_id: Any) -> list[str]:
        """The nodes the journal saw the ``Send`` packets of a root checkpoint run (its entries' ``<id>.<index>``)."""
        return [node for (of, _), node in sorted(self.sent.items()) if of == checkpoint_id]

    def task(self, write: Mapping[str, Any]) -> tuple[str, Mapping[str, str] | None]:
        """``(node, tool call or None)`` of the task that wrote ``write``."""
        known = self.by_task_id.get(write.get("task_id"))
        if known is not None and known.get("name"):
            return known["name"], known.get("tool_call")
        node = task_node(write.get("task_path"))
        if not node.startswith("~"):
            return node, None
        index = sent_index(write.get("task_path"))
        checkpoint_id: Any = write.get("checkpoint_id")  # any stored value: one not a string names no node
        return self.sent.get((checkpoint_id, index), "Send") if index is not None else "task", None


def _path(namespace: Any, node: str) -> str:
    """The nodes from the root down to ``node``, ``/``-separated (a namespace's tasks by name)."""
    return "/".join([part.split(NS_END)[0] for part in (text(namespace) or "").split(NS_SEP) if part] + [node])


def _deepest(writes: Iterable[Mapping[str, Any]], channel: str) -> list[Mapping[str, Any]]:
    """The writes of ``channel`` at the deepest level each root-level task reached (the node that raised)."""
    found = [w for w in writes if w.get("channel") == channel]
    deepest: dict[str, Mapping[str, Any]] = {}
    for write in sorted(found, key=lambda w: len(text(w.get("checkpoint_ns")) or "")):
        namespace = text(write.get("checkpoint_ns")) or ""
        top = namespace.split(NS_SEP)[0].split(NS_END)[-1] if namespace else str(write.get("task_id"))
        deepest[top] = write
    return list(deepest.values())


def why_stopped(
    state: str, writes: Sequence[Mapping[str, Any]], effects: list[Mapping[str, Any]], lock: Mapping[str, Any] | None,
    decode: Callable[[Mapping[str, Any]], Any], namer: Namer, *, secrets: frozenset[str] | None, step_at: Any = None,
    settle: Callable[[str], list[str]] = lambda position: [],
) -> dict[str, Any]:
    """What stopped a thread, for its page, its JSON and ``inspect``.

    Args:
        state: the thread's state (``states.THREAD_STATES``).
        writes: ``stop_writes_plan``'s documents.
        effects: the thread's effects as the views show them (``effects.effect_view``).
        lock: its run lock document, if any.
        decode: a write document's value (raises when it cannot be read).
        namer: names the task of a write (``Namer``).
        secrets: the thread's credential values, scrubbed from every text shown; None shows them whole
            (``--with-outcomes``).
        step_at: when the latest root step began: the ``at`` of LangGraph's errors, which are saved with no time
            of their own (a journal entry's is when it failed; ``attempts`` is the journal's alone).
        settle: the command lines that resolve and discard the effect at a position.

    Returns:
        ``{"state", "errors": [{"source", "node", "tool_call", "path", "type", "message", "at", "attempts", ...}],
        "interrupts": [{"node", "tool_call", "path", "question", "value"}], "unknown": [{"position", "kind",
        "name", "idempotency_key", "commands"}], "crashed_run": {"owner", "host", "pid", "started_at",
        "lease_until"} or None}``.
    """
    errors = [{**_graph_error(w, decode, namer, secrets), "at": step_at} for w in _deepest(writes, ERROR)]
    errors += [
        {"source": "journal", "node": e.get("node"), "tool_call": e.get("tool_call_id"), "path": e.get("path"),
         "kind": e.get("kind"), "name": e.get("name"), "type": mapping(e.get("error")).get("type"),
         "message": mapping(e.get("error")).get("message"), "commands": [],
         "at": e.get("finished_at") or e.get("updated_at"), "attempts": e.get("attempts")}
        for e in effects if e.get("state") == "failed"
    ]
    interrupts = [_interrupt(w, decode, namer, secrets) for w in _deepest(writes, INTERRUPT)]
    unknown = [
        {"position": e.get("position"), "kind": e.get("kind"), "name": e.get("name"), "node": e.get("node"),
         "tool_call": e.get("tool_call_id"), "idempotency_key": e.get("idempotency_key"),
         "commands": settle(e["position"]) if e.get("position") else []}
        for e in effects if e.get("state") == "outcome unknown"
    ]
    return {
        "state": state, "errors": errors, "interrupts": interrupts, "unknown": unknown, "crashed_run": _crashed(lock),
    }


def _crashed(lock: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The run that died holding the thread's lock, if one did (its lease over, or its process gone)."""
    if lock is None or lock.get("owner") is None or lease_live(lock, lease.utcnow()):
        return None
    return {f: lock.get(k) for f, k in (("owner", "owner"), ("host", "owner_host"), ("pid", "owner_pid"),
                                         ("started_at", "started_at"), ("lease_until", "lease_until"))}


def _cleaned(message: str, secrets: frozenset[str] | None) -> str:
    return message if secrets is None else scrub(message, secrets)


def _graph_error(
    write: Mapping[str, Any], decode: Callable[[Mapping[str, Any]], Any], namer: Namer, secrets: frozenset[str] | None
) -> dict[str, Any]:
    """LangGraph's error write as an error the page shows: the node that raised, its exception's type and message
    (the commands it names apart)."""
    node, call = namer.task(write)
    try:
        saved = decode(write)
    except Exception as error:
        kind = None
        message = f"the error cannot be read here ({type(error).__name__}): encrypted, or written by another serde"
    else:
        kind, message = _exception(saved if isinstance(saved, str) else repr(saved))
        message = _cleaned(message[: 4 * MESSAGE_CHARS], secrets)[:MESSAGE_CHARS]
    return {"source": "langgraph", "node": node, "tool_call": call, "path": _path(write.get("checkpoint_ns"), node),
            "type": kind, "message": _SHELL.sub("", message), "commands": [], "attempts": None}


def _interrupt(
    write: Mapping[str, Any], decode: Callable[[Mapping[str, Any]], Any], namer: Namer, secrets: frozenset[str] | None
) -> dict[str, Any]:
    """An interrupt write as the page shows it: who asks, the question as text when it is text, and its value."""
    node, call = namer.task(write)
    try:
        value = decode(write)
    except Exception as error:
        value = f"the question cannot be read here ({type(error).__name__}): encrypted, or written by another serde"
    asked = [getattr(v, "value", v) for v in (value if isinstance(value, (list, tuple)) else [value])]
    question = next((a for a in asked if isinstance(a, str)), None)
    return {
        "node": node, "tool_call": call, "path": _path(write.get("checkpoint_ns"), node),
        "question": _cleaned(question, secrets) if question is not None else None,
        "value": _shown(asked[0] if len(asked) == 1 else asked, secrets),
    }


def _shown(value: Any, secrets: frozenset[str] | None) -> dict[str, Any]:
    """``values.shown`` of a value: whole (``--with-outcomes``), else redacted by key and scrubbed of ``secrets``
    and its own credential values."""
    if secrets is None:
        return shown(value)
    return shown(redact(value), secrets | credential_values(value))


def shell_word(text: str) -> str:
    """``text`` as one word of a shell command a person reads and copies: in double quotes when nothing in it is
    special there (a position's single quotes then read as written), else quoted as ``shlex.quote`` does."""
    if re.fullmatch(r"[\w@%+=:,./-]+", text):
        return text
    return f'"{text}"' if not set(text) & set('"$`\\!') else shlex.quote(text)


def settle_commands(db_name: str) -> Callable[[str], list[str]]:
    """The command lines that settle an outcome unknown at a position of database ``db_name``: ``resolve`` with its
    outcome as JSON, or ``discard`` (``--uri`` as the reader's shell has it)."""
    db = shell_word(db_name)

    def lines(position: str) -> list[str]:
        quoted = shell_word(position)
        return [
            f"langgraph-durable-mongodb --db {db} resolve {quoted} '<what it returned, as JSON>'",
            f"langgraph-durable-mongodb --db {db} discard {quoted}",
        ]

    return lines

