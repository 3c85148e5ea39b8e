"""Static topology of a compiled LangGraph graph: node names per level and compiled children.

Discovery walks a compiled graph once and keeps only what namespace resolution
needs: the node names of every graph level, and which nodes run compiled child
graphs. A node runs a child in one of two ways:

* ``NodeKind.CHILD``: the node *is* a compiled graph (``add_node("x", compiled)``,
  possibly wrapped by ``with_config``). LangGraph runs it exactly once per attempt.
* ``NodeKind.CALLER``: a function (or sequence) node whose code can run compiled
  graphs, any number of times per attempt. LangGraph's own ``PregelNode.subgraphs``
  keeps only the first graph ``find_subgraph_pregel`` meets and skips graphs
  compiled with ``checkpointer=False``; discovery here collects every compiled graph
  reachable from the node's code: closures, globals and attribute chains the code
  names, default arguments, ``functools.partial`` arguments, the instance behind a
  bound method or callable object, containers of graphs, and helper functions of
  application code called from the node (library code is not entered).

The same compiled instance reachable from itself is a cycle: it is recorded as a
``TopologyIssue`` (never recursed into twice) and ``DurableSubgraphResolver.validate``
refuses it, together with children compiled with ``checkpointer=True``,
``checkpointer=False`` or their own saver instance.

Example::

    topology = discover_topology(compiled_root)
    topology.root.nodes["case_investigation"].kind   # NodeKind.CHILD
    [issue.message for issue in topology.issues]     # [] when every child is supported
"""

from __future__ import annotations

import functools
import inspect
import sysconfig
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from types import FunctionType, MappingProxyType, MethodType, ModuleType
from typing import Any, TypeAlias

from langchain_core.runnables import Runnable, RunnableParallel
from langchain_core.runnables.base import RunnableBindingBase
from langchain_core.runnables.utils import get_function_nonlocals
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.pregel import Pregel

from ..errors import InvalidInputError

__all__ = ["GraphTopology", "NodeKind", "NodeTopology", "Topology", "TopologyIssue", "discover_topology"]

_INHERIT_FIX = "compile it with checkpointer=None so it inherits the root's saver"

#: A compiled graph, whatever its state, context, input and output.
_Compiled: TypeAlias = "Pregel[Any, Any, Any, Any]"


class NodeKind(str, Enum):  # noqa: UP042 - public API: as a StrEnum, its members would str() and format() otherwise
    """How a node relates to compiled child graphs."""

    ORDINARY = "ordinary"
    """Runs no compiled graph; may only be the rightmost namespace segment."""
    CHILD = "child"
    """Is a compiled graph; runs it exactly once per attempt."""
    CALLER = "caller"
    """Code that may run compiled graphs any number of times per attempt."""


class GraphTopology:
    """One graph level: its node names and what each node runs.

    Identity matters: a compiled instance used in several places has a single
    ``GraphTopology``, and a cyclic topology contains itself.
    """

    __slots__ = ("name", "nodes")

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: Mapping[str, NodeTopology] = MappingProxyType({})

    def __repr__(self) -> str:
        return f"GraphTopology({self.name!r}, nodes={sorted(self.nodes)!r})"


@dataclass(frozen=True, eq=False)
class NodeTopology:
    """A node of a graph level and the graph levels it can enter."""

    name: str
    kind: NodeKind
    subgraphs: tuple[GraphTopology, ...] = ()


@dataclass(frozen=True)
class TopologyIssue:
    """An unsupported shape, at ``path`` (node names from the root joined by '/')."""

    path: str
    message: str


@dataclass(frozen=True)
class Topology:
    """The discovered root level plus every unsupported shape met on the way."""

    root: GraphTopology
    issues: tuple[TopologyIssue, ...]


def discover_topology(compiled: _Compiled, root_saver: BaseCheckpointSaver[Any] | None = None) -> Topology:
    """Walk ``compiled`` and every compiled graph it can run, each instance once.

    A child compiled with ``root_saver`` itself (the saver the root runs on; ``compiled``'s own by
    default) is as good as one compiled with ``checkpointer=None``: a parent lends its saver to its
    children, and it is the same one.

    Raises ``InvalidInputError`` if ``compiled`` is not a compiled LangGraph graph.
    """
    if not isinstance(compiled, Pregel):
        raise InvalidInputError(
            f"expected a compiled LangGraph graph (Pregel), got {type(compiled).__name__}; "
            "pass the result of StateGraph.compile()"
        )
    saver = root_saver if root_saver is not None else compiled.checkpointer
    discovery = _Discovery(saver if isinstance(saver, BaseCheckpointSaver) else None)
    root = discovery.graph(compiled, ())
    return Topology(root, tuple(discovery.issues))


