"""The figures the README and the docs site quote come from one file, docs/numbers.json, which ``scripts/bench``
writes from a full run: a page cannot quote a number no run measured, and the README cannot drift from the site.

The site's pages write ``{{ numbers.x }}`` (scripts/mkdocs_hooks.py fills them in, and fails the build on one the
file does not hold); the README, which GitHub shows as it is, quotes them literally and is checked here.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
NUMBERS = json.loads((ROOT / "docs" / "numbers.json").read_text())


def load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


hooks = load("mkdocs_hooks")


def readme_row(label: str) -> list[str]:
    """The cells of the README's cost table row that starts with ``label``."""
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith(f"| {label} |"):
            return [cell.strip() for cell in line.strip("|").split("|")][1:]
    raise AssertionError(f"the README has no row {label!r}")


def test_the_readme_quotes_the_commands_per_turn_the_last_run_measured() -> None:
    commands = NUMBERS["commands"]
    assert readme_row("commands per ReAct turn") == [
        str(commands["task"]),
        f"{commands['compile']} (`platform.compile`), {commands['plain']} (plain form)",
    ]


def test_the_readme_quotes_the_wall_time_ratios_the_last_run_measured() -> None:
    ratio = NUMBERS["ratio"]
    assert readme_row("wall time per ReAct turn at 1 ms") == [
        "1.00",
        f"{ratio['compile']:.2f}x (`platform.compile`), {ratio['plain']:.2f}x (plain form)",
    ]


def test_every_ratio_the_readme_quotes_is_one_the_file_holds() -> None:
    held = {hooks.quoted(NUMBERS, f"ratio.{name}") for name in NUMBERS["ratio"]}
    held |= {hooks.quoted(NUMBERS, "cpu_ratio"), hooks.quoted(NUMBERS, "cpu_ratio_sync")}
    quoted = set(re.findall(r"\b\d+\.\d\dx", (ROOT / "README.md").read_text()))
    assert quoted and quoted <= held, f"the README quotes {sorted(quoted - held)}, which docs/numbers.json does not hold"


@pytest.mark.parametrize("page", sorted(p.name for p in (ROOT / "docs").glob("*.md")))
def test_every_figure_a_page_quotes_is_in_the_file(page: str) -> None:
    text = (ROOT / "docs" / page).read_text()
    for key in hooks.FIGURE.findall(text):
        hooks.quoted(NUMBERS, key)  # raises KeyError for a figure the file does not hold


def page(src_path: str) -> Any:
    return SimpleNamespace(file=SimpleNamespace(src_path=src_path))


def test_the_build_fills_in_figures_and_refuses_one_no_run_measured() -> None:
    PluginError = pytest.importorskip("mkdocs.exceptions").PluginError  # the docs extra (scripts/docs installs it)
    filled = hooks.on_page_markdown("{{ numbers.commands.task }} against {{numbers.ratio.compile}}", page("x.md"))
    assert filled == f"{NUMBERS['commands']['task']} against {NUMBERS['ratio']['compile']:.2f}x"
    with pytest.raises(PluginError, match=r"x\.md quotes numbers\.commands\.never"):
        hooks.on_page_markdown("{{ numbers.commands.never }}", page("x.md"))


def test_the_home_page_is_the_readme_with_the_site_s_links() -> None:
    home = hooks.on_page_markdown(hooks.README_MARK, page("index.md"))
    assert "## Quick start" in home
    assert "](docs/" not in home and "](reliability.md)" in home  # docs/x.md is the page x.md
    assert "](ARCHITECTURE.md)" not in home


def test_bench_writes_every_figure_the_pages_quote() -> None:
    """``docs_numbers`` from an rtt run shaped as ``scripts/benchmarks/rtt.py`` makes it holds each figure quoted."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from benchmarks import rtt as bench_rtt
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    rows = {name: {"commands_later_turns": 10.0, "ratio": 1.25, "cpu_ratio": 1.125} for name in bench_rtt.REFERENCE}
    written = bench_rtt.docs_numbers(
        {"variants": rows, "settings": {"latency_ms": 1}, "cpu": {"ratio": 1.5}}, "mongo-java-server", "2026-12-05"
    )
    quoted = {key for p in (ROOT / "docs").glob("*.md") for key in hooks.FIGURE.findall(p.read_text())}
    quoted |= {"commands.task", "commands.compile", "commands.plain", "ratio.compile", "ratio.plain"}  # the README's
    for key in quoted:
        hooks.quoted(written, key)
    assert set(written) == set(NUMBERS)  # the file in the repository has the shape bench writes
