"""How long the library's own path is: the calls into its code, the modules they cross, for one effect and one put.

Run it with ``scripts/effect-path`` (``--json`` for the figures alone). Two paths are traced, each on the embedded
platform (mongomock: the path through our code is the same on every server):

- **effect**: one ``SecureLLM.invoke`` made by a node two compiled children deep (root -> ``outer`` -> ``inner`` ->
  ``ask``), its first execution, from the node's call to its return to the node;
- **put**: one root checkpoint's ``put``, as LangGraph calls it during a run (the second root put of the run, so the
  thread's first-put work is not counted).

Counted with ``sys.setprofile`` in the thread that runs the path (records the effect leaves to the background are
not: they are off the caller's path):

- *calls*: every entry into a function of the package, a generator's resumption included (each is a call the
  interpreter makes);
- *functions* and *modules*: the distinct ones those calls enter;
- *hops*: calls whose function lies in another module than the package's frame that called it (directly, or
  through a library in between);
- *entries*: calls made from outside the package (the caller's call itself, and LangChain or LangGraph calling
  back in: a callback handler, a hook, a context manager's exit).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TypedDict

import langgraph_durable_mongodb as package

PACKAGE = str(Path(package.__file__).resolve().parent)


@dataclass
class Trace:
    """The figures of one traced path (``calls``, ``functions``, ``modules``, ``hops``, ``entries``)."""

    calls: int = 0
    hops: int = 0
    entries: int = 0
    functions: Counter[str] = field(default_factory=Counter)
    modules: Counter[str] = field(default_factory=Counter)

    def figures(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "functions": len(self.functions),
            "modules": len(self.modules),
            "hops": self.hops,
            "entries": self.entries,
        }


def _module(frame: FrameType) -> str | None:
    """The package's module a frame runs in (``journal.plans``), or None outside the package."""
    filename = frame.f_code.co_filename
    if not filename.startswith(PACKAGE):
        return None
    return filename[len(PACKAGE) + 1 : -3].replace("/", ".").removesuffix(".__init__") or "__init__"


def _caller_module(frame: FrameType) -> str | None:
    """The package's module of the nearest frame below ``frame`` that runs in the package (None: none does)."""
    below = frame.f_back
    while below is not None:
        module = _module(below)
        if module is not None:
            return module
        below = below.f_back
    return None


@contextmanager
def traced(into: Trace) -> Iterator[None]:
    """Count, in this thread, the package's calls made inside the block."""

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = _module(frame)
        if module is None:
            return
        into.calls += 1
        into.modules[module] += 1
        into.functions[f"{module}.{frame.f_code.co_qualname}"] += 1
        if frame.f_back is None or _module(frame.f_back) is None:
            into.entries += 1
        caller = _caller_module(frame)
        if caller is not None and caller != module:
            into.hops += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)


class State(TypedDict, total=False):
    answer: str


def _graph(llm: Any, effect: Trace) -> Any:
    """root -> outer -> inner -> ask (``llm.invoke`` traced into ``effect``, the first time only)."""
    from langgraph.graph import START, StateGraph

    def ask(state: State) -> State:
        if effect.calls:
            return {"answer": str(llm.invoke("again").content)}
        with traced(effect):
            reply = llm.invoke("the question")
        return {"answer": str(reply.content)}

    inner = StateGraph(State)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask")
    outer = StateGraph(State)
    outer.add_node("inner", inner.compile())
    outer.add_edge(START, "inner")
    root = StateGraph(State)
    root.add_node("outer", outer.compile())
    root.add_node("after", lambda state: {"answer": state.get("answer", "") + "."})
    root.add_edge(START, "outer")
    root.add_edge("outer", "after")
    return root


def _trace_second_root_put(checkpointer: Any, into: Trace) -> Callable[[], None]:
    """Trace the second root ``put`` of the run into ``into`` (in whichever thread LangGraph makes it); returns the
    undo."""
    put = checkpointer.put
    seen = [0]
    lock = threading.Lock()

    def traced_put(config: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            root = config.get("configurable", {}).get("checkpoint_ns", "") == ""
            seen[0] += root
            mine = root and seen[0] == 2
        if not mine:
            return put(config, *args, **kwargs)
        with traced(into):
            return put(config, *args, **kwargs)

    checkpointer.put = traced_put
    return lambda: delattr(checkpointer, "put")


def measure() -> dict[str, Trace]:
    """Run the graph once on the embedded platform; the traces of both paths, by name."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langgraph_durable_mongodb import DurablePlatform, SecureLLM

    platform = DurablePlatform.embedded(db_name=f"path_{uuid.uuid4().hex[:8]}")
    llm = SecureLLM(GenericFakeChatModel(messages=iter([AIMessage("first"), AIMessage("second")])))
    effect, put = Trace(), Trace()
    graph = platform.compile(_graph(llm, effect))
    undo = _trace_second_root_put(platform.checkpointer, put)
    try:
        graph.invoke({"answer": ""}, {"configurable": {"thread_id": "path"}}, durability="sync")
    finally:
        undo()
    if not (effect.calls and put.calls):
        raise SystemExit("a path was not traced: the graph did not run as this script expects")
    return {"effect": effect, "put": put}


def table_of(figures: dict[str, dict[str, int]]) -> str:
    """The figures (``Trace.figures`` by path) as the Markdown table ARCHITECTURE.md shows."""
    names = ("calls", "functions", "modules", "hops", "entries")
    lines = ["| path | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for path, values in figures.items():
        lines.append(f"| {path} | " + " | ".join(str(values[n]) for n in names) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--modules", action="store_true", help="also list the modules each path enters, with counts")
    args = parser.parse_args(argv)
    traces = measure()
    figures = {name: trace.figures() for name, trace in traces.items()}
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(table_of(figures))
    if args.modules:
        for name, trace in traces.items():
            print(f"\n{name}: " + ", ".join(f"{m} {n}" for m, n in trace.modules.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
