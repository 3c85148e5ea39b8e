"""The keys a visit's position is made of, in one place, and the upgrade of the ordinals of formats 2 and 3 to them.

A position names one visit of a node by LangGraph's identity of the work (``resolver/visit.py``): the path is the
fixed root ``agent/1`` followed by ``name/key`` for each compiled child the node runs in, the occurrence the
node's own key. A key is the root checkpoint a root-level task was prepared from (or its task id), ``s<N>`` for
the task at step ``N`` of a child's run, ``<group>.<index>`` for a ``Send``, ``<key>+<p>`` for a function
node's ``p``-th subgraph run and ``c<N>`` for a functional-API task call, the ``N``-th call its caller made
(the caller is then a level of the path, as a compiled child is). ``journal/labels.py`` reads them back as
ordinals. An effect's idempotency key is a digest of its position (``idempotency_key``), its thread included:
``rekeyed_entry`` gives a copied entry the key of its position on the thread it is copied to.

Storage formats 2 and 3 keyed entries by those ordinals instead (``agent/1/case/2``, occurrence ``1.3``), allocated in
the ordinals collection (``{thread_id, parent_path, name, task_key, ordinal}``, a ``Send`` group under
``name:send``) or, at the root, numbered from a high water and marked with the key they stood for (``root_key``).
``upgrade_plan`` rewrites each such entry to the keys its ordinals stood for, so a run resumed after the upgrade
meets the effects recorded before it. An effect a run of those formats had in flight without an entry (an
at-least-once effect under a run lock runs unclaimed) has no key stored anywhere, and its position changes: the
upgrade waits until no run is in flight (``runs_in_flight_plan``; docs/storage.md says why and how to drain).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, MutableMapping
from typing import Any, cast

from pymongo import UpdateOne

from .plans.requests import DeleteMany, Find, Plan, Upsert, ask
from .schema import POSITION_FIELDS, CollectionNames

__all__ = [
    "CALL_PREFIX", "KEY", "ROOT_PATH", "STEP_PREFIX", "call_key", "idempotency_key", "levels", "rekeyed_entry",
    "runs_in_flight_plan", "send_key", "step_key", "upgrade_plan", "with_run",
]

#: The operation path every position starts with.
ROOT_PATH = "agent/1"
#: A step within a child's run, as a key: ``s3``.
STEP_PREFIX = "s"
#: A functional-API task call, as a key: ``c0`` for its caller's first call.
CALL_PREFIX = "c"
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
#: A key as a position's path or occurrence holds it: its ``base`` (a checkpoint or task id, or a step), the
#: ``Send`` index and the subgraph run when it has them.
KEY = re.compile(rf"^(?P<base>{_UUID}|{STEP_PREFIX}\d+|{CALL_PREFIX}\d+)(?:\.(?P<index>\d+))?(?:\+(?P<run>\d+))?$")
#: Format 2's ordinal text: an ordinal, a ``Send`` group's ``g.i``, a subgraph run's ``+p``.
_ORDINAL = re.compile(r"^(?P<ordinal>\d+)(?:\.(?P<index>\d+))?(?:\+(?P<run>\d+))?$")
#: Format 2 counted a node's ``Send`` groups under this suffix of its name.
_SEND_SEQUENCE = ":send"
#: Entries upgraded per page.
UPGRADE_PAGE = 1000


def step_key(step: int) -> str:
    """The key of a task inside a compiled child's run: its step there."""
    return f"{STEP_PREFIX}{step}"


def call_key(index: int) -> str:
    """The key of a functional-API task call: the caller's call counter when it called."""
    return f"{CALL_PREFIX}{index}"


def send_key(group: str, index: int) -> str:
    """The key of a ``Send``'s task: its group (a root checkpoint, or ``step:N`` inside a child's run) and index."""
    if group.startswith("step:"):
        group = step_key(int(group[len("step:"):]))
    return f"{group}.{index}"


def with_run(key: str, run: int) -> str:
    """``key`` for a function node's ``run``-th subgraph run (the first, 0, has no suffix)."""
    return f"{key}+{run}" if run else key


def idempotency_key(position: tuple[str, ...]) -> str:
    """The idempotency key of an effect at ``position`` (its ``POSITION_FIELDS``: thread, path, node, occurrence,
    effect key): ``ik-`` and 40 hex digits of their SHA-256 digest.

    >>> idempotency_key(("t1", "agent/1", "llm", "1", "1"))[:9]
    'ik-8aa640'
    """
    return "ik-" + hashlib.sha256("\x1f".join(position).encode()).hexdigest()[:40]


def rekeyed_entry(doc: MutableMapping[str, Any]) -> None:
    """Give a journal document copied to another thread (its ``thread_id`` already the target's) the idempotency key
    of its position there, where it holds one (an entry; an outcome's chunks hold none).

    A copied entry replays its outcome on the target, which never calls the provider; an effect that runs again
    there (it failed, its worker died, its outcome was unknown) is the target's own call, and must not reach the
    provider under the key the source's call used. A position that is not all strings (an entry damaged by hand)
    keeps no key: the journal refuses such an entry when it meets it.
    """
    if "idempotency_key" not in doc:
        return
    position = tuple(doc.get(f) for f in POSITION_FIELDS)
    if all(isinstance(part, str) for part in position):
        doc["idempotency_key"] = idempotency_key(cast(tuple[str, ...], position))  # all strings, checked above
    else:
        del doc["idempotency_key"]


