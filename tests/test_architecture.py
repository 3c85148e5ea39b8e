"""The layers hold: no import cycle in the package, between its packages or among the scripts, and no layer reaches
into one above it.

Imports are read from the source (``ast``): every ``import`` and ``from ... import``
at any depth, lazy ones inside functions and ``if TYPE_CHECKING:`` ones included
(a cycle of types is a cycle of design too).
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "langgraph_durable_mongodb"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


def imports_of(path: Path, here: str | None = None, modules: Collection[str] | None = None) -> set[str]:
    """The ``modules`` (the package's by default) that ``path``, the module ``here``, imports (a ``from X import y``
    names ``X.y`` when that is a module)."""
    tree = ast.parse(path.read_text())
    here = module_name(path) if here is None else here
    modules = MODULES if modules is None else modules
    package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in modules else target)
    return {name for name in found if name in modules and name != here}


MODULES = {module_name(p): p for p in SRC.rglob("*.py")}
GRAPH = {name: imports_of(path) for name, path in MODULES.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_package_has_no_import_cycle() -> None:
    # A package's __init__ re-exports its modules; the edge back from a module to its own package's
    # __init__ is the only one allowed to close a loop, so it is left out here.
    graph = {m: {t for t in targets if not m.startswith(t + ".")} for m, targets in GRAPH.items()}
    assert cycles(graph) == []


def package_of(module: str, packages: Collection[str]) -> str:
    """The package of ``src`` that ``module`` belongs to (``cli`` for ``cli.main``), or ``module`` itself when it lies
    loose at the top of ``src``."""
    top = ".".join(module.split(".")[:2])
    return top if top in packages else module


def package_graph(graph: dict[str, set[str]], packages: Collection[str]) -> dict[str, set[str]]:
    """``graph`` between the packages of ``src`` (and its loose modules): an edge wherever a module of one imports a
    module of another, the edges to the top package's ``__init__`` (its re-exports) left out."""
    out: dict[str, set[str]] = {}
    for module, targets in graph.items():
        edges = out.setdefault(package_of(module, packages), set())
        edges |= {package_of(t, packages) for t in targets if not module.startswith(t + ".")}
        edges.discard(package_of(module, packages))
    return out


PACKAGES = {name for name, path in MODULES.items() if path.name == "__init__.py" and name != PACKAGE}


def test_no_import_cycle_between_the_packages() -> None:
    """A cycle of packages is one of layers, though no two modules import each other: ``cli`` and ``ui`` were one."""
    assert cycles(package_graph(GRAPH, PACKAGES)) == []


def test_the_package_check_sees_a_cycle_no_module_cycle_shows() -> None:
    graph = {"p.a.x": {"p.b.y"}, "p.b.y": set(), "p.b.z": {"p.a.w"}, "p.a.w": set(), "p.loose": {"p.a.x"}}
    assert cycles(graph) == []
    assert cycles(package_graph(graph, {"p.a", "p.b"})) == [["p.a", "p.b"]]
    assert package_graph(GRAPH, PACKAGES)[f"{PACKAGE}.ui"] >= {f"{PACKAGE}.views"}  # and it reads the real tree


SCRIPTS = SRC.parent / "scripts"


