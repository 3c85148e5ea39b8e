#!/usr/bin/env python3
"""Prove that the tests bite: remove one guard at a time and watch a test fail.

Each mutant is an exact text replacement in one file of ``src/``: it removes a
fence, a lease condition, a cache invalidation, ... The mutants of a file are a
table of data beside this runner, at the file's own path under
``scripts/mutants.d/`` (those of ``src/runs/run_lock.py`` in
``scripts/mutants.d/src/runs/run_lock.py``). For each one, this script
copies the tree to a temporary directory, applies the replacement there (the
text must occur exactly once, so a mutant that no longer applies fails loudly
instead of testing nothing), and runs the tests named for it against the copy.
A mutant is *killed* when those tests fail; it *survives* when they pass.
Before the mutants, the same test selections run on the unmutated copy and
must pass, or every mutant would look killed. ``--jobs`` mutants (one per core
by default) run at once, each in a copy of the tree of its own; each job's tests
run in forks of a process that imported pytest and the heavy libraries once
(``pytest_forks.py``).

    scripts/mutants                  # all mutants; exit 1 if one survives or cannot be applied
    scripts/mutants -k renewal       # those whose name contains "renewal"
    scripts/mutants --list

The copy imports its own ``src/`` as ``langgraph_durable_mongodb`` (first on
``PYTHONPATH``, ahead of the editable install), child processes included.
Server-tier tests among the selections use ``MONGODB_URI`` when it is set.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_forks import Forks

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # relative to the repository
    old: str
    new: str
    tests: tuple[str, ...]  # pytest arguments: node ids, files, -k expressions


TABLES = ROOT / "scripts" / "mutants.d"


def load(tables: Path = TABLES) -> tuple[Mutant, ...]:
    """Every mutant of the tables, by the path they guard: ``mutants.d/<path>.py`` holds those of ``<path>``.

    A table's ``MUTANTS`` is a tuple of ``(name, old, new, tests)`` literals, read with ``ast.literal_eval``: data,
    never run.
    """
    found = []
    for table in sorted(tables.rglob("*.py")):
        guarded = table.relative_to(tables).as_posix()
        for name, old, new, tests in _table(table):
            found.append(Mutant(name, guarded, old, new, tuple(tests)))
    return tuple(found)


def _table(table: Path) -> tuple:
    for node in ast.parse(table.read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["MUTANTS"]:
            return ast.literal_eval(node.value)
    raise ValueError(f"{table} has no MUTANTS = (...) table")


MUTANTS = load()


@dataclass
class Tree:
    """A copy of the repository one job applies its mutants to, and the pytest fork server running in it."""

    copy: Path
    alias: Path
    forks: Forks


def _in_a_copy(copies: queue.Queue[Tree], run: Any, what: Any) -> Any:
    """``run(tree, what)`` in a copy no other job is using."""
    tree = copies.get()
    try:
        return run(tree, what)
    finally:
        copies.put(tree)


def _mutant(tree: Tree, m: Mutant) -> tuple[str, bool]:
    """Apply ``m`` to the copy, run its tests, restore the file: the verdict line and whether a test killed it."""
    target = tree.copy / m.path
    original = target.read_text()
    found = original.count(m.old)
    if found != 1:
        return f"NOT APPLIED  {m.name}: its text occurs {found} times in {m.path}", False
    _write(target, original.replace(m.old, m.new))
    started = time.monotonic()
    try:
        code, last = _pytest(tree, m.tests)
    finally:
        _write(target, original)
    seconds = time.monotonic() - started
    if code == 1:
        return f"killed    {m.name} ({seconds:.0f} s): {last}", True
    verdict = "SURVIVED" if code == 0 else f"ERROR rc={code}"
    return f"{verdict}  {m.name} ({seconds:.0f} s): {last}", False


def _write(source: Path, text: str) -> None:
    """Write ``source`` and drop its cached bytecode: a mutant of the same size, written in the same second as the
    bytecode of the text before it, would otherwise pass the cache's mtime-and-size check and never run."""
    source.write_text(text)
    Path(importlib.util.cache_from_source(str(source))).unlink(missing_ok=True)


def _copy_tree(target: Path) -> Path:
    """The repository's files as they are now (tracked and new, not ignored), plus an import alias."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        source = ROOT / rel
        if source.is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / rel)
    alias = target / ".mutant-path"
    alias.mkdir()
    (alias / "langgraph_durable_mongodb").symlink_to(target / "src", target_is_directory=True)
    return alias


#: Hypothesis's pytest plugin costs 0.7 s of CPU at every start (measured), and ``@given`` tests run without it.
PYTEST = ("-q", "-x", "-p", "no:cacheprovider", "-p", "no:hypothesispytest")


def _pythonpath(alias: Path) -> str:
    return os.pathsep.join(filter(None, [str(alias), os.environ.get("PYTHONPATH")]))


def _pytest(tree: Tree, tests: tuple[str, ...]) -> tuple[int, str]:
    """Run the tests in a fork of the tree's server (``pytest_forks``): the exit code and the output's last line.
    The copy is thrown away, so the fork writes bytecode even where PYTHONDONTWRITEBYTECODE is set: compiling src/
    and rewriting the tests' asserts afresh cost each mutant about 3 s of CPU (``_write`` keeps it honest)."""
    code, output = tree.forks.run([*PYTEST, *tests])
    lines = output.strip().splitlines()
    return code, lines[-1] if lines else ""


def _imports_the_copy(copy: Path, alias: Path) -> bool:
    env = {**os.environ, "PYTHONPATH": str(alias)}
    where = subprocess.run(
        [sys.executable, "-c", "import langgraph_durable_mongodb as m; print(m.__file__)"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return where.startswith(str(alias))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", default="", help="run only mutants whose name contains this text")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="mutants run at once, each in a copy of its own"
    )
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip checking that each mutant's tests pass unmutated (for CI, where the whole suite has just passed)",
    )
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if args.k.lower() in m.name.lower()]
    if args.list:
        for m in chosen:
            print(f"{m.name}: {m.path} -> {' '.join(m.tests)}")
        return 0
    if not chosen:
        print(f"no mutant matches {args.k!r}", file=sys.stderr)
        return 2

    jobs = max(1, min(args.jobs, len(chosen)))
    with contextlib.ExitStack() as stack:
        copies: queue.Queue[Tree] = queue.Queue()
        for _ in range(jobs):  # one copy per job: a mutant is applied to its copy alone
            copy = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mutants-"))) / "tree"
            copy.mkdir()
            alias = _copy_tree(copy)
            if not _imports_the_copy(copy, alias):
                print("the copy does not import its own src/ first; nothing can be proven", file=sys.stderr)
                return 2
            forks = Forks(copy, _pythonpath(alias))
            stack.callback(forks.close)
            copies.put(Tree(copy, alias, forks))
        with ThreadPoolExecutor(jobs) as pool:
            baselines = [] if args.no_baseline else sorted({m.tests for m in chosen})
            for tests, (code, last) in pool.map(lambda t: (t, _in_a_copy(copies, _pytest, t)), baselines):
                if code != 0:
                    print(f"BASELINE FAILS  {' '.join(tests)}: {last}")
                    return 1
            verdicts = [pool.submit(_in_a_copy, copies, _mutant, m) for m in chosen]
            failures = 0
            for verdict in verdicts:
                line, killed = verdict.result()
                print(line, flush=True)
                failures += not killed
    print(f"{len(chosen) - failures} of {len(chosen)} mutants killed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
