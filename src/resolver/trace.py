"""What a running graph tells about its tasks that a node's own config no longer shows.

Inside a node, ``get_config()`` describes only the innermost task: its
``metadata`` (``langgraph_step``, ``langgraph_path``) is overwritten at every
nesting level. Three facts about *enclosing* tasks are needed for stable identities:

* the step of an enclosing task within its graph run (``langgraph_step``);
* whether an enclosing task came from ``Send``, and its PUSH index
  (``langgraph_path == ("__pregel_push", index, False)``);
* which retry attempt of an enclosing task started each of its subgraph runs:
  LangGraph's per-task subgraph counter is not reset between attempts, so the
  first subgraph run of attempt 2 of a function node that runs two subgraphs is
  numbered 2, not 0.

``TaskTrace`` records them, keyed by thread and raw task namespace, from one of two sources:

* the platform checkpointer: a compiled child's run reads its first checkpoint
  with the config of the task that runs it, which still tells all three
  (``note_child_run``, from ``MongoDBCheckpointer.observe_child_runs``). One
  trace serves every run of a platform, bounded to the most recent tasks;
* callbacks, for a scope bound around a graph on any saver (``durable_scope``):
  LangChain's configure hook puts the scope's trace on every callback manager
  LangGraph configures for the run, and each task start (a chain run named
  after the node, tagged ``graph:step:<langgraph_step>``) is recorded
  (``on_chain_start``).

Example::

    with durable_scope(resolver) as scope:     # records task starts in scope.trace (scope.py)
        graph.invoke(inputs, config)
    scope.trace.send_index("t1", "worker:T1")   # its Send index, or None for an edge-triggered task
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from .._langgraph import NS_SEP, PULL, PUSH, TaskCall, child_run_start, task_call
from .._lru import LRU

__all__ = ["TaskFacts", "TaskTrace", "is_pull", "send_index_of"]


@dataclass(frozen=True)
class TaskFacts:
    """A task's step within its graph run, its ``Send`` index (None when an edge triggered it), whether an
    edge triggered it (a PULL task), and the functional-API task call it is (None for a node's task)."""

    step: int
    send_index: int | None
    pulled: bool
    call: TaskCall | None = None


@dataclass
class _TaskRecord:
    step: int
    send_index: int | None
    pull: bool
    call: TaskCall | None
    attempts: int = 0  # starts seen (callbacks)
    attempt_of_run: dict[int, int] = field(default_factory=dict)  # subgraph counter -> attempt that started it


class TaskTrace(BaseCallbackHandler):
    """Facts about the tasks of graph runs, keyed by thread id and the task's raw checkpoint namespace.

    Args:
        capacity: how many tasks it remembers, the least recently used forgotten first (None: all, for the
            trace of one run).
    """

    run_inline = True  # called in the emitting thread/task, also by async callback managers

    def __init__(self, capacity: int | None = None) -> None:
        self._lock = threading.Lock()
        self._tasks: LRU[tuple[str, str], _TaskRecord] = LRU(capacity)

    def note_child_run(self, thread_id: str, config: Any) -> None:
        """A checkpoint read of ``thread_id`` with ``config``: record the task that starts a child run with it.

        A task resumed in a later run (after an interrupt or a crash) numbers its subgraph runs from 0 again, one
        after the other, so each run it starts overwrites what the earlier run recorded under that number before
        its position is asked.
        """
        start = child_run_start(config)
        if start is None:
            return
        with self._lock:
            record = self._record(thread_id, start.task_ns, start.step, start.path)
            record.attempt_of_run[start.counter] = start.attempt

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
        thread_id = str(metadata.get("thread_id", ""))
        parent_ns, counter = _enclosing_task(task_ns)
        with self._lock:
            self._record(thread_id, task_ns, step, metadata.get("langgraph_path")).attempts += 1
            parent = self._tasks.get((thread_id, parent_ns)) if parent_ns else None
            if parent is not None and counter not in parent.attempt_of_run:
                parent.attempt_of_run[counter] = parent.attempts

    def _record(self, thread_id: str, task_ns: str, step: int, path: Any) -> _TaskRecord:
        key = (thread_id, task_ns)
        record = self._tasks.use(key)
        if record is None:
            record = self._tasks.put(key, _TaskRecord(step, send_index_of(path), is_pull(path), task_call(path)))
        return record

    def task(self, thread_id: str, task_ns: str) -> TaskFacts | None:
        """What was recorded of the task with this raw namespace: its step, Send index and trigger; None when
        it was not."""
        with self._lock:
            record = self._tasks.use((thread_id, task_ns))
            if record is None:
                return None
            return TaskFacts(record.step, record.send_index, record.pull, record.call)

    def run_attempt(self, thread_id: str, task_ns: str, counter: int) -> int | None:
        """The attempt of the task that started its subgraph run numbered ``counter``; None when that run's start
        was not recorded."""
        with self._lock:
            record = self._tasks.get((thread_id, task_ns))
            return record.attempt_of_run.get(counter) if record else None

    def subgraph_run(self, thread_id: str, task_ns: str, counter: int) -> int | None:
        """Position, within its retry attempt, of the task's subgraph run numbered ``counter``.

        None when that run's start was not recorded.
        """
        with self._lock:
            record = self._tasks.get((thread_id, task_ns))
            attempt = record.attempt_of_run.get(counter) if record else None
            if record is None or attempt is None:
                return None
            return counter - min(c for c, a in record.attempt_of_run.items() if a == attempt)


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
