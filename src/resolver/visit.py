"""A node visit's position, made from what LangGraph tells of the task: no query, no counter.

A position names the visit by LangGraph's own identity of the work, so a later visit is a new position by
construction, whichever process resumes and whatever failed before:

- a root-level task is keyed by the root checkpoint it was prepared from (an edge-triggered task: one per node and
  checkpoint; an edit of the latest checkpoint at an ``interrupt()`` continues the edited one, ``origin_of``), or
  by its task id (the functional API's tasks, which LangGraph derives from that checkpoint too);
- a task inside a compiled child's run by its step there, ``s<N>`` (a retried or resumed child meets the same
  steps, and so its recorded effects);
- a ``Send`` by its group (the step) and LangGraph's PUSH index, ``<group>.<index>``;
- the ``p``-th compiled-graph run of one function-node task within its attempt by ``+p``
(the grammar: ``visit_keys.py``).

The path is the fixed root ``agent/1`` followed by ``name/key`` for each compiled child the node runs in, the
occurrence the node's own key::

    path        agent/1/case_investigation/1f0c5a1e-…/policy_analysis/s1
    node        review_policy
    occurrence  s1

Every key beneath the root carries a root checkpoint id, a UUID LangGraph minted when it created the checkpoint:
a thread id reused after a delete, another database or a ``copy_thread`` target never meets it again. The readable
ordinals (``agent/1/case_investigation/1/policy_analysis/1``) are labels, stored with the entries
(``journal/labels.py``); replay never depends on them.
"""

from __future__ import annotations

from ..storage.visit_keys import ROOT_PATH, send_key, step_key, with_run
from .namespace import ResolvedNamespace, SendOrigin
from .position import NodePosition

__all__ = ["ROOT_PATH", "visit_position"]


def _key(task_key: str, step: int | None, send: SendOrigin | None, run: int = 0) -> str:
    if send is not None:
        key = send_key(send.group, send.index)
    elif step is not None:
        key = step_key(step)
    else:
        key = task_key
    return with_run(key, run)


def visit_position(
    thread_id: str,
    resolved: ResolvedNamespace,
    *,
    root_key: str | None = None,
    new: bool = False,
    continued: bool = False,
    unconfirmed: bool = False,
) -> NodePosition:
    """The position of the visit ``resolved`` describes (see the module docstring).

    Args:
        thread_id: the thread.
        resolved: the running node's boundaries and keys (``running.resolve_task``).
        root_key: the root checkpoint the visit's root-level task was prepared from or continues, written on its
            entries so a sweep that prunes that checkpoint finds them.
        new: no run but this one can have met the visit (the journal then reads none of its entries).
        continued: the visit continues an edited occurrence (see ``NodePosition``).
        unconfirmed: its root checkpoint was not known stored when a sync effect on the event loop located it.

    Returns:
        The ``NodePosition``.
    """
    path = ROOT_PATH
    for boundary in resolved.boundaries:
        path = f"{path}/{boundary.name}/{_key(boundary.task_key, boundary.step, boundary.send, boundary.subgraph_run)}"
    occurrence = _key(resolved.node_task_key, resolved.node_step, resolved.node_send)
    return NodePosition(
        thread_id,
        path,
        resolved.node_name,
        occurrence,
        new=new,
        continued=continued,
        root_key=root_key,
        unconfirmed=unconfirmed,
    )
