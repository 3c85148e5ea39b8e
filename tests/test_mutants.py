"""The guard-removal mutants (scripts/mutants.py, their tables in scripts/mutants.d/) still apply: fast, no mutant run.

A mutant whose text no longer occurs exactly once fails only when the mutants run (``NOT APPLIED``); this says so
on every change to the guarded file instead.
"""

from __future__ import annotations

import importlib.util
import os
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _runner():
    sys.path.insert(0, str(ROOT / "scripts"))  # where the runner imports its pytest_forks from
    spec = importlib.util.spec_from_file_location("mutants_script", ROOT / "scripts" / "mutants.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the dataclass looks its module up
    spec.loader.exec_module(module)
    return module


RUNNER = _runner()


def test_the_tables_hold_every_mutant_once_by_name() -> None:
    names = [m.name for m in RUNNER.MUTANTS]
    assert len(names) > 300  # the tables were read
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


@pytest.mark.parametrize("mutant", RUNNER.MUTANTS, ids=lambda m: m.name)
def test_each_mutant_applies_once_and_names_tests_that_exist(mutant) -> None:  # noqa: ANN001
    guarded = ROOT / mutant.path
    assert guarded.is_file(), f"scripts/mutants.d/{mutant.path} guards no file: move it with its module"
    assert guarded.read_text().count(mutant.old) == 1, f"{mutant.name}: its old text must occur once in {mutant.path}"
    assert mutant.old != mutant.new
    files = [arg.split("::")[0] for arg in mutant.tests if arg.startswith("tests/")]
    assert files and all((ROOT / f).is_file() for f in files), mutant.tests


def test_a_table_is_data_never_run(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text('MUTANTS = (("n", "old", "new", ("tests/t.py",)),)\n')
    assert RUNNER.load(tmp_path) == (RUNNER.Mutant("n", "src/m.py", "old", "new", ("tests/t.py",)),)
    (tmp_path / "src" / "m.py").write_text('MUTANTS = (("n", "old", "new", tuple(open("x"))),)\n')
    with pytest.raises(ValueError):
        RUNNER.load(tmp_path)


def test_a_mutant_the_size_of_the_text_it_replaced_runs_instead_of_its_cached_bytecode(tmp_path: Path) -> None:
    """The runner lets a copy cache bytecode, which Python checks by the source's mtime in seconds and its size: a
    same-size mutant written within the second of the original's bytecode would run as the original, and "survive"."""
    source = tmp_path / "m.py"
    source.write_text("X = 1\n")
    py_compile.compile(str(source))
    same_second = source.stat().st_mtime_ns
    RUNNER._write(source, "X = 2\n")
    os.utime(source, ns=(same_second, same_second))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPATH": str(tmp_path)}
    ran = subprocess.run([sys.executable, "-c", "import m; print(m.X)"], env=env, capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "2"
