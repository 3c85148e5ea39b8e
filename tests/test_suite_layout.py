"""The suite's own layout: test modules get fixtures through conftest.py only (its ``pytest_plugins``), and share
helpers through support modules (tests/clients.py, tests/graphs.py, ...), never by importing one another.

Imports are read from the source (``ast``), at any depth, and from the scripts a test hands a child process
in a string.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def trees(source: str) -> list[ast.AST]:
    """``source`` parsed, and each of its strings that parses as a script importing something."""
    tree = ast.parse(source)
    found = [tree]
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "import" in node.value:
            try:
                found.append(ast.parse(textwrap.dedent(node.value)))
            except SyntaxError:
                pass
    return found


def imported_test_modules(source: str) -> set[str]:
    """The suite's test modules (``test_*``) that ``source`` imports, as written (``.test_x``, ``tests.test_x``)."""
    found: set[str] = set()
    for tree in trees(source):
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = "." * node.level + (node.module or "")
                names = [base, *(f"{base}.{alias.name}".replace("..", ".") for alias in node.names)]
            else:
                continue
            ours = [name for name in names if name.startswith((".", "tests."))]
            found |= {name for name in ours if any(part.startswith("test_") for part in name.split("."))}
    return found


def test_no_module_of_the_suite_imports_a_test_module() -> None:
    paths = sorted(TESTS.rglob("*.py"))
    assert len(paths) > 50 and TESTS / "conftest.py" in paths  # the walk reads the suite
    paths.remove(Path(__file__).resolve())  # this module: its examples below are such imports, in strings
    offenders = {str(p.relative_to(TESTS)): found for p in paths if (found := imported_test_modules(p.read_text()))}
    assert offenders == {}, "move what they share into conftest.py or a support module named for what it holds"


def test_the_check_sees_every_form_of_such_an_import() -> None:
    child = 'CHILD = """\n    import json\n    from tests.test_run_lock import State\n"""\n'
    forms = {
        "from .test_run_lock import State, config\n": ".test_run_lock",
        "def f():\n    from tests.test_run_lock import State\n": "tests.test_run_lock",
        "import tests.test_run_lock\n": "tests.test_run_lock",
        "from . import test_run_lock\n": ".test_run_lock",
        "from tests import test_run_lock\n": "tests.test_run_lock",
        child: "tests.test_run_lock",
    }
    for source, module in forms.items():
        assert module in imported_test_modules(source), source
    support = "from .graphs import Notes\nfrom tests.clients import Face\nfrom langgraph.checkpoint.conformance.spec import test_put\n"
    assert imported_test_modules(support) == set()


def fixtures_defined(source: str) -> set[str]:
    """The names of the fixtures a module defines (functions decorated with ``pytest.fixture``, called or not)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if ast.unparse(target) in ("pytest.fixture", "fixture"):
                    names.add(node.name)
    return names


def imported_fixtures(source: str, fixtures: dict[str, set[str]]) -> set[str]:
    """``module.name`` of each fixture of ``fixtures`` (by support module) that ``source`` imports by name."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.level == 1 or (node.module or "").startswith("tests.")):
            module = (node.module or "").removeprefix("tests.")
            found |= {f"{module}.{a.name}" for a in node.names if a.name in fixtures.get(module, set())}
    return found


def test_test_modules_get_fixtures_through_conftest_only() -> None:
    support = [p for p in TESTS.glob("*.py") if not p.name.startswith("test_") and p.name != "conftest.py"]
    fixtures = {p.stem: fixtures_defined(p.read_text()) for p in support}
    assert fixtures["clients"] and fixtures["stores"]  # the walk sees the fixtures of the plugins
    offenders = {p.name: found for p in sorted(TESTS.glob("test_*.py")) if (found := imported_fixtures(p.read_text(), fixtures))}
    assert offenders == {}, "name the support module in conftest.py's pytest_plugins instead of importing its fixtures"
    assert imported_fixtures("from .stores import Store, store\n", fixtures) == {"stores.store"}  # the check bites
