"""No function of ``src`` grows past cyclomatic complexity 15 (radon's measure): one that does is split into
steps named for what they do."""

from __future__ import annotations

from pathlib import Path

import pytest

cc_visit = pytest.importorskip("radon.complexity", reason="radon (the test extra) is not installed").cc_visit

SRC = Path(__file__).resolve().parent.parent / "src"
MOST = 15


def too_complex(source: str, where: str) -> list[str]:
    """``where:name (complexity)`` of each function or method of ``source`` above ``MOST``."""
    found = []
    for block in cc_visit(source):
        functions = getattr(block, "methods", None)  # a class: its methods are judged, not the class's sum
        for unit in functions if functions is not None else [block]:
            if unit.complexity > MOST:
                name = f"{unit.classname}.{unit.name}" if unit.classname else unit.name
                found.append(f"{where}:{name} ({unit.complexity})")
    return sorted(set(found))


def test_no_function_of_src_is_above_complexity_15() -> None:
    found = [hit for path in sorted(SRC.rglob("*.py")) for hit in too_complex(path.read_text(), str(path.relative_to(SRC)))]
    assert found == [], f"split these into steps: {found}"


def test_the_check_sees_a_function_past_15() -> None:
    def branching(indent: str) -> str:
        return "".join(f"{indent}if x == {i}:\n{indent}    return {i}\n" for i in range(15)) + f"{indent}return -1\n"

    assert too_complex("def f(x):\n" + branching("    "), "m.py") == ["m.py:f (16)"]
    assert too_complex("class C:\n    def g(self, x):\n" + branching("        "), "m.py") == ["m.py:C.g (16)"]
    assert too_complex("def f(x):\n    return x\n", "m.py") == []
