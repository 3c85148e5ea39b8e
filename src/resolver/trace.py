"""What a running graph tells about its tasks that a node's own config no longer shows.

Inside a node, ``get_config()`` describes only the innermost task: its
``metadata`` (``langgraph_step``, ``langgraph_path``) is overwritten at every
nesting level. Three facts about *enclosing* tasks are needed for stable identities
and are visible only when those tasks start:

* the step of an enclosing task within its graph run (``langgraph_step``);
* whether an enclosing task came from ``Send``, and its PUSH index
  (``langgraph_path == ("__pregel_push", index, False)``);
* which retry attempt of an enclosing task started each of its subgraph runs:
  LangGraph's per-task subgraph counter is not reset between attempts, so the
  first subgraph run of attempt 2 of a function node that runs two subgraphs is
  numbered 2, not 0.

``TaskTrace`` is a LangChain callback handler that records those facts. While a
durable scope is bound, LangChain's configure hook puts a router on every
callback manager LangGraph configures for the run (at any depth, in any thread
or asyncio task), which hands each task start to the trace of its thread's
scope (``scope.py``). A task start is recognised by its run: its
name is the node name and it carries the non-inheritable tag
``graph:step:<langgraph_step>`` LangGraph gives each task's callback manager.

Example::

    with durable_scope(resolver) as scope:     # routes task starts to scope.trace (scope.py)
        graph.invoke(inputs, config)
    scope.trace.send_index("worker:T1")         # its Send index, or None for an edge-triggered task
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from .._langgraph import NS_SEP, PULL, PUSH

__all__ = ["TaskTrace", "is_pull", "send_index_of"]



@dataclass
class _TaskRecord:
    step: int
    send_index: int | None
    pull: bool
    attempts: int = 0
    attempt_of_run: dict[int, int] = field(default_factory=dict)  # subgraph counter -> attempt
    first_run_of_attempt: dict[int, int] = field(default_factory=dict)  # attempt -> lowest counter


class TaskTrace(BaseCallbackHandler):
    """Records task starts of one graph run, keyed by the task's raw checkpoint namespace."""

    run_inline = True  # called in the emitting thread/task, also by async callback managers

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: dict[str, _TaskRecord] = {}

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        metadata = metadata or {}
        task_ns = metadata.get("langgraph_checkpoint_ns")
        step = metadata.get("langgraph_step")
        if (
            not isinstance(task_ns, str)
            or not isinstance(step, int)
            or kwargs.get("name") != metadata.get("langgraph_node")
            or f"graph:step:{step}" not in (tags or ())
        ):
            return
        send_index = send_index_of(metadata.get("langgraph_path"))
        parent_ns, counter = _enclosing_task(task_ns)
        with self._lock:
            record = self._tasks.setdefault(task_ns, _TaskRecord(step, send_index, is_pull(metadata.get("langgraph_path"))))
            record.attempts += 1
            parent = self._tasks.get(parent_ns) if parent_ns else None
            if parent is not None and counter not in parent.attempt_of_run:
                attempt = parent.attempts
                parent.attempt_of_run[counter] = attempt
                lowest = parent.first_run_of_attempt.get(attempt, counter)
                parent.first_run_of_attempt[attempt] = min(lowest, counter)

    def seen(self, task_ns: str) -> bool:
        """Whether the task with this raw namespace started while the trace was installed."""
        return task_ns in self._tasks

    def step(self, task_ns: str) -> int:
        """The task's ``langgraph_step`` (its step within its graph run). The task must have been seen."""
        return self._tasks[task_ns].step

    def send_index(self, task_ns: str) -> int | None:
        """The task's ``Send`` index, or None when an edge triggered it. The task must have been seen."""
        return self._tasks[task_ns].send_index

    def pulled(self, task_ns: str) -> bool:
        """Whether an edge triggered the task (a PULL task). The task must have been seen."""
        return self._tasks[task_ns].pull

    def subgraph_run(self, task_ns: str, counter: int) -> int | None:
        """Position, within its retry attempt, of the task's subgraph run numbered ``counter``.

        None when no task of that run was seen.
        """
        with self._lock:
            record = self._tasks.get(task_ns)
            attempt = record.attempt_of_run.get(counter) if record else None
            if record is None or attempt is None:
                return None
            return counter - record.first_run_of_attempt[attempt]


def send_index_of(task_path: Any) -> int | None:
    """The PUSH index of a ``Send`` task's ``langgraph_path`` ``("__pregel_push", index, False)``, else None.

    Edge-triggered tasks have ``("__pregel_pull", name)``; error-handler and functional-API
    tasks have other, longer PUSH paths and are not ``Send`` tasks.
    """
    if (
        isinstance(task_path, (tuple, list))
        and len(task_path) == 3
        and task_path[0] == PUSH
        and type(task_path[1]) is int
    ):
        return task_path[1]
    return None


def is_pull(task_path: Any) -> bool:
    """Whether a task's ``langgraph_path`` is an edge-triggered task's ``("__pregel_pull", name)``."""
    return isinstance(task_path, (tuple, list)) and len(task_path) >= 1 and task_path[0] == PULL


def _enclosing_task(task_ns: str) -> tuple[str, int]:
    """``'a:1|2|b:3'`` -> ``('a:1', 2)``; a root-level task has no enclosing task (``''``)."""
    head, _, _ = task_ns.rpartition(NS_SEP)
    rest, _, last = head.rpartition(NS_SEP)
    if last.isdigit():
        return rest, int(last)
    return head, 0