def script_name(path: Path) -> str:
    parts = list(path.relative_to(SCRIPTS).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


#: The scripts' modules as they import each other (scripts/ on the path); the mutants' tables are data, never imported.
SCRIPT_MODULES = {script_name(p): p for p in SCRIPTS.rglob("*.py") if "mutants.d" not in p.relative_to(SCRIPTS).parts}
SCRIPT_GRAPH = {name: imports_of(path, name, SCRIPT_MODULES) for name, path in SCRIPT_MODULES.items()}


def test_the_scripts_have_no_import_cycle() -> None:
    graph = {m: {t for t in targets if not m.startswith(t + ".")} for m, targets in SCRIPT_GRAPH.items()}
    assert cycles(graph) == []
    assert {"benchmarks.common", "roundtrips"} <= SCRIPT_GRAPH["benchmarks.ui"]  # the check reads real edges


def test_a_bench_section_imports_only_what_the_sections_share() -> None:
    """The bench's sections share ``benchmarks.common``, ``benchmarks.calls`` (the call counter) and roundtrips'
    counter, never each other's code."""
    shared = {"benchmarks", "benchmarks.common", "benchmarks.calls", "roundtrips"}
    sections = {m for m in SCRIPT_GRAPH if m.startswith("benchmarks.") and m not in shared | {"benchmarks.__main__"}}
    assert len(sections) == 10
    offending = {m: SCRIPT_GRAPH[m] - shared for m in sorted(sections)}
    assert {m: found for m, found in offending.items() if found} == {}


#: Every layer above storage's modules that hold no plan (``connections``, ``liveness``, ``heartbeats``).
ABOVE_THE_BASE = (
    "storage.plans", "journal", "checkpointer", "resolver", "runs", "platform", "server", "cli", "demo", "views", "ui",
)
#: Every package above storage.
ABOVE_STORAGE = ("journal", "checkpointer", "resolver", "runs", "platform", "server", "migrate", "cli", "demo", "views", "ui")


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [
        # storage knows MongoDB and nothing of checkpoints, effects or runs
        ("storage", ABOVE_STORAGE),
        # what is not a plan (clients, process liveness, the renewer thread) lies beneath the plan machinery
        ("storage.connections", ABOVE_THE_BASE),
        ("storage.liveness", ABOVE_THE_BASE),
        ("storage.heartbeats", ABOVE_THE_BASE),
        ("storage.server_errors", ABOVE_THE_BASE),
        ("storage.schema", ABOVE_THE_BASE),
        # what a thread's documents are spread over, declared by their owners: beneath every storage class
        ("storage.thread_collections", ("storage.format", *ABOVE_THE_BASE)),
        ("runs", ("journal", "checkpointer", "resolver", "platform")),
        # what OpenTelemetry is told lies beneath every layer that tells it
        ("telemetry", ("storage", *ABOVE_STORAGE)),
        # the run context lies beneath every layer whose code carries a run
        ("runs.context", ("storage", *ABOVE_STORAGE)),
        ("checkpointer", ("journal", "resolver", "runs", "platform")),
        ("resolver", ("journal", "checkpointer", "runs", "platform")),
        # the journal reads the run context, and reaches the run lock only through the fence it is given
        ("journal", ("checkpointer", "runs.run_lock", "platform")),
        # the thread views read storage for the CLI and the web inspector, never the other way round
        ("views", ("resolver", "runs", "platform", "cli", "ui", "demo")),
        # the web inspector reads through the views and acts through the CLI's commands: never storage itself
        ("ui", ("storage.plans", "checkpointer.store", "checkpointer.maintenance", "journal.plans", "resolver", "runs", "platform", "demo")),
        # the migration from MongoDBSaver uses the saver's public API only; its command line is the CLI's
        ("migrate", ("checkpointer.store", "checkpointer.maintenance", "checkpointer.roots", "checkpointer.expiry", "checkpointer.documents", "checkpointer.remembered", "journal", "cli")),
    ],
)
def test_a_layer_imports_nothing_above_it(layer: str, forbidden: tuple[str, ...]) -> None:
    prefix = f"{PACKAGE}.{layer}"
    offending = sorted(
        (module, target)
        for module, targets in GRAPH.items()
        if module == prefix or module.startswith(prefix + ".")
        for target in targets
        if any(target == f"{PACKAGE}.{f}" or target.startswith(f"{PACKAGE}.{f}.") for f in forbidden)
    )
    assert offending == []


