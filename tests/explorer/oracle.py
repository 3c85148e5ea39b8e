"""The oracle: what a history did, judged from the ledger's real executions and the values nodes got back, never
from how positions are stored.

- every value a node got back was produced by an execution of its OWN slot (node, Send item, visit, effect index,
  life of the thread id): its name, its visit number and its token say so;
- one slot, one idempotency key, on every execution; two slots never share a key (a reused thread id included);
- without a fault every slot ran exactly once; a failure in a node (``raise``) re-runs nothing that completed; after
  a failed or lost command or a SIGKILL, a slot in flight may run twice, an ``at_most_once`` one never;
- an ``at_most_once`` effect may end as ``EffectOutcomeUnknownError`` only after a fault, and only if its value never
  reached its node (claimed, then killed before it ran, is such a case: the journal cannot tell, and a person settles
  it safely);
- a history that did not end on an unknown outcome ends with the notes of the fault-free run of its plan;
- a run raises only when the fault fires (once), and never without one;
- where LangGraph's ``@task`` shares the journal's semantics, they agree: the fault-free run of the plan with every
  effect a plain ``@task`` over ``InMemorySaver`` ends with the notes the journaled one ends with (``same_as_task``;
  where they differ, docs/guarantees.md says so: execution counts after a fault, which ``runs_once`` judges).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .graphs import normalized, value_parts
from .history import Outcome
from .plans import Plan

Slot = tuple[int, str, Any, int, int]


def slot_of(record: dict[str, Any]) -> Slot:
    return (record["life"], record["node"], record["item"], record["visit"], record["idx"])


def expected_name(record: dict[str, Any]) -> str:
    node, idx = record["node"], record["idx"]
    return f"{node}_t{idx}" if node.endswith("tools") else f"{node}.e{idx}"


#: The guarantees, in the order a history is judged; each names what breaks it.
GUARANTEES = ("own_value", "one_key", "runs_once", "known_outcome", "final_state", "runs_succeed", "same_as_task")


def problems(
    plan: Plan, outcome: Outcome, records: list[dict[str, Any]], reference_notes: list[str], task_notes: list[str] | None = None
) -> dict[str, list[str]]:
    """What the history did that breaks each guarantee of ``GUARANTEES``, in words (only those broken); ``task_notes``:
    the ``@task`` oracle's final notes (``history.task_reference``), None when not run."""
    executed: dict[Slot, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        if record["kind"] == "executed":
            executed[slot_of(record)].append(record)
    got = [r for r in records if r["kind"] == "got"]
    final = []
    if outcome.finished and normalized(outcome.lives[-1].values.get("notes", [])) != reference_notes:
        final.append(f"final notes {normalized(outcome.lives[-1].values.get('notes', []))} != fault-free {reference_notes}")
    found = {
        "own_value": own_values(got, executed),
        "one_key": keys(executed),
        "runs_once": counts(plan, outcome, executed),
        "known_outcome": unknowns(outcome, executed, {slot_of(r) for r in got}),
        "final_state": final,
        "runs_succeed": runs(plan, outcome),
        "same_as_task": [] if task_notes in (None, reference_notes) else [f"@task ends with {task_notes} != journaled {reference_notes}"],
    }
    return {name: found[name] for name in GUARANTEES if found[name]}


def own_values(got: list[dict[str, Any]], executed: dict[Slot, list[dict[str, Any]]]) -> list[str]:
    found = []
    for record in got:
        parts = value_parts(str(record["value"]))
        slot = slot_of(record)
        tokens = {e["token"] for e in executed.get(slot, [])}
        where = f"{record['node']}{'' if record['item'] is None else [record['item']]} visit {record['visit']} effect {record['idx']} (life {record['life']})"
        if parts is None or parts[0] != expected_name(record):
            found.append(f"{where} got back {record['value']!r}: not its effect's value")
        elif parts[1] != record["visit"]:
            found.append(f"{where} got back visit {parts[1]}'s outcome {record['value']!r}")
        elif parts[2] not in tokens:
            found.append(f"{where} got back {record['value']!r}, which no execution of its own produced")
    return sorted(set(found))


def keys(executed: dict[Slot, list[dict[str, Any]]]) -> list[str]:
    found, owner = [], {}
    for slot, runs in executed.items():
        slot_keys = {r["key"] for r in runs}
        if len(slot_keys) > 1:
            found.append(f"{slot} ran under {len(slot_keys)} idempotency keys")
        for key in slot_keys:
            if owner.setdefault(key, slot) != slot:
                found.append(f"{slot} and {owner[key]} ran under one idempotency key {key}")
    return found


def counts(plan: Plan, outcome: Outcome, executed: dict[Slot, list[dict[str, Any]]]) -> list[str]:
    found = []
    may_repeat = outcome.fault_fired not in ("", "raise")  # a lost command or a SIGKILL: in-flight work may re-run
    for slot, runs in executed.items():
        once = runs[0].get("once")
        allowed = 2 if may_repeat and not once else 1
        if len(runs) > allowed:
            found.append(f"{slot}{' (at_most_once)' if once else ''} ran {len(runs)} times (allowed {allowed})")
    return found


def unknowns(outcome: Outcome, executed: dict[Slot, list[dict[str, Any]]], observed: set[Slot]) -> list[str]:
    found = []
    by_key = {r["key"]: slot for slot, runs in executed.items() for r in runs}
    for life in outcome.lives:
        for error in life.unknown:
            slot = by_key.get(error.idempotency_key)
            if not outcome.fault_fired:
                found.append(f"EffectOutcomeUnknownError without any fault: {error}")
            elif slot is not None and slot in observed:  # claimed and killed before it ran: unknown, and safe
                found.append(f"{slot} returned to its node, then became an unknown outcome: {error}")
    return found


def runs(plan: Plan, outcome: Outcome) -> list[str]:
    errors = [e for life in outcome.lives for e in life.errors]
    if not outcome.fault_fired:
        return [f"a run raised without any fault: {e}" for e in errors]
    if plan.fault.kind == "raise" and errors and not errors[0].startswith("Boom"):
        return [f"the run the fault failed raised {errors[0]}"]
    return [f"a resume after the fault raised {e}" for e in errors[1:]]
