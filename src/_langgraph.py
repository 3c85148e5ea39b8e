"""The LangGraph internals this library relies on, in one place.

They are not LangGraph's public API, so a LangGraph release may change them:
``tests/test_langgraph_internals.py`` checks every one against the installed
LangGraph, so such a release breaks this module's test, loudly, and nothing
else needs reading.

- The checkpoint namespace format: segments ``name:task_id`` joined by ``|``
  (``NS_SEP``, ``NS_END``).
- A task's ``langgraph_path`` starts with ``__pregel_pull`` for an edge-triggered
  task and ``__pregel_push`` for a ``Send`` (``PULL``, ``PUSH``).
- A compiled child's run starts when its ``PregelLoop`` reads its namespace's latest
  checkpoint, with the config of the task that runs it: its ``metadata`` still
  describes that task (``langgraph_checkpoint_ns``, ``langgraph_step``,
  ``langgraph_path``), its ``checkpoint_ns`` is the task's namespace followed by
  the task's subgraph counter when not 0, and its runtime holds the task's attempt
  (``child_run_start``). A child compiled with ``checkpointer=False`` reads
  nothing; one compiled with its own saver reads and saves with the saver its
  parent lends it (``Pregel._resolve_checkpointer``).
- Agent Server (langgraph-api) marks the metadata of every run it starts with its version
  (``langgraph_api_version``), which every node of the run inherits (``agent_server_run``).
- Inside a node, the config's ``configurable`` holds the checkpointer
  (``CONFIG_KEY_CHECKPOINTER``; Agent Server's adapter keeps ours as ``_inner``),
  the task's write callable
  (``CONFIG_KEY_SEND``, one per prepared task), the runtime with its retry
  attempt (``CONFIG_KEY_RUNTIME``), the checkpoint ids of the namespaces above
  (``CONFIG_KEY_CHECKPOINT_MAP``) and the run's durability (``CONFIG_KEY_DURABILITY``).
- A pending write's ``task_path`` is ``task_path_str`` of the task's path: ``~__pregel_pull, NAME`` for an
  edge-triggered task; ``update_state(..., as_node=X)`` saves X's writes on the edited checkpoint under the
  task id LangGraph prepared for X there, with another path (``~__interrupt__, 0000000000``; none before
  LangGraph 1.2.x passed it) (``nodes_completed_by_edit``).
- A root run's first checkpoint read is made by ``PregelLoop.__enter__``/``__aenter__``, called from
  ``Pregel.stream``/``astream`` of the graph being run, whose frame holds it as ``self`` (``running_graph``).
- A functional-API task call (``@task`` called from a node or an ``@entrypoint``) runs as a PUSH task in the
  caller's namespace (``caller:T|task:U``), its ``langgraph_path`` ``(PUSH, <the caller's path>, <the caller's
  call counter>, True)`` while it runs, the caller's own path ending in the ``Call`` itself when the caller is a
  call too; its step is the caller's. The counter restarts with every run of the caller's task and goes on
  across its ``RetryPolicy`` attempts (``TaskCall``, ``task_call``).
- The tasks LangGraph prepares from a checkpoint (``prepare_next_tasks``): one per ``Send`` packet of its tasks
  channel (``TASKS``), whose writes store the path ``task_path_str((PUSH, index, False))``, then one per node its
  edges made due (a ``branch:to:<node>`` channel holding a value), stored as ``task_path_str((PULL, node))``. A task
  whose writes hold anything but its error, its interrupt or a resume value has finished (``checkpoint_tasks``,
  ``task_outcome``). ``ToolNode`` is sent one tool call per ``Send``, as ``{"tool_call": {...}, ...}``
  (``create_react_agent``) or ``[{...}]`` (``create_agent``) (``tool_call_of``).
- ``interrupt()`` raises ``GraphInterrupt`` (``NodeInterrupt`` its older form), which an effect that asks records
  as a failure of that type: the question waits for its answer, the node runs again once it has one
  (``interrupt_error``).
- ``JsonPlusSerializer(allowed_msgpack_modules=None)`` constructs only LangGraph's own safe types
  (``SAFE_MSGPACK_TYPES``: built-in values, messages, ``Send``, ``Interrupt``, ...) and gives any other msgpack
  extension back as its stored arguments (``ViewSerializer``).
- Under ``LANGGRAPH_STRICT_MSGPACK=true`` a compiled graph keeps the msgpack allowlist ``compile()`` derived
  from its schemas in ``_serde_allowlist``, which ``Pregel.__init__`` (and so ``copy``) resets
  (``keep_allowlist``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

import ormsgpack
from langgraph._internal._constants import (
    CONFIG_KEY_CHECKPOINT_MAP,
    CONFIG_KEY_CHECKPOINTER,
    CONFIG_KEY_DURABILITY,
    CONFIG_KEY_RUNTIME,
    CONFIG_KEY_SEND,
    ERROR,
    INTERRUPT,
    NS_END,
    NS_SEP,
    PULL,
    PUSH,
    RESUME,
    TASKS,
)
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde import _msgpack as _lg_msgpack
from langgraph.checkpoint.serde.jsonplus import (
    EXT_CONSTRUCTOR_SINGLE_ARG,
    EXT_METHOD_SINGLE_ARG,
    EXT_PYDANTIC_V2,
    JsonPlusSerializer,
    _create_msgpack_ext_hook,
)
from langgraph.constants import START
from langgraph.errors import GraphInterrupt, NodeInterrupt
from langgraph.pregel import Pregel
from langgraph.pregel._algo import Call, task_path_str
from langgraph.types import Durability, Send

__all__ = [
    "AGENT_SERVER_MARK",
    "CONFIG_KEY_CHECKPOINTER",
    "CONFIG_KEY_CHECKPOINT_MAP",
    "CONFIG_KEY_DURABILITY",
    "CONFIG_KEY_RUNTIME",
    "CONFIG_KEY_SEND",
    "DUE_PREFIX",
    "ERROR",
    "INTERRUPT",
    "NS_END",
    "NS_SEP",
    "PULL",
    "PUSH",
    "START",
    "TASKS",
    "CheckpointTask",
    "ChildRunStart",
    "RunningTask",
    "TaskCall",
    "ViewSerializer",
    "agent_server_run",
    "checkpoint_map",
    "checkpoint_of",
    "checkpoint_tasks",
    "child_run_start",
    "interrupt_error",
    "node_attempt",
    "nodes_completed_by_edit",
    "run_checkpointer",
    "run_start_in_child",
    "running_graph",
    "runs_durably_async",
    "sent_index",
    "task_call",
    "task_node",
    "task_outcome",
    "task_writer",
    "tool_call_of",
]


#: The metadata key Agent Server sets on every run it starts (``langgraph_api/stream.py``).
AGENT_SERVER_MARK = "langgraph_api_version"


def agent_server_run(config: Any) -> bool:
    """Whether ``config`` (a node's) belongs to a run Agent Server started: it writes its version in the run's
    metadata, which every task of the run inherits."""
    return isinstance(config, dict) and bool((config.get("metadata") or {}).get(AGENT_SERVER_MARK))


def task_writer(configurable: dict[str, Any]) -> Callable[[Sequence[tuple[str, Any]]], None] | None:
    """The running task's write callable: one object per prepared task, freed with it (None outside a task)."""
    return configurable.get(CONFIG_KEY_SEND)


def node_attempt(configurable: dict[str, Any]) -> int:
    """The running task's attempt: 1, then one more per ``RetryPolicy`` retry."""
    info = getattr(configurable.get(CONFIG_KEY_RUNTIME), "execution_info", None)
    return getattr(info, "node_attempt", 1) or 1


def run_checkpointer(configurable: dict[str, Any]) -> BaseCheckpointSaver[Any] | None:
    """The checkpointer the running graph saves with (LangGraph passes it down to every task).

    Agent Server (langgraph-api) lends a ``langgraph.json`` checkpointer wrapped in an adapter that keeps
    it as ``_inner`` (``langgraph_api/_checkpointer/_adapter.py``): the one wrapped is the one saving.
    """
    saver: BaseCheckpointSaver[Any] | None = configurable.get(CONFIG_KEY_CHECKPOINTER)
    if type(saver).__name__ == "_CustomCheckpointerAdapter":
        inner: BaseCheckpointSaver[Any] = saver._inner  # type: ignore[union-attr]  # langgraph_api's, untyped
        return inner
    return saver


@dataclass(frozen=True)
class ChildRunStart:
    """A compiled child's run starting inside a task: what the task's config tells of that task.

    Attributes:
        task_ns: the namespace of the task that runs the child (``caller:T``).
        counter: the task's subgraph counter of this run (0 for its first, then one more per run, across
            retry attempts).
        step: the task's step within the run of the graph that scheduled it.
        path: the task's ``langgraph_path`` (``PULL``/``PUSH`` tuple).
        attempt: the task's attempt (``node_attempt``).
    """

    task_ns: str
    counter: int
    step: int
    path: Any
    attempt: int


def child_run_start(config: Any) -> ChildRunStart | None:
    """The child run a checkpoint read starts, from the read's config; None for any other read.

    LangGraph's loop reads the latest checkpoint of the namespace it enters with the config of the task that
    runs it (``PregelLoop.__enter__``): the task's metadata, and a ``checkpoint_ns`` that is the task's own, or
    the task's followed by ``|N`` for its N-th subgraph run. A root run's read, ``get_state`` and other reads
    carry no such metadata, and a child compiled with ``checkpointer=True`` reads under a namespace without the
    task id: None for each.
    """
    if not isinstance(config, dict):
        return None
    configurable, metadata = config.get("configurable") or {}, config.get("metadata") or {}
    ns, task_ns = configurable.get("checkpoint_ns"), metadata.get("langgraph_checkpoint_ns")
    step = metadata.get("langgraph_step")
    if not ns or not isinstance(ns, str) or not isinstance(task_ns, str) or not isinstance(step, int):
        return None
    if ns == task_ns:
        counter = 0
    elif ns.startswith(task_ns + NS_SEP) and ns[len(task_ns) + 1:].isdigit():
        counter = int(ns[len(task_ns) + 1:])
    else:
        return None
    return ChildRunStart(task_ns, counter, step, metadata.get("langgraph_path"), node_attempt(configurable))


@dataclass(frozen=True)
class TaskCall:
    """A functional-API task call, from its ``langgraph_path``.

    Attributes:
        caller_path: the ``langgraph_path`` of the task that called it (a call's own ends in its ``Call``).
        index: the caller's call counter when it called: 0 for its first call in a run of its task.
    """

    caller_path: Any
    index: int


def task_call(task_path: Any) -> TaskCall | None:
    """The call a task's ``langgraph_path`` describes, or None for an edge-triggered or ``Send`` task."""
    if (
        isinstance(task_path, tuple)
        and len(task_path) >= 4
        and task_path[0] == PUSH
        and (task_path[-1] is True or isinstance(task_path[-1], Call))
        and type(task_path[2]) is int
    ):
        return TaskCall(task_path[1], task_path[2])
    return None


def trailing_calls(task_path: Any) -> int:
    """How many functional-API task calls end a task's namespace: it, the task that called it, ... (0 for a task
    the graph's loop prepared itself)."""
    calls = 0
    while (call := task_call(task_path)) is not None:
        calls, task_path = calls + 1, call.caller_path
    return calls


def root_run_start(config: Any) -> bool:
    """Whether a checkpoint read is the one a root run starts with: LangGraph's loop reads with its runtime in the
    config (``CONFIG_KEY_RUNTIME``), in the root namespace, outside any task; ``get_state`` reads without it."""
    if not isinstance(config, dict):
        return False
    configurable, metadata = config.get("configurable") or {}, config.get("metadata") or {}
    return (
        CONFIG_KEY_RUNTIME in configurable
        and not configurable.get("checkpoint_ns")
        and not metadata.get("langgraph_checkpoint_ns")
    )


#: The code of the methods a root run's first checkpoint read is made beneath (``running_graph``).
_RUN_CODE = (Pregel.stream.__code__, Pregel.astream.__code__)
#: How many frames above it ``running_graph`` looks: the saver's own, an adapter's (Agent Server), the loop's.
_RUN_DEPTH = 12


def running_graph() -> Pregel[Any, Any, Any, Any] | None:
    """The compiled graph whose run makes the checkpoint read in progress, from the call stack: LangGraph's loop
    reads a root run's latest checkpoint from ``PregelLoop.__enter__``/``__aenter__``, within ``Pregel.stream`` or
    ``astream`` of the graph being run (a subclass's override calls it), whose frame holds the graph as ``self``.
    None when no such frame is within ``_RUN_DEPTH`` frames (a read outside a run)."""
    frame: FrameType | None = sys._getframe(1)
    for _ in range(_RUN_DEPTH):
        if frame is None:
            return None
        if frame.f_code in _RUN_CODE:
            graph = frame.f_locals.get("self")
            return graph if isinstance(graph, Pregel) else None
        frame = frame.f_back
    return None


def run_start_in_child(config: Any) -> str | None:
    """The compiled child's namespace a root run was started at (``invoke`` given a config from a child's
    ``get_state_history`` or ``get_state(subgraphs=True)``), or None.

    LangGraph then reads the root checkpoint the child's config maps, and runs the child again under a new task,
    whose own run reads the root namespace; the run's metadata still holds the namespace the caller gave (LangChain
    copies a config's ``configurable`` into its ``metadata``)."""
    if not root_run_start(config):
        return None
    given = (config.get("metadata") or {}).get("checkpoint_ns")
    return given if isinstance(given, str) and given else None


def keep_allowlist(
    source: Pregel[Any, Any, Any, Any], copied: Pregel[Any, Any, Any, Any]
) -> Pregel[Any, Any, Any, Any]:
    """``copied`` (a copy of ``source``) given back ``source``'s strict msgpack allowlist, which the copy lost:
    without it a run's saver reads the types of the graph's own schemas back as dicts."""
    copied._serde_allowlist = getattr(source, "_serde_allowlist", None)
    return copied


_PULL_PATH = f"~{PULL}, "
#: The channel a ``StateGraph`` writes to make a node due at the next step (``branch:to:<node>``).
DUE_PREFIX = "branch:to:"


@dataclass(frozen=True)
class CheckpointTask:
    """A task LangGraph prepares from a checkpoint: the node it runs, the path its writes are stored under and,
    for a ``Send``, the packet's index and argument.

    Attributes:
        name: the node (None for the ``Send`` packets of a tasks channel that could not be read here).
        path: ``task_path`` as the task's writes store it.
        send: the packet's index in the tasks channel, for a ``Send``.
        arg: the packet's argument, for a ``Send``.
    """

    name: str | None
    path: str
    send: int | None = None
    arg: Any = None


def checkpoint_tasks(channels: Iterable[Any], sends: Sequence[Any] | None) -> list[CheckpointTask]:
    """The tasks LangGraph prepares from a checkpoint holding ``channels`` (their names): one per ``Send`` packet in
    its tasks channel, then one per node its edges made due, then its input (``__start__``).

    Args:
        channels: the names of the channels holding a value in the checkpoint.
        sends: the tasks channel's packets as read (a ``Send``, or its stored arguments ``[node, arg]``); None when
            they could not be read (one unnamed task then stands for them).

    Returns:
        The tasks, in that order.
    """
    names = {c for c in channels if isinstance(c, str)}
    tasks: list[CheckpointTask] = []
    if TASKS in names:
        if sends is None:
            tasks.append(CheckpointTask(None, task_path_str((PUSH, 0, False)), 0))
        for index, packet in enumerate(sends or ()):
            node, arg = _packet(packet)
            tasks.append(CheckpointTask(node, task_path_str((PUSH, index, False)), index, arg))
    pulled = sorted(c[len(DUE_PREFIX):] for c in names if c.startswith(DUE_PREFIX))
    pulled += [START] if START in names else []
    return tasks + [CheckpointTask(node, task_path_str((PULL, node))) for node in pulled]


def _packet(packet: Any) -> tuple[str | None, Any]:
    """A ``Send``'s node and argument, built or as its stored arguments."""
    if isinstance(packet, Send):
        return packet.node, packet.arg
    if isinstance(packet, (list, tuple)) and packet and isinstance(packet[0], str):
        return packet[0], packet[1] if len(packet) > 1 else None
    return None, None


def task_outcome(written: Iterable[Any]) -> str:
    """What a prepared task did, from the channels of its writes: ``failed`` (its error), ``interrupted`` (an
    ``interrupt()`` waits for an answer), ``done`` (it wrote its output), else ``due``."""
    channels = set(written)
    if ERROR in channels:
        return "failed"
    if channels - {INTERRUPT, RESUME}:
        return "done"
    return "interrupted" if INTERRUPT in channels else "due"


#: LangGraph's interrupt signals, as an effect's failure names them (type, module).
_INTERRUPTS = frozenset((kind.__qualname__, kind.__module__) for kind in (GraphInterrupt, NodeInterrupt))


def interrupt_error(kind: Any, module: Any) -> bool:
    """Whether an effect's recorded failure (its error's type and module) is LangGraph's ``interrupt()`` asking."""
    return (kind, module) in _INTERRUPTS


def sent_index(task_path: Any) -> int | None:
    """The index of the ``Send`` packet whose task stored ``task_path`` (``task_path_str((PUSH, index, False))``),
    else None."""
    parts = task_path.split(", ") if isinstance(task_path, str) else []
    return int(parts[1]) if len(parts) == 3 and parts[0] == f"~{PUSH}" and parts[1].isdigit() else None


def tool_call_of(arg: Any) -> tuple[str, str] | None:
    """``(name, id)`` of the tool call a ``Send`` hands ``ToolNode`` (``create_react_agent``'s
    ``{"tool_call": {...}, "state": ...}``, ``create_agent``'s ``[{...}]``, or the tool call itself), else None."""
    if isinstance(arg, (list, tuple)) and len(arg) == 1:
        arg = arg[0]
    call = arg.get("tool_call", arg) if isinstance(arg, Mapping) else None
    if isinstance(call, Mapping) and isinstance(call.get("name"), str) and isinstance(call.get("id"), str):
        return call["name"], call["id"]
    return None


def task_node(task_path: Any) -> str:
    """The node a task ran, from its stored ``task_path``: a pulled task (``~__pregel_pull, <node>``) by its node's
    name, any other by its path as text."""
    path = str(task_path or "")
    return path[len(_PULL_PATH):] if path.startswith(_PULL_PATH) else path


def nodes_completed_by_edit(writes: list[dict[str, Any]]) -> list[str]:
    """The nodes whose edge-triggered task at a checkpoint an ``update_state`` completed, from the checkpoint's
    pending writes (``task_id``, ``channel``, ``task_path`` of each): a task the loop prepared there
    (``~__pregel_pull, NAME``, its interrupt) that also holds writes the edit saved as that node, under the same
    task id and another path (``~__interrupt__, …``, or none from older LangGraph versions)."""
    pulled: dict[str, str] = {}
    edited: set[str] = set()
    for write in writes:
        path = write.get("task_path")
        path = path if isinstance(path, str) else ""
        if path.startswith(_PULL_PATH):
            pulled[write["task_id"]] = path[len(_PULL_PATH):]
        else:
            edited.add(write["task_id"])
    return sorted({pulled[task] for task in edited if task in pulled})


def checkpoint_map(configurable: dict[str, Any]) -> dict[str, Any]:
    """The running task's checkpoint map: the checkpoint of each enclosing graph run it was prepared from, by
    namespace (``""`` the root's)."""
    found = configurable.get(CONFIG_KEY_CHECKPOINT_MAP)
    return found if isinstance(found, dict) else {}


def checkpoint_of(configurable: dict[str, Any], checkpoint_ns: str) -> str | None:
    """The id of the checkpoint of namespace ``checkpoint_ns`` the running task was prepared from (its config's
    checkpoint map names one per enclosing graph run; ``""`` is the root's)."""
    found = (configurable.get(CONFIG_KEY_CHECKPOINT_MAP) or {}).get(checkpoint_ns)
    return found if isinstance(found, str) else None


@dataclass(frozen=True)
class RunningTask:
    """Where the task whose config this is saves: its id (the ``task_id`` of its writes), the namespace of the
    loop running it, and the checkpoint of that namespace it was prepared from."""

    task_id: str
    checkpoint_ns: str
    prepared_from: str


def runs_durably_async(configurable: dict[str, Any]) -> bool:
    """Whether the run stores checkpoints in the background (``durability="async"``, LangGraph's default: a run
    given no durability names none in its config)."""
    durability: Durability = configurable.get(CONFIG_KEY_DURABILITY, "async")
    return durability == "async"


def _in_canonical_order(items: Iterable[Any]) -> Iterator[Any]:
    return iter(sorted(items, key=lambda item: (type(item).__name__, repr(item))))


class _CanonicalSet(set[Any]):
    """A set whose iteration is in a canonical order; LangGraph's serde writes it as the ``builtins.set`` it names."""

    def __iter__(self) -> Iterator[Any]:
        return _in_canonical_order(set.__iter__(self))


class _CanonicalFrozenSet(frozenset[Any]):
    """``_CanonicalSet``'s frozen twin."""

    def __iter__(self) -> Iterator[Any]:
        return _in_canonical_order(frozenset.__iter__(self))


_CanonicalSet.__module__ = _CanonicalFrozenSet.__module__ = "builtins"
_CanonicalSet.__name__, _CanonicalFrozenSet.__name__ = "set", "frozenset"


def canonical_set(value: set[Any] | frozenset[Any]) -> set[Any] | frozenset[Any]:
    """``value`` as a set the serde writes in one order whatever the order it was built in and the process's hash
    seed (by type name, then ``repr``): equal sets give equal bytes, so a metadata filter on a set matches it.

    LangGraph's msgpack encoder writes a set as its class's module and name and ``tuple(value)``; the copy names
    ``builtins.set`` (or ``frozenset``), so it loads back as the plain type.
    """
    return (_CanonicalFrozenSet if isinstance(value, frozenset) else _CanonicalSet)(value)


#: LangGraph's msgpack extensions that name a callable (a constructor, a method, a pydantic model): module, name,
#: arguments (``jsonplus.EXT_CONSTRUCTOR_SINGLE_ARG`` to ``EXT_PYDANTIC_V2``); the others hold plain data.
_NAMING_EXTENSIONS = frozenset(range(EXT_CONSTRUCTOR_SINGLE_ARG, EXT_PYDANTIC_V2 + 1))
_STRICT_HOOK = _create_msgpack_ext_hook(None)


def _named(data: bytes) -> tuple[Any, ...] | None:
    """What a naming extension's payload names (its nested extensions unread), or None when it names nothing."""
    try:
        head = ormsgpack.unpackb(data, ext_hook=lambda code, nested: None, option=ormsgpack.OPT_NON_STR_KEYS)
    except ormsgpack.MsgpackDecodeError:
        return None
    return tuple(head) if isinstance(head, (list, tuple)) and len(head) >= 3 else None


def _shown_extension(code: int, data: bytes) -> Any:
    """A msgpack extension as the views show it: one of LangGraph's safe types as LangGraph builds it, anything
    else as what it names and its stored arguments (``{"stored": "os.mkdir", "with": [...]}``), never called."""
    if code not in _NAMING_EXTENSIONS:
        return _STRICT_HOOK(code, data)
    head = _named(data)
    if head is None:
        return {"stored": f"msgpack extension {code}", "with": None}
    safe = (
        (head[0], head[1], head[3]) in _lg_msgpack.SAFE_MSGPACK_METHODS
        if code == EXT_METHOD_SINGLE_ARG and len(head) > 3
        else (head[0], head[1]) in _lg_msgpack.SAFE_MSGPACK_TYPES
    )
    if safe:
        return _STRICT_HOOK(code, data)
    stored = ormsgpack.unpackb(data, ext_hook=_shown_extension, option=ormsgpack.OPT_NON_STR_KEYS)
    return {"stored": f"{head[0]}.{head[1]}", "with": stored[2]}


class ViewSerializer(JsonPlusSerializer):
    """The serde the views read stored values with, which only shows them: msgpack under LangGraph's strict
    allowlist (its safe types are built; any other extension comes back as what it names and the arguments stored
    for it, never called), JSON as plain JSON (no LangChain reviver), pickle never. What a crafted document names is
    shown, not run."""

    def __init__(self) -> None:
        super().__init__(allowed_msgpack_modules=None, __unpack_ext_hook__=_shown_extension)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        type_, raw = data
        if type_ == "json":
            return json.loads(raw)
        return super().loads_typed(data)