def pymongo_imports(path: Path) -> list[str]:
    """The ``pymongo`` modules ``path`` imports, at any depth (lazy ones and ``TYPE_CHECKING`` ones included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] == "pymongo"]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "pymongo":
            found.append(str(node.module))
    return found


def test_no_module_of_the_cli_imports_pymongo() -> None:
    """One way into storage: the CLI reads through the domain modules' plans (``views``, ``deployment``), opens its
    client through ``connections`` and hears of a server's failure as our typed errors (``server_errors``)."""
    offending = {path.name: pymongo_imports(path) for path in sorted((SRC / "cli").glob("*.py"))}
    assert {name: found for name, found in offending.items() if found} == {}


@pytest.mark.parametrize(
    "source",
    ["import pymongo\n", "from pymongo.errors import PyMongoError\n", "def f():\n    import pymongo.errors as e\n"],
)
def test_the_pymongo_check_sees_every_form_of_import(source: str, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(source)
    assert pymongo_imports(tmp_path / "m.py") != []
    assert pymongo_imports(SRC / "storage" / "connections.py") != []  # and it reads the real tree


def test_the_check_sees_imports_a_cycle_would_be_made_of() -> None:
    """The checks above would pass on an empty graph: show they read real edges, lazy ones included."""
    assert f"{PACKAGE}.storage.plans.interpreters" in GRAPH[f"{PACKAGE}.storage.plans.faces"]
    assert f"{PACKAGE}.storage.connections" in GRAPH[f"{PACKAGE}.storage.plans.faces"]
    assert f"{PACKAGE}.resolver.position" in GRAPH[f"{PACKAGE}.journal.attempt"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_package_of_the_source_is_packaged() -> None:
    """A package left out of pyproject.toml's list installs without it: ``pip install .`` then fails to import."""
    import tomllib

    listed = set(tomllib.loads((SRC.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    packages = {module_name(init) for init in SRC.rglob("__init__.py")}
    assert packages == listed


def test_a_run_is_found_from_its_nodes_configs_not_from_the_call_stack() -> None:
    """No frame walking, and no handler appended to a run's callback manager (issue 20): a node's durable context
    comes from its own config, and a bound scope reaches callbacks through LangChain's configure hook only.

    One walk is allowed, because LangGraph gives nothing else: ``_langgraph.running_graph``, the compiled graph whose
    root run is starting, found once per run at its first checkpoint read, so the plain compile form's children are
    validated before any step as ``platform.compile``'s are. No other function walks frames."""
    offending = sorted(
        (module, word)
        for module, path in MODULES.items()
        for word in ("_getframe", "f_back", "inheritable_handlers.append", "add_handler(")
        if word in _outside_the_allowed_walk(module, path.read_text())
    )
    assert offending == []


def _outside_the_allowed_walk(module: str, text: str) -> str:
    """``text`` without the body of ``_langgraph.running_graph``, the one frame walk allowed."""
    if module != f"{PACKAGE}._langgraph":
        return text
    found = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == "running_graph")
    lines = text.splitlines(keepends=True)
    return "".join(lines[: found.lineno - 1] + lines[found.end_lineno :])


def test_at_most_eight_modules_lie_loose_at_the_top_of_src() -> None:
    """The rest live in packages that name their layer (issue 35): a ninth loose module needs a package."""
    loose = sorted(p.name for p in SRC.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(loose) <= 8, loose
    assert "platform.py" in loose  # and it reads the real tree


def test_a_run_carries_its_state_in_one_context_variable() -> None:
    """One ``RunContext`` in one ContextVar (issue 35), as DBOS keeps one ``DBOSContext``; the durable scope keeps
    the one LangChain's configure hook reads. A new ContextVar is a new field of ``runs/context.py`` instead."""
    found = sorted(
        (module, line.split("=", 1)[0].strip())
        for module, path in MODULES.items()
        for line in path.read_text().splitlines()
        if "ContextVar(" in line and not line.lstrip().startswith(("#", '"'))
    )
    assert found == [
        (f"{PACKAGE}.resolver.scope", "_SCOPE: ContextVar[DurableScope | None]"),
        (f"{PACKAGE}.runs.context", "_RUN: ContextVar[RunContext]"),
    ]
