"""ARCHITECTURE.md stays true to the tree: it names every module of ``src``, and every module it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PAGE = (ROOT / "ARCHITECTURE.md").read_text()


def modules() -> list[str]:
    """Every module of ``src`` as a path relative to it (``checkpointer/store.py``), packages' ``__init__`` aside."""
    return sorted(
        str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if p.name not in ("__init__.py", "__main__.py")
    )


def package_bullets(page: str) -> dict[str, str]:
    """The text of each ``- **`package/`**`` bullet of the page, by package."""
    bullets: dict[str, str] = {}
    for match in re.finditer(r"^- \*\*`([\w/]+/)`\*\*(.*?)(?=^\S|^- |\Z)", page, re.S | re.M):
        bullets[match.group(1)] = bullets.get(match.group(1), "") + match.group(2)
    return bullets


def named(module: str, page: str, bullets: dict[str, str]) -> bool:
    """Whether the page names ``module``: by its path, or by its file name in its package's bullet."""
    if f"`{module}" in page or f"{module}`" in page or f" {module}" in page:
        return True
    package, _, name = module.rpartition("/")
    return bool(package) and re.search(rf"`{re.escape(name)}`", bullets.get(package + "/", "")) is not None


def test_the_page_names_every_module() -> None:
    bullets = package_bullets(PAGE)
    missing = [m for m in modules() if not named(m, PAGE, bullets)]
    assert missing == [], f"ARCHITECTURE.md does not name {missing}: say what each holds"


def test_every_module_the_page_names_exists() -> None:
    cited = set(re.findall(r"`((?:[a-z_]+/)*[a-z_]+\.py)", PAGE))
    known = set(modules()) | {f"tests/{t.name}" for t in (ROOT / "tests").glob("test_*.py")}
    stale = sorted(c for c in cited if c not in known and "/" in c)
    assert stale == [], f"ARCHITECTURE.md names modules that do not exist: {stale}"


def test_the_check_sees_a_module_left_out() -> None:
    bullets = package_bullets(PAGE)
    assert named("checkpointer/store.py", PAGE, bullets)
    assert not named("checkpointer/nowhere.py", PAGE, bullets)
    assert not named("nowhere.py", PAGE, bullets)
