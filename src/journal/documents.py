"""The documents of the activity journal, built for people reading them with any MongoDB tool.

One *entry* document per effect position (``chunk: 0``)::

    {thread_id, path, node, occurrence, effect_key, chunk: 0,
     label?: {path, occurrence},                 # the visit as people read it: agent/1/case_investigation/1/...
     kind, name, status: "started" | "completed" | "failed", attempts, replays?,
     idempotency_key, tool_call_id?, at_most_once,
     input: {digest, preview},
     owner, fence, lease_until?, heartbeat_at?,  # the claim: who runs it, its token, until when
     not_run?,                                   # true: freed by its owner before the effect started
     unknown_since?,                             # at_most_once, its outcome found unknown: counted once
     owner_host, owner_pid, owner_process?,      # the claiming process (owner_process: Linux only)
     created_at, started_at, updated_at, finished_at?, duration_ms?, visited_at,
     outcome?: {type, data, digest, preview, chunks?},  # serialized with the serde (encryption applies)
     error?: {type, module, message, terminal, issued?},
     expire_at?}                                 # the thread's TTL

An outcome larger than ``chunk_bytes`` keeps its first part in the entry and
the rest in *chunk* documents ``{..., effect_key: "<key>#<owner>", chunk: i,
data}``: named by the writer's claim, so a worker whose lease expired can never
overwrite the chunks of the one that took its place. ``outcome.digest`` is
the sha256 of the serialized outcome (type and bytes), checked on replay.

``fence`` is the claim's token: 1 for the first claim, incremented by every
take-over (and by a person's ``resolve``). Renewals and the record match it,
so a worker whose claim was taken over can neither renew nor record.

Every visit of a position is one upsert (``visit_update``): it inserts the
entry if the position is free and counts the visit in ``replays``; the visit
that runs the effect takes its count back when it records (``uncount_visit``),
so ``replays`` counts the visits that did not run it, and is absent on an entry
never replayed. The unique index on the position (plus ``chunk``) makes two
racing upserts insert one entry; it starts with ``thread_id`` like every index.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from .._bson import assemble_values, value_documents
from ..resolver.position import NodePosition
from ..storage.liveness import identity
from ..storage.schema import POSITION_FIELDS
from .attempt import CallSignature
from .position import EffectPosition

#: Characters of an error message kept.
MESSAGE_CHARS = 4000
_NO_PREVIEW = object()


@dataclass(frozen=True)
class EffectCall:
    """What a wrapper is about to run: recorded with its outcome.

    ``input`` is digested (to notice a changed input on replay); ``preview``
    (``input`` by default) is rendered, redacted, for people. A call issued for
    a tool call of a journaled LLM response names its ``tool_call_id``, which
    becomes its effect key.
    """

    kind: str
    name: str
    input: Any = None
    preview: Any = field(default=_NO_PREVIEW, compare=False)
    tool_call_id: str | None = None
    at_most_once: bool = False

    @property
    def preview_source(self) -> Any:
        return self.input if self.preview is _NO_PREVIEW else self.preview

    @property
    def effect_key(self) -> str | None:
        return None if self.tool_call_id is None else f"tool_call:{self.tool_call_id}"


def position_fields(pos: EffectPosition) -> dict[str, Any]:
    return {f: getattr(pos, f) for f in POSITION_FIELDS}


def entry_filter(pos: EffectPosition, **conditions: Any) -> dict[str, Any]:
    """Matches the position's entry document (and ``conditions``: the fence)."""
    return {**position_fields(pos), "chunk": 0, **conditions}