class _Discovery:
    def __init__(self, root_saver: BaseCheckpointSaver[Any] | None) -> None:
        self.root_saver = root_saver
        self.issues: list[TopologyIssue] = []
        self._done: dict[int, GraphTopology] = {}
        self._open: dict[int, tuple[GraphTopology, tuple[str, ...]]] = {}
        self._keep: list[_Compiled] = []  # keeps ids unique while discovering

    def graph(self, compiled: _Compiled, path: tuple[str, ...]) -> GraphTopology:
        key = id(compiled)
        if key in self._done:
            return self._done[key]
        if key in self._open:
            shell, entered_at = self._open[key]
            self.issues.append(
                TopologyIssue(
                    _join(path),
                    f"child '{_join(path)}' runs graph '{compiled.name}', which already encloses it "
                    f"at '{_join(entered_at) or '<root>'}' (cyclic topology); operation paths would "
                    "have no bound. Compile a separate graph for the inner use or express the "
                    "repetition as a loop edge",
                )
            )
            return shell
        shell = GraphTopology(compiled.name)
        self._keep.append(compiled)
        self._open[key] = (shell, path)
        shell.nodes = MappingProxyType(
            {
                name: self._node(name, node.bound, node.subgraphs, (*path, name))
                for name, node in compiled.nodes.items()
            }
        )
        del self._open[key]
        self._done[key] = shell
        return shell

    def _node(self, name: str, bound: Runnable[Any, Any], declared: Any, path: tuple[str, ...]) -> NodeTopology:
        direct = bound
        while isinstance(direct, RunnableBindingBase):
            direct = direct.bound
        if isinstance(direct, Pregel):
            kind, graphs = NodeKind.CHILD, [direct]
        else:
            graphs = _unique([*(g for g in declared if isinstance(g, Pregel)), *_reachable_graphs(bound)])
            kind = NodeKind.CALLER if graphs else NodeKind.ORDINARY
        for graph in graphs:
            self._check_checkpointer(graph, kind, path)
        return NodeTopology(name, kind, tuple(self.graph(graph, path) for graph in graphs))

    def _check_checkpointer(self, graph: _Compiled, kind: NodeKind, path: tuple[str, ...]) -> None:
        where = (
            f"child '{_join(path)}'" if kind is NodeKind.CHILD else f"graph '{graph.name}' run by node '{_join(path)}'"
        )
        saver = graph.checkpointer
        if saver is True:
            problem = (
                "was compiled with checkpointer=True; its namespace drops task ids, "
                "so its occurrences cannot be told apart"
            )
        elif saver is False:
            problem = (
                "was compiled with checkpointer=False; nothing of it is saved, "
                "so a resume re-runs it under new task ids"
            )
        elif isinstance(saver, BaseCheckpointSaver) and saver is not self.root_saver:
            problem = f"was compiled with its own saver ({type(saver).__name__})"
        else:
            return
        self.issues.append(TopologyIssue(_join(path), f"{where} {problem}; {_INHERIT_FIX}"))


def _join(path: tuple[str, ...]) -> str:
    return "/".join(path)


def _unique(graphs: list[_Compiled]) -> list[_Compiled]:
    return list({id(graph): graph for graph in graphs}.values())


@functools.lru_cache(maxsize=1)
def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple({paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")})


def _is_application_code(func: Any) -> bool:
    code = getattr(inspect.unwrap(func), "__code__", None)
    return code is not None and not code.co_filename.startswith(_library_roots())


def _reachable_graphs(start: Any) -> list[_Compiled]:
    """Every compiled graph reachable from a node's runnable or code."""
    found: list[_Compiled] = []
    seen: dict[int, Any] = {}  # holds what it saw, so no id is reused while walking
    pending = [start]
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen[id(item)] = item
        if isinstance(item, Pregel):
            found.append(item)
        else:
            pending.extend(_references(item))
    return found


def _references(item: Any) -> Iterator[Any]:
    """What ``item`` can call into, one level deep."""
    if isinstance(item, RunnableBindingBase):
        yield item.bound
    elif isinstance(item, RunnableParallel):
        yield from item.steps__.values()
    elif isinstance(item, Runnable):
        # RunnableLambda and LangGraph's RunnableCallable hold code (func/afunc);
        # RunnableSequence and LangGraph's RunnableSeq hold steps.
        yield from (getattr(item, "func", None), getattr(item, "afunc", None))
        yield from getattr(item, "steps", ())
    elif isinstance(item, functools.partial):
        yield item.func
        yield from item.args
        yield from item.keywords.values()
    elif isinstance(item, MethodType):
        if isinstance(item.__self__, Runnable):
            yield item.__self__  # e.g. `child.invoke` named in a node's code
        elif _is_application_code(item.__func__):
            yield item.__func__
            yield from _attributes(item.__self__)
    elif isinstance(item, FunctionType):
        if _is_application_code(item):
            yield from _function_references(inspect.unwrap(item))
    elif isinstance(item, (list, tuple, set, frozenset)):
        yield from item
    elif isinstance(item, dict):
        yield from item.values()
    elif callable(item) and not isinstance(item, (type, ModuleType)) and _is_application_code(type(item).__call__):
        yield type(item).__call__
        yield from _attributes(item)


def _function_references(func: FunctionType) -> Iterator[Any]:
    yield from get_function_nonlocals(func)
    for cell in func.__closure__ or ():
        try:
            yield cell.cell_contents
        except ValueError:  # empty cell
            continue
    yield from func.__defaults__ or ()
    yield from (func.__kwdefaults__ or {}).values()


def _attributes(obj: Any) -> Iterator[Any]:
    try:
        yield from vars(obj).values()
    except TypeError:  # no __dict__ (slots or builtins)
        return
