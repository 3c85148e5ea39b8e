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
- a history that did not end on an unknown outcome ends with the notes of the fault-free run of its plan (each of
  its lives: a reused thread id's, a copy's; a fork's with those of the fault-free run's fork), and with its hostile
  state (values.py) as given, NaN the same as NaN;
- a node given back an outcome with a hostile value got the value its effect returned;
- a run raises only when the fault fires (once), and never without one;
- a copy (``copy_thread``, copies.py) inherits the source's executions made before it: a value it replays came from
  one of those, they count in its slots' runs, and what it runs again runs under its own key (``one_key``);
- a golden database of an older format with a run in flight is refused, unchanged; any other is upgraded
  (``upgrade``, storage_history.py); its old code's executions open the ledger, so an effect in flight across the
  upgrade keeps its key (``one_key``);
- where LangGraph's ``@task`` shares the journal's semantics, they agree: the fault-free run of the plan with every
  effect a plain ``@task`` over ``InMemorySaver`` ends with the notes the journaled one ends with, its fork's too
  (``same_as_task``; where they differ, docs/guarantees.md says so: execution counts after a fault, which
  ``runs_once`` judges).
- every entry an effect ran under stores the label of its visit (``journal/labels.py``) numbered in the order the
  ledger saw that node's visits run: its own level's rank is the visit, every level above a first visit (a stage
  loops at one level only), whichever process claimed it, after crashes and resumes alike (a thread's lives, not
  its forks' or its copies', whose visits the thread's history numbers on; an entry an older format's code wrote
  stores none).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from . import values
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
GUARANTEES = (
    "own_value", "one_key", "runs_once", "known_outcome", "final_state", "runs_succeed", "upgrade", "same_as_task", "labels",
)


def problems(
    plan: Plan,
    outcome: Outcome,
    records: list[dict[str, Any]],
    reference_notes: list[str],
    fork_notes: list[str] | None = None,
    task: Any = None,
) -> dict[str, list[str]]:
    """What the history did that breaks each guarantee of ``GUARANTEES``, in words (only those broken).

    ``reference_notes`` and ``fork_notes``: the fault-free run's final notes, and its fork's (``history.Reference``);
    ``task``: the ``@task`` oracle's ``Reference`` (``history.task_reference``), None when not run."""
    executed: dict[Slot, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        if record["kind"] == "executed":
            executed[slot_of(record)].append(record)
    inherited = inherited_executions(outcome, records)
    got = [r for r in records if r["kind"] == "got"]
    final = []
    for life in outcome.lives if outcome.finished else ():
        expected = fork_notes if life.forked else reference_notes
        if expected is not None and not life.edit_astray and normalized(life.values.get("notes", [])) != expected:
            final.append(f"final notes {normalized(life.values.get('notes', []))} != fault-free {expected}")
    if outcome.finished and plan.values is not None:
        final.extend(states(plan, outcome))
    found = {
        "own_value": own_values(got, executed, inherited),
        "one_key": keys(executed),
        "runs_once": counts(plan, outcome, executed, inherited),
        "known_outcome": unknowns(outcome, executed, {slot_of(r) for r in got}),
        "final_state": final,
        "runs_succeed": runs(plan, outcome),
        "upgrade": outcome.upgrade,
        "same_as_task": same_as_task(reference_notes, fork_notes, task),
        "labels": labels(plan, outcome, executed),
    }
    return {name: found[name] for name in GUARANTEES if found[name]}


def same_as_task(reference_notes: list[str], fork_notes: list[str] | None, task: Any) -> list[str]:
    """Where the ``@task`` oracle's fault-free run ends elsewhere than the journaled one (its fork included)."""
    if task is None or (task.notes, task.fork_notes) == (reference_notes, fork_notes):
        return []
    return [f"@task ends with {task.notes} (fork {task.fork_notes}) != journaled {reference_notes} (fork {fork_notes})"]


def inherited_executions(outcome: Outcome, records: list[dict[str, Any]]) -> dict[Slot, list[dict[str, Any]]]:
    """The executions each slot of a copy's life inherits: its source's, made before the copy."""
    found: dict[Slot, list[dict[str, Any]]] = defaultdict(list)
    for copy_life, (source_life, at) in outcome.copies.items():
        for record in records[:at]:
            if record["kind"] == "executed" and record["life"] == source_life:
                found[(copy_life, *slot_of(record)[1:])].append(record)
    return found


def own_values(
    got: list[dict[str, Any]], executed: dict[Slot, list[dict[str, Any]]], inherited: dict[Slot, list[dict[str, Any]]]
) -> list[str]:
    found = []
    for record in got:
        parts = value_parts(str(record["value"]))
        slot = slot_of(record)
        tokens = {e["token"] for e in executed.get(slot, []) + inherited.get(slot, [])}
        where = f"{record['node']}{'' if record['item'] is None else [record['item']]} visit {record['visit']} effect {record['idx']} (life {record['life']})"
        if parts is None or parts[0] != expected_name(record):
            found.append(f"{where} got back {record['value']!r}: not its effect's value")
        elif parts[1] != record["visit"]:
            found.append(f"{where} got back visit {parts[1]}'s outcome {record['value']!r}")
        elif parts[2] not in tokens:
            found.append(f"{where} got back {record['value']!r}, which no execution of its own produced")
        elif record.get("load_ok") is False:
            found.append(f"{where} got back {record['value']!r} with a hostile value that is not the one its effect returned")
    return sorted(set(found))


def states(plan: Plan, outcome: Outcome) -> list[str]:
    """Each life's final hostile state, against the one its first input gave (``same``: NaN is NaN)."""
    given = values.build(plan.values.state)
    return [
        f"life {n}'s final state holds {str(life.values.get('load'))[:80]!r}, not the {plan.values.state.kind} it was given"
        for n, life in enumerate(outcome.lives, 1)
        if not values.same(life.values.get("load"), given)
    ]


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


def counts(
    plan: Plan, outcome: Outcome, executed: dict[Slot, list[dict[str, Any]]], inherited: dict[Slot, list[dict[str, Any]]]
) -> list[str]:
    found = []
    may_repeat = outcome.fault_fired not in ("", "raise")  # a lost command or a SIGKILL: in-flight work may re-run
    for slot, own in executed.items():
        runs = inherited.get(slot, []) + own
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


def labels(plan: Plan, outcome: Outcome, executed: dict[Slot, list[dict[str, Any]]]) -> list[str]:
    found = []
    for slot, runs in executed.items():
        stored = outcome.labels.get(slot[0])
        if stored is None:
            continue  # a fork's or a copy's life, or a journal not kept (a child's of test_history_kills)
        key = runs[0]["key"]
        label = stored.get(key)
        if label is None and plan.golden:
            continue  # written by an older format's code, before labels were stored
        texts = [*label["path"].split("/")[3::2], label["occurrence"]] if isinstance(label, dict) else []
        ranks = [int(t.split("+")[0].split(".")[0]) for t in texts]
        if key not in stored:
            found.append(f"{slot} ran as visit {runs[0]['visit']} under {key}, which no entry of the thread stores")
        elif ranks != [runs[0]["visit"], *[1] * (len(ranks) - 1)] or not ranks:
            found.append(f"{slot} ran as visit {runs[0]['visit']}, its entry stores the label {label}")
    return sorted(found)