def input_key_upsert(typed: tuple[str, bytes]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Filter and update that store the input-digest key (serialized, so encrypted) unless one is stored:
    ``{_id: "journal_input_digest_key", type, data}`` in the metadata collection."""
    return {"_id": "journal_input_digest_key"}, {"$setOnInsert": {"type": typed[0], "data": typed[1]}}


def node_entries_filter(node: NodePosition) -> dict[str, Any]:
    """Matches the entry documents of every effect journaled under one node occurrence."""
    return {
        "thread_id": node.thread_id, "path": node.path, "node": node.node, "occurrence": node.occurrence, "chunk": 0
    }


def call_signatures(docs: Sequence[Mapping[str, Any]]) -> dict[str, CallSignature]:
    """The call signatures of the node's top-level ordinal entries (keys ``1``, ``2``, ...), by effect key."""
    return {
        doc["effect_key"]: CallSignature(doc.get("kind"), doc.get("name"), (doc.get("input") or {}).get("digest"))
        for doc in docs
        if isinstance(doc.get("effect_key"), str) and doc["effect_key"].isdigit()
    }


def chunk_key(pos: EffectPosition, owner: str) -> dict[str, Any]:
    return {**position_fields(pos), "effect_key": f"{pos.effect_key}#{owner}"}


def claim_fields(
    call: EffectCall, pos: EffectPosition, *, owner: str, now: datetime, lease_until: datetime, input: Mapping[str, str]
) -> dict[str, Any]:
    """What every claim of a position sets: the first one, and each take-over."""
    fields: dict[str, Any] = {
        "kind": call.kind,
        "name": call.name,
        "status": "started",
        "idempotency_key": pos.idempotency_key,
        "at_most_once": call.at_most_once,
        "input": dict(input),
        "owner": owner,
        **identity(),
        "lease_until": lease_until,
        "started_at": now,
        "updated_at": now,
    }
    if call.tool_call_id is not None:
        fields["tool_call_id"] = call.tool_call_id
    return fields


def new_entry(pos: EffectPosition, claim: Mapping[str, Any], expiry: Mapping[str, Any]) -> dict[str, Any]:
    return {
        **entry_filter(pos), **claim, "attempts": 1, "fence": 1, "created_at": claim["started_at"], **root_key(pos),
        **label(pos), **expiry,
    }


def label(pos: EffectPosition) -> dict[str, Any]:
    """``{"label": {"path", "occurrence"}}``: the visit's readable path, as people read it in any MongoDB tool
    (``journal/labels.py``), when known. Replay never reads it."""
    return {"label": {"path": pos.label[0], "occurrence": pos.label[1]}} if pos.label is not None else {}


def root_key(pos: EffectPosition) -> dict[str, Any]:
    """``{"root_key": ...}``, the key of the root-level occurrence the position is under, when known."""
    return {"root_key": pos.root_key} if pos.root_key is not None else {}


def takeover_fence(pos: EffectPosition, entry: Mapping[str, Any]) -> dict[str, Any]:
    """Matches the entry only in the state a take-over was decided on: the same claim token and status,
    and for a started entry the same lease (a renewal in between, on a clock that still saw it live,
    defeats the take-over)."""
    fence = entry_filter(pos, fence=entry["fence"], status=entry["status"])
    if entry["status"] == "started":
        fence["lease_until"] = entry["lease_until"]
    return fence


def held_fence(pos: EffectPosition, fence: int) -> dict[str, Any]:
    """Matches the entry while the claim with token ``fence`` still holds it (the record's fence)."""
    return entry_filter(pos, fence=fence, status="started")


def live_fence(pos: EffectPosition, fence: int, now: datetime) -> dict[str, Any]:
    """``held_fence`` whose lease has not expired yet (the renewal's fence)."""
    return {**held_fence(pos, fence), "lease_until": {"$gt": now}}


def unknown_mark(pos: EffectPosition, entry: Mapping[str, Any], now: datetime) -> tuple[dict[str, Any], dict[str, Any]]:
    """Filter and update that mark an at_most_once entry found with its outcome unknown (``unknown_since``): only
    an unmarked one, under the claim it was found under, so that exactly one of the runs that meet it counts it
    among the outcomes awaiting a person."""
    fence = cast(int, entry.get("fence"))  # an entry found sound (entry_problem): its fence is an int
    marked = {**held_fence(pos, fence), "unknown_since": {"$exists": False}}
    return marked, {"$set": {"unknown_since": now}}


def unknown_unmark(pos: EffectPosition) -> tuple[dict[str, Any], dict[str, Any]]:
    """Filter and update that take a person's decision's count off a marked entry (``unknown_mark``), once."""
    return {**entry_filter(pos), "unknown_since": {"$exists": True}}, {"$unset": {"unknown_since": ""}}


def first_record(
    pos: EffectPosition, claim: Mapping[str, Any], expiry: Mapping[str, Any], ended: Mapping[str, Any]
) -> dict[str, Any]:
    """The upsert that writes an unclaimed effect's entry once it ended (``ended``: ``completed_update`` or
    ``failed_update``), if the position is still free: an exclusive run's at-least-once effect costs this one
    command. It has no lease and no ``replays``: nothing else can meet the position while the run holds its
    thread, and a replay from the node's entries as read sends nothing."""
    entry = {**new_entry(pos, claim, expiry), **ended["$set"]}
    for field_name in ended.get("$unset", {}):
        entry.pop(field_name, None)
    position = entry_filter(pos)
    return {"$setOnInsert": {k: v for k, v in entry.items() if k not in position}}


def visit_update(pos: EffectPosition, entry: Mapping[str, Any], *, now: datetime) -> dict[str, Any]:
    """A visit of the position, as one upsert: inserts ``entry`` if the position is free; either way counts
    the visit in ``replays`` and sets ``visited_at``."""
    position = entry_filter(pos)
    return {
        "$setOnInsert": {k: v for k, v in entry.items() if k not in position},
        "$inc": {"replays": 1},
        "$set": {"visited_at": now},
    }


#: Matches an entry whose only counted visit is the recording one (below 1 only if written before visits were counted).
ONLY_VISIT = {"replays": {"$lte": 1}}


def uncount_visit(update: Mapping[str, Any], *, alone: bool) -> dict[str, Any]:
    """``update``, also taking back the count of the visit that ran the effect; ``alone`` (the filter has
    ``ONLY_VISIT``) removes ``replays`` instead, so an entry never replayed has none."""
    if alone:
        return {**update, "$unset": {**update.get("$unset", {}), "replays": ""}}
    return {**update, "$inc": {**update.get("$inc", {}), "replays": -1}}


def takeover_update(claim: Mapping[str, Any], *, orphaned: bool) -> dict[str, Any]:
    """Claims the position again. ``orphaned``: the entry is ``started`` by an owner that died or let go
    before recording, so that owner's visit count is taken back here (it ran the effect)."""
    unset = dict.fromkeys(
        ("outcome", "error", "finished_at", "duration_ms", "heartbeat_at", "owner_process", "not_run"), ""
    )
    inc = {"attempts": 1, "fence": 1, "replays": -1} if orphaned else {"attempts": 1, "fence": 1}
    return {"$set": dict(claim), "$inc": inc, "$unset": {k: v for k, v in unset.items() if k not in claim}}


def released_update(now: datetime, *, not_run: bool = False) -> dict[str, Any]:
    """Frees the position with its outcome unknown: left ``started``, for a take-over (or a person) to settle.
    ``not_run``: its owner knows the effect never started (``not_run: true``), so a take-over runs it even when
    it is at_most_once."""
    fields: dict[str, Any] = {"lease_until": now, "updated_at": now}
    if not_run:
        fields["not_run"] = True
    return {"$set": fields}


def renewal_update(*, now: datetime, lease_until: datetime) -> dict[str, Any]:
    """A heartbeat: the owner, still running the effect, pushes its lease forward."""
    return {"$set": {"lease_until": lease_until, "heartbeat_at": now}}


def outcome_documents(
    pos: EffectPosition, owner: str, typed: tuple[str, bytes], preview: str, chunk_bytes: int, expiry: Mapping[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The entry's ``outcome`` field, and the chunk documents of a large outcome."""
    docs = value_documents(chunk_key(pos, owner), typed, chunk_bytes)
    head = docs[0]
    outcome = {"type": head["type"], "data": head["data"], "digest": outcome_digest(typed), "preview": preview}
    if "n" in head:
        outcome["chunks"] = head["n"]
    return outcome, [{**d, **root_key(pos), **expiry} for d in docs[1:]]


def outcome_digest(typed: tuple[str, bytes]) -> str:
    """``sha256:<hex>`` of a serialized outcome's type and bytes: a replay checks the stored bytes against it."""
    type_, data = typed
    return "sha256:" + hashlib.sha256(type_.encode() + b"\0" + bytes(data)).hexdigest()


def completed_update(outcome: Mapping[str, Any], *, now: datetime, duration_ms: int) -> dict[str, Any]:
    return {
        "$set": {
            "status": "completed",
            "outcome": dict(outcome),
            "finished_at": now,
            "updated_at": now,
            "duration_ms": duration_ms,
        },
        "$unset": {"error": "", "lease_until": ""},
    }


def error_record(exc: BaseException, *, terminal: bool, message: str, issued: int | None = None) -> dict[str, Any]:
    """The entry's ``error``; ``message`` is the text stored for people (the journal scrubs it first); ``issued``:
    the ordinals the node attempt had handed out when the effect failed (an entry at a higher one was started
    after the failure: the node handled it)."""
    error: dict[str, Any] = {
        "type": type(exc).__qualname__,
        "module": type(exc).__module__,
        "message": message[:MESSAGE_CHARS],
        "terminal": terminal,
    }
    if issued is not None:
        error["issued"] = issued
    return error


def failed_update(error: Mapping[str, Any], *, now: datetime, duration_ms: int) -> dict[str, Any]:
    return {
        "$set": {
            "status": "failed", "error": dict(error), "finished_at": now, "updated_at": now, "duration_ms": duration_ms
        },
        "$unset": {"outcome": "", "lease_until": ""},
    }


def outcome_typed(entry: Mapping[str, Any], chunks: Sequence[Mapping[str, Any]]) -> tuple[str, bytes] | None:
    """The serialized outcome of a completed entry, joined from its chunks (None if one is missing)."""
    outcome = entry["outcome"]
    head = {"chunk": 0, "type": outcome["type"], "data": outcome["data"], "n": outcome.get("chunks", 1)}
    return assemble_values([head, *chunks], ()).get(())


_STATUSES = ("started", "completed", "failed")


def _kinds(value: Any, *kinds: type) -> bool:
    return isinstance(value, kinds) and not isinstance(value, bool)


def entry_problem(entry: Any) -> str | None:
    """What makes ``entry`` one the journal never writes (edited by hand or damaged), or None if it is sound."""
    if not isinstance(entry, Mapping):
        return f"the entry is a {type(entry).__name__}, not a document"
    status = entry.get("status")
    if status not in _STATUSES:
        return f"its status is {status!r}, not one of {', '.join(_STATUSES)}"
    return _claim_problem(entry) or _input_problem(entry) or _status_problem(entry, status)


def _claim_problem(entry: Mapping[str, Any]) -> str | None:
    """What is wrong with the fields every claim writes: its effect, owner and counters."""
    for name in ("kind", "name", "owner"):
        if not _kinds(entry.get(name), str):
            return f"its {name} is {entry.get(name)!r}, not a string"
    for name, always in (("attempts", False), ("fence", True), ("replays", False)):
        if (always or name in entry) and not _kinds(entry.get(name), int):
            return f"its {name} is {entry.get(name)!r}, not an integer"
    return None


def _input_problem(entry: Mapping[str, Any]) -> str | None:
    recorded_input = entry.get("input", {})
    if not isinstance(recorded_input, Mapping) or not _kinds(recorded_input.get("digest", ""), str):
        return f"its input is {recorded_input!r}, not a document with a string digest"
    return None


def _status_problem(entry: Mapping[str, Any], status: str) -> str | None:
    """What is wrong with the field ``status`` requires: a started entry's lease, a completed one's outcome
    document, a failed one's error document."""
    if status == "started":
        lease_until = entry.get("lease_until")
        if not isinstance(lease_until, datetime):
            return f"it is started but its lease_until is {lease_until!r}, not a date"
        return None
    name = "outcome" if status == "completed" else "error"
    document = entry.get(name)
    if not isinstance(document, Mapping):
        return f"it is {status} but its {name} is {document!r}, not a document"
    return _outcome_problem(document) if status == "completed" else _error_problem(document)


def _outcome_problem(outcome: Mapping[str, Any]) -> str | None:
    if not _kinds(outcome.get("type"), str) or not isinstance(outcome.get("data"), bytes):
        return "it is completed but its outcome has no string type and bytes data"
    if not _kinds(outcome.get("chunks", 1), int) or outcome.get("chunks", 1) < 1:
        return f"its outcome.chunks is {outcome.get('chunks')!r}, not a positive integer"
    if not _kinds(outcome.get("digest", ""), str):
        return f"its outcome.digest is {outcome.get('digest')!r}, not a string"
    return None


def _error_problem(error: Mapping[str, Any]) -> str | None:
    texts = all(_kinds(error.get(k, ""), str) for k in ("type", "module", "message"))
    if not texts or not isinstance(error.get("terminal", False), bool):
        return "its error does not have a string type, module and message and a boolean terminal"
    return None
