"""The public contract is documented: every public method of the classes people call has a docstring.

A method with parameters besides ``self`` (or ``cls``) also needs an ``Args:`` section, unless it is
an async twin whose docstring refers to its sync twin (``aname`` mentioning ``name``, as in
"Async ``get_tuple``: same arguments, return and errors."). Only what this package defines is
checked: methods inherited from LangGraph, LangChain or pydantic bases document themselves.
"""

from __future__ import annotations

import inspect

import pytest

from langgraph_durable_mongodb import effect
from langgraph_durable_mongodb.checkpointer.saver import MongoDBCheckpointer
from langgraph_durable_mongodb.journal.journal import ActivityJournal
from langgraph_durable_mongodb.journal.llm import SecureLLM
from langgraph_durable_mongodb.journal.tool import SecureTool
from langgraph_durable_mongodb.platform import DurableGraph, DurablePlatform
from langgraph_durable_mongodb.runs.run_lock import RunLocks

PACKAGE = "langgraph_durable_mongodb"

CLASSES = [
    MongoDBCheckpointer,
    ActivityJournal,
    DurablePlatform,
    DurableGraph,
    RunLocks,
    SecureLLM,
    SecureTool,
]

#: The wrappers: their first docstring line must say that "secure" means journaled.
WRAPPERS = [SecureLLM, SecureTool, effect]


def _function(attr: object) -> object | None:
    """The function behind a class attribute (plain, static or class method), else None."""
    if isinstance(attr, (staticmethod, classmethod)):
        attr = attr.__func__
    return attr if inspect.isfunction(attr) else None


def _ours(fn: object) -> bool:
    return getattr(fn, "__module__", "").startswith(PACKAGE + ".") or getattr(fn, "__module__", "") == PACKAGE


def public_methods(cls: type) -> list[tuple[str, object]]:
    """``(name, function)`` of every public method ``cls`` has that this package defines (own or mixed in)."""
    found: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        for name, attr in vars(klass).items():
            fn = _function(attr)
            if fn is not None and not name.startswith("_"):
                found[name] = fn  # a subclass's definition wins
    return sorted((name, fn) for name, fn in found.items() if _ours(fn))


def _own_doc(fn: object) -> str:
    """The function's own docstring: ``inspect.getdoc`` would inherit the base class's (LangGraph's)."""
    return inspect.cleandoc(fn.__doc__) if getattr(fn, "__doc__", None) else ""


def _parameters(fn: object) -> list[str]:
    names = list(inspect.signature(fn).parameters)
    return names[1:] if names and names[0] in ("self", "cls") else names


def _refers_to_sync_twin(cls: type, name: str, doc: str) -> bool:
    twin = name[1:]
    return name.startswith("a") and callable(getattr(cls, twin, None)) and f"``{twin}``" in doc


CASES = [pytest.param(cls, name, fn, id=f"{cls.__name__}.{name}") for cls in CLASSES for name, fn in public_methods(cls)]


def test_the_classes_have_public_methods_of_ours() -> None:
    """Guard the guard: a broken filter would check nothing."""
    names = {f"{cls.__name__}.{name}" for cls in CLASSES for name, _ in public_methods(cls)}
    for expected in (
        "MongoDBCheckpointer.get_tuple",
        "MongoDBCheckpointer.setup",
        "ActivityJournal.for_checkpointer",
        "DurableGraph.stream",
        "MongoDBCheckpointer.wait_stored",
        "RunLocks.hold",
        "SecureTool.invoke",
        "SecureLLM.bind_tools",
    ):
        assert expected in names
    # inherited from LangGraph / LangChain: not ours to document
    assert "MongoDBCheckpointer.get" not in names
    assert "SecureLLM.invoke" not in names


@pytest.mark.parametrize(("cls", "name", "fn"), CASES)
def test_public_method_has_a_docstring(cls: type, name: str, fn: object) -> None:
    doc = _own_doc(fn)
    assert doc.strip(), f"{cls.__name__}.{name} has no docstring"


@pytest.mark.parametrize(("cls", "name", "fn"), CASES)
def test_public_method_with_parameters_has_an_args_section(cls: type, name: str, fn: object) -> None:
    doc = _own_doc(fn)
    if not _parameters(fn) or _refers_to_sync_twin(cls, name, doc):
        return
    assert "\nArgs:\n" in f"\n{doc}\n", f"{cls.__name__}.{name} takes {_parameters(fn)} but its docstring has no Args: section"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_class_has_a_docstring(cls: type) -> None:
    assert cls.__doc__ and cls.__doc__.strip(), f"{cls.__name__} has no docstring"


@pytest.mark.parametrize("wrapper", WRAPPERS, ids=lambda w: w.__name__)
def test_wrapper_first_line_says_secure_means_journaled(wrapper: object) -> None:
    doc = _own_doc(wrapper)
    first = doc.splitlines()[0] if doc else ""
    assert "journaled" in first and '"secure"' in first, (
        f"{wrapper.__name__}'s first docstring line must say that secure means journaled: {first!r}"
    )
