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


def test_the_readme_quotes_the_wall_time_ratios_the_last_run_measured_with_their_spread() -> None:
    def quoted(name: str) -> str:
        return f"{hooks.quoted(NUMBERS, f'ratio.{name}')} ({hooks.quoted(NUMBERS, f'spread.ratio.{name}')})"

    assert readme_row("wall time per ReAct turn at 1 ms") == [
        "1.00", f"{quoted('compile')} (`platform.compile`), {quoted('plain')} (plain form)"
    ]


#: A ratio as the README quotes it, alone (``1.42x``) or as a spread (``1.35–1.50x``).
RATIO = re.compile(r"\b\d+\.\d\d(?:–\d+\.\d\d)?x")


def test_every_ratio_the_readme_quotes_is_one_the_file_holds_and_comes_with_its_spread() -> None:
    keys = [f"ratio.{name}" for name in NUMBERS["ratio"]] + ["cpu_ratio", "cpu_ratio_sync"]
    spreads = {hooks.quoted(NUMBERS, key): hooks.quoted(NUMBERS, f"spread.{key}") for key in keys}
    text = (ROOT / "README.md").read_text()
    quoted = RATIO.findall(text)
    assert quoted and set(quoted) <= set(spreads) | set(spreads.values()), (
        f"the README quotes {sorted(set(quoted) - set(spreads) - set(spreads.values()))}, which docs/numbers.json does not hold"
    )
    for figure in (q for q in quoted if q in spreads):
        assert f"{figure} ({spreads[figure]}" in text or f"{figure} `@task`'s ({spreads[figure]}" in text, (
            f"the README quotes {figure} without its spread ({spreads[figure]}) beside it"
        )


@pytest.mark.parametrize("page", sorted(p.name for p in (ROOT / "docs").glob("*.md")))
def test_every_ratio_a_page_quotes_comes_with_its_spread(page: str) -> None:
    """A page writes each ratio with its spread beside it: ``{{ numbers.ratio.x }} ({{ numbers.spread.ratio.x }})``."""
    text = (ROOT / "docs" / page).read_text()
    for key in hooks.FIGURE.findall(text):
        if "ratio" in key and not key.startswith("spread."):
            assert re.search(r"\{\{\s*numbers\." + re.escape(key) + r"\s*\}\}[^{]{0,12}\{\{\s*numbers\.spread\." + re.escape(key), text), (
                f"{page} quotes numbers.{key} without numbers.spread.{key} beside it"
            )


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


def bench_rtt() -> Any:
    """scripts/benchmarks/rtt.py, imported as the bench imports it."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from benchmarks import rtt
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return rtt


def run_rows(ratio: float, cpu_ratio: float, wall: float = 20.0) -> dict[str, Any]:
    """One run's rows (``rtt.summarize``'s shape), every variant alike."""
    return {
        name: {"commands_later_turns": 10.0, "commands_later_min_max": [10, 10], "wall_ms_median": wall,
               "cpu_ms_median": 5.0, "ratio": ratio, "cpu_ratio": cpu_ratio}
        for name in bench_rtt().REFERENCE
    }


def an_rtt_run(ratios: list[float], cpu_ratios: list[float]) -> dict[str, Any]:
    """An rtt section's result from runs with these wall-time ratios (and a sync CPU ratio of 1.2 each), its async CPU
    line's reps with ``cpu_ratios``."""
    rtt = bench_rtt()
    variants = rtt.combine([run_rows(r, 1.2, 10.0 * r) for r in ratios])
    cpu = {"ratio": sorted(cpu_ratios)[len(cpu_ratios) // 2], "ratio_spread": [min(cpu_ratios), max(cpu_ratios)]}
    return {"variants": variants, "settings": {"latency_ms": 1, "runs": len(ratios)}, "cpu": cpu}


def test_repeated_runs_give_each_figure_its_median_and_spread() -> None:
    rows = bench_rtt().combine([run_rows(1.5, 1.1, 30.0), run_rows(1.25, 1.2, 20.0), run_rows(1.4, 1.0, 25.0)])
    compile = rows["compile"]
    assert (compile["ratio"], compile["ratio_spread"]) == (1.4, [1.25, 1.5])
    assert (compile["cpu_ratio"], compile["cpu_ratio_spread"]) == (1.1, [1.0, 1.2])
    assert (compile["wall_ms_median"], compile["wall_ms_median_spread"]) == (25.0, [20.0, 30.0])


def test_a_run_whose_repeats_spread_wide_says_it_is_too_noisy_to_compare() -> None:
    """What ``scripts/bench --quick`` prints last: a figure spread more than ``NOISY`` over the run's repeats makes
    the run too noisy to compare; a quiet run sets each figure against the documented one and its spread."""
    rtt = bench_rtt()
    noisy = rtt.noise(an_rtt_run([1.4, 1.42, 1.41], [1.53, 1.98, 1.6]), NUMBERS)
    assert noisy[0].startswith("**Too noisy to compare**: cpu_ratio spread more than 15%")
    quiet = rtt.noise(an_rtt_run([1.4, 1.42, 1.41], [1.1, 1.12, 1.15]), NUMBERS)
    assert quiet[0].startswith("Quiet enough to compare")
    documented = f"the docs: {NUMBERS['ratio']['compile']:.2f}x ({NUMBERS['spread']['ratio']['compile'][0]:.2f}-"
    assert any(line.startswith("- wall time, `platform.compile` / `@task`: 1.41x (1.40-1.42x") and documented in line for line in quiet)


def test_bench_writes_every_figure_the_pages_quote() -> None:
    """``docs_numbers`` from an rtt run shaped as ``scripts/benchmarks/rtt.py`` makes it holds each figure quoted."""
    written = bench_rtt().docs_numbers(an_rtt_run([1.2, 1.25, 1.3], [1.1, 1.2, 1.5]), "mongo-java-server", "2026-12-05")
    assert written["spread"]["ratio"]["compile"] == [1.2, 1.3] and written["runs"] == 3
    assert written["verdict"] == "too noisy to compare: cpu_ratio spread more than 15% over its runs"
    quoted = {key for p in (ROOT / "docs").glob("*.md") for key in hooks.FIGURE.findall(p.read_text())}
    quoted |= {"commands.task", "commands.compile", "commands.plain", "ratio.compile", "ratio.plain"}  # the README's
    for key in quoted:
        hooks.quoted(written, key)
    assert set(written) == set(NUMBERS)  # the file in the repository has the shape bench writes
