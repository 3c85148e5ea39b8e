"""The docs site's MkDocs hooks (mkdocs.yml ``hooks``): the figures a page quotes come from docs/numbers.json.

The home page is the README (``docs/index.md`` includes it), its links turned into the site's. A page writes
``{{ numbers.commands.compile }}`` or ``{{ numbers.ratio.compile }}``; the build fills in what the
benchmarks measured last (``scripts/bench`` writes the file), and fails on a figure the file does not hold, so a
page can never quote a number no run measured. The README, which GitHub shows as it is, quotes the figures
literally: tests/test_docs_numbers.py holds it to the same file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NUMBERS = ROOT / "docs" / "numbers.json"
#: Where ``docs/index.md`` wants the README.
README_MARK = "<!-- the README -->"
#: The README's links, as the site's: docs/ pages are the site's pages; the rest is shown as a path.
_LINK = re.compile(r"\]\((?!https?://|#)([^)]+)\)")
#: An example folder the README links to, shown as its path on the site (no page of the site).
_EXAMPLE = re.compile(r"\[(examples/[\w/]+)\]")
FIGURE = re.compile(r"\{\{\s*numbers\.([A-Za-z_][\w.]*)\s*\}\}")


def quoted(numbers: dict[str, Any], key: str) -> str:
    """The figure ``key`` (dotted) of ``numbers`` as a page shows it: a ratio as ``1.33x``, a spread (lowest, highest
    over the run's repeats) as ``1.25–1.41x``, a time per turn (``ms.*``) as ``12.5 ms``, anything else as is.

    Raises:
        KeyError: the file holds no such figure.
    """
    value: Any = numbers
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(key)
        value = value[part]
    if isinstance(value, list):
        return f"{value[0]:.2f}–{value[1]:.2f}x" if "ratio" in key else f"{value[0]}–{value[1]}"
    if key.startswith("ms."):
        return f"{value:.1f} ms"
    return f"{value:.2f}x" if "ratio" in key else str(value)


def site_link(target: str) -> str:
    """A link of the README as the site has it: ``docs/x.md`` is ``x.md``; ``ARCHITECTURE.md`` is the
    architecture page; anything else (a folder, LICENSE) is no page of the site: None."""
    if target.startswith("docs/"):
        return target[len("docs/"):]
    return {"ARCHITECTURE.md": "architecture.md"}.get(target, "")


def readme_for_site() -> str:
    """The README with its links turned into the site's (a link to no page becomes its text)."""
    text = (ROOT / "README.md").read_text()
    linked = _LINK.sub(lambda m: f"]({site_link(m[1])})" if site_link(m[1]) else "]", text)
    return _EXAMPLE.sub(r"`\1`", linked)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if README_MARK in markdown:
        markdown = markdown.replace(README_MARK, readme_for_site())
    numbers = json.loads(NUMBERS.read_text())

    def fill(found: re.Match[str]) -> str:
        try:
            return quoted(numbers, found[1])
        except KeyError:
            from mkdocs.exceptions import PluginError  # the docs extra: only a failing build needs it

            raise PluginError(
                f"{page.file.src_path} quotes numbers.{found[1]}, which docs/numbers.json does not hold: quote a "
                "figure scripts/bench writes there"
            ) from None

    return FIGURE.sub(fill, markdown)