def runs_in_flight_plan(names: CollectionNames, shown: int) -> Plan[list[dict[str, Any]]]:
    """The run locks still held (``owner`` set; one ``find``, at most ``shown`` + 1): the runs in flight, of a
    process still running or of one that crashed. A run of formats 3 and older ran an at-least-once effect under its
    lock without a claim: the idempotency key its provider saw is stored nowhere, and the upgrade moves the effect's
    position, so it must not run before those runs are drained.

    Returns:
        The held locks' ``thread_id``, ``owner_host``, ``owner_pid`` and ``lease_until``.
    """
    fields = {"_id": 0, "thread_id": 1, "owner_host": 1, "owner_pid": 1, "lease_until": 1}
    return (yield from ask(Find(names.runs, {"owner": {"$ne": None}}, fields, [("thread_id", 1)], shown + 1)))


def upgrade_plan(names: CollectionNames) -> Plan[int]:
    """Storage format 3 to 4: rewrite every journal document keyed by ordinals (entries and their outcome chunks) to
    the keys the ordinals stood for, page by page in ``_id`` order, then empty the ordinals collection.

    Each rewrite is conditional on the position it read, so two upgraders write each once, and documents a process
    of format 4 writes meanwhile are left alone. A document whose ordinals cannot be read back (an allocation gone)
    keeps its position: it reads as stored, and a resume does not meet it.

    Returns:
        How many documents were rewritten.
    """
    rewritten, after = 0, None
    while True:
        page: dict[str, Any] = {"_id": {"$gt": after}} if after is not None else {}
        docs = yield from ask(Find(names.journal, page, _UPGRADE_FIELDS, [("_id", 1)], UPGRADE_PAGE))
        threads = sorted({d["thread_id"] for d in docs if isinstance(d.get("thread_id"), str)})
        allocations = (
            (yield from ask(Find(names.ordinals, {"thread_id": {"$in": threads}}, _ALLOCATION_FIELDS)))
            if threads
            else []
        )
        table = {
            (a.get("thread_id"), a.get("parent_path"), a.get("name"), a.get("ordinal")): a.get("task_key")
            for a in allocations
        }
        updates = [_rewrite(doc, keyed) for doc in docs if (keyed := _keyed(doc, table)) is not None]
        if updates:
            yield Upsert(names.journal, updates)
            rewritten += len(updates)
        if len(docs) < UPGRADE_PAGE:
            yield DeleteMany(names.ordinals, {})
            return rewritten
        after = docs[-1]["_id"]


_UPGRADE_FIELDS = {"_id": 1, "thread_id": 1, "path": 1, "node": 1, "occurrence": 1, "root_key": 1}
_ALLOCATION_FIELDS = {"_id": 0, "thread_id": 1, "parent_path": 1, "name": 1, "ordinal": 1, "task_key": 1}


def _rewrite(doc: Mapping[str, Any], keyed: tuple[str, str]) -> UpdateOne:
    where = {"_id": doc["_id"], "path": doc["path"], "occurrence": doc["occurrence"]}
    return UpdateOne(where, {"$set": {"path": keyed[0], "occurrence": keyed[1]}})


def levels(doc: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    """``[(name, text), ...]``: each child boundary of a stored position's path, then its node and occurrence; None
    for a position that is not an operation path's (``agent/1`` followed by ``name/text`` pairs)."""
    path, node, occurrence = doc.get("path"), doc.get("node"), doc.get("occurrence")
    if not (isinstance(path, str) and isinstance(node, str) and isinstance(occurrence, str)):
        return None
    if path != ROOT_PATH and not path.startswith(ROOT_PATH + "/"):
        return None
    parts = path[len(ROOT_PATH) + 1:].split("/") if path != ROOT_PATH else []
    if len(parts) % 2:
        return None
    return [*zip(parts[::2], parts[1::2], strict=True), (node, occurrence)]


def _keyed(doc: Mapping[str, Any], table: Mapping[tuple[Any, ...], Any]) -> tuple[str, str] | None:
    """``(path, occurrence)`` of a document keyed by the ordinals of format 3 and older, as format 4 keys it; None
    when it is not keyed by ordinals, or its ordinals cannot be read back."""
    parsed = levels(doc)
    if parsed is None:
        return None
    keys: list[str] = []
    parent = ROOT_PATH
    for depth, (name, text) in enumerate(parsed):
        ordinal = _ORDINAL.match(text)
        if ordinal is None:
            return None
        key = _key(doc, table, parent, name, ordinal, depth)
        if key is None:
            return None
        keys.append(key)
        parent = f"{parent}/{name}/{text}"
    new_path = "/".join([ROOT_PATH, *(f"{name}/{key}" for (name, _), key in zip(parsed[:-1], keys[:-1], strict=True))])
    return new_path, keys[-1]


def _key(
    doc: Mapping[str, Any],
    table: Mapping[tuple[Any, ...], Any],
    parent: str,
    name: str,
    ordinal: re.Match[str],
    depth: int,
) -> str | None:
    """One level's key: what its allocation (or, at the root, the entry's ``root_key``) says the ordinal stood for."""
    send = ordinal["index"] is not None
    stood_for = doc.get("root_key") if depth == 0 else None  # a root-level key: the entry names it
    if not stood_for:
        allocated = name + _SEND_SEQUENCE if send else name
        stood_for = table.get((doc.get("thread_id"), parent, allocated, int(ordinal["ordinal"])))
    if not isinstance(stood_for, str) or not stood_for:
        return None
    if send:
        key = send_key(stood_for, int(ordinal["index"]))
    elif stood_for.startswith("step:"):
        key = step_key(int(stood_for[len("step:"):]))
    else:
        key = stood_for
    return with_run(key, int(ordinal["run"] or 0))
