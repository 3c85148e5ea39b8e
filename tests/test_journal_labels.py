"""The labels people read: a thread's visits numbered among its entries, in the order they ran.

Entries are keyed by their visit (``resolver/visit.py``); ``journal.labels.labelled`` turns the keys into the
ordinals of the seed's paths when entries are read. Replay never reads them; these tests read them only.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from langgraph_durable_mongodb.journal.labels import labelled

START = datetime(2026, 1, 1)


def cp(n: int) -> str:
    """A checkpoint-id-shaped key (LangGraph's are UUIDs)."""
    return str(uuid.UUID(int=n))


def entry(path: str, node: str, occurrence: str, at: int, root: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"path": path, "node": node, "occurrence": occurrence, "root_key": root or cp(at),
            "created_at": START + timedelta(seconds=at), **extra}


def shown(docs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(d["path"], d["node"], d["occurrence"]) for d in labelled(docs)]


def test_a_loop_at_the_root_numbers_its_visits_in_the_order_they_ran() -> None:
    # keys are checkpoint ids: their order as text is not the order they ran, the claims' times are
    docs = [entry("agent/1", "act", cp(900), 1), entry("agent/1", "act", cp(5), 2), entry("agent/1", "act", cp(70), 3)]
    assert shown(docs) == [("agent/1", "act", "1"), ("agent/1", "act", "2"), ("agent/1", "act", "3")]


def test_one_visit_s_effects_share_its_label_and_the_stored_key_is_kept() -> None:
    docs = [entry("agent/1", "act", cp(9), 1, effect_key="1"), entry("agent/1", "act", cp(9), 2, effect_key="2")]
    out = labelled(docs)
    assert [(d["occurrence"], d["effect_key"]) for d in out] == [("1", "1"), ("1", "2")]
    assert out[0]["visit"] == {"path": "agent/1", "occurrence": cp(9)}
    assert docs[0]["occurrence"] == cp(9)  # the documents given are not changed


def test_the_seed_s_path_and_a_loop_inside_a_child_numbered_by_step_as_numbers() -> None:
    """Steps order a child's visits whatever the clocks of the processes that claimed them said."""
    root = cp(1)
    child = f"agent/1/case_investigation/{root}/policy_analysis/s2"
    docs = [entry(child, "review_policy", f"s{step}", at, root) for at, step in ((3, 9), (1, 10), (2, 11))]
    assert shown(docs) == [
        ("agent/1/case_investigation/1/policy_analysis/1", "review_policy", "1"),
        ("agent/1/case_investigation/1/policy_analysis/1", "review_policy", "2"),  # s10 after s9
        ("agent/1/case_investigation/1/policy_analysis/1", "review_policy", "3"),
    ]


def test_a_second_visit_of_a_child_is_its_second_occurrence() -> None:
    first, second = cp(1), cp(2)
    docs = [entry(f"agent/1/child/{first}", "inner", "s1", 1, first), entry(f"agent/1/child/{second}", "inner", "s1", 2, second)]
    assert shown(docs) == [("agent/1/child/1", "inner", "1"), ("agent/1/child/2", "inner", "1")]


def test_send_groups_are_counted_in_their_own_sequence_and_keep_their_index() -> None:
    g1, g2 = cp(1), cp(2)
    docs = [
        entry("agent/1", "worker", f"{g1}.0", 1, g1),
        entry("agent/1", "worker", f"{g1}.2", 2, g1),
        entry("agent/1", "worker", cp(3), 3),  # an edge-triggered visit of the same node: its own sequence
        entry("agent/1", "worker", f"{g2}.1", 4, g2),
    ]
    assert shown(docs) == [
        ("agent/1", "worker", "1.0"),
        ("agent/1", "worker", "1.2"),
        ("agent/1", "worker", "1"),
        ("agent/1", "worker", "2.1"),
    ]


def test_a_function_node_s_subgraph_runs_keep_their_run_and_share_the_node_s_occurrence() -> None:
    root = cp(1)
    docs = [
        entry("agent/1", "caller", root, 1, root),
        entry(f"agent/1/caller/{root}", "a_leaf", "s1", 2, root),
        entry(f"agent/1/caller/{root}+1", "b_leaf", "s1", 3, root),
    ]
    assert shown(docs) == [("agent/1", "caller", "1"), ("agent/1/caller/1", "a_leaf", "1"), ("agent/1/caller/1+1", "b_leaf", "1")]


def test_an_entry_whose_position_is_not_a_visit_s_keeps_what_is_stored() -> None:
    explicit = {"path": "agent/1", "node": "work", "occurrence": "crashed", "created_at": START}
    no_root = {"path": "agent/1", "node": "work", "occurrence": cp(1), "created_at": START}
    assert labelled([explicit, no_root]) == [explicit, no_root]


def test_labels_number_the_visits_the_journal_holds() -> None:
    docs = [entry("agent/1", "act", cp(n), n) for n in (1, 2, 3)]
    assert shown(docs[1:]) == [("agent/1", "act", "1"), ("agent/1", "act", "2")]  # the first visit's entries gone


def test_task_calls_are_numbered_by_their_call_index_beneath_their_caller() -> None:
    """A ``@task`` called from a node: the caller is a level of the path, each call a ``c<N>`` occurrence, numbered by
    its index whatever the order their entries were claimed in."""
    root = cp(1)
    docs = [entry(f"agent/1/bill/{root}", "pay", f"c{n}", at, root) for at, n in ((1, 10), (2, 2), (3, 9))]
    assert shown(docs) == [("agent/1/bill/1", "pay", "3"), ("agent/1/bill/1", "pay", "1"), ("agent/1/bill/1", "pay", "2")]


def test_checkpoint_ids_that_begin_like_a_step_or_a_call_rank_by_when_they_ran() -> None:
    """Ids are UUIDs: one may begin with ``s`` or ``c`` (hex ``c``), and is still ranked by its claim time."""
    early, late = "c" + cp(7)[1:], "5" + cp(3)[1:]
    docs = [entry("agent/1", "act", late, 2, late), entry("agent/1", "act", early, 1, early)]
    assert shown(docs) == [("agent/1", "act", "2"), ("agent/1", "act", "1")]
