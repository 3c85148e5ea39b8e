"""A release a team can pin: a semantic version that says the storage format it writes, and CHANGELOG.md in the
form of Keep a Changelog, with upgrade notes wherever the storage format changed (scripts/release-check builds
and installs what would be published)."""

from __future__ import annotations

import re
import tomllib
from datetime import date
from pathlib import Path

import pytest

import langgraph_durable_mongodb
from langgraph_durable_mongodb.cli import main
from langgraph_durable_mongodb.storage.format import FORMAT_VERSION

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
CHANGELOG = (ROOT / "CHANGELOG.md").read_text()
RELEASE = re.compile(r"^## \[(\d+)\.(\d+)\.(\d+)\] - (\d{4}-\d\d-\d\d)$", re.M)
#: Keep a Changelog's kinds of change, and the upgrade notes a storage format change brings.
KINDS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
UPGRADE = re.compile(r"^Upgrade notes \(format (\d+) to (\d+)\)$")


def releases(text: str) -> list[tuple[tuple[int, int, int], date, str]]:
    """``(version, date, section text)`` of each release, as listed (newest first)."""
    found = list(RELEASE.finditer(text))
    ends = [m.start() for m in found[1:]] + [len(text)]
    return [
        ((int(m[1]), int(m[2]), int(m[3])), date.fromisoformat(m[4]), text[m.end() : end]) for m, end in zip(found, ends)
    ]


def written_format(section: str) -> int:
    found = re.search(r"^Storage format (\d+)\b", section, re.M)
    assert found, f"a release says the storage format it writes ('Storage format N.'): {section[:200]!r}"
    return int(found[1])


def test_the_version_is_semantic_and_while_0_its_minor_is_the_storage_format_it_writes() -> None:
    major, minor, _ = (int(part) for part in re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", VERSION).groups())
    assert major == 0, "from 1.0 on, a storage format change is a major version: say so here and in CHANGELOG.md"
    assert minor == FORMAT_VERSION, (
        f"version {VERSION} writes storage format {FORMAT_VERSION}: a format change is the next minor version, with "
        "upgrade notes in CHANGELOG.md"
    )
    assert langgraph_durable_mongodb.__version__ == VERSION  # the installed metadata (a stale install would differ)
    assert langgraph_durable_mongodb.STORAGE_FORMAT == FORMAT_VERSION


def test_the_cli_says_its_version_and_the_storage_format_it_writes(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"langgraph-durable-mongodb {VERSION} (writes storage format {FORMAT_VERSION})"


def test_the_changelog_is_in_keep_a_changelog_form_newest_first() -> None:
    assert CHANGELOG.startswith("# Changelog\n")
    assert CHANGELOG.index("## [Unreleased]") < RELEASE.search(CHANGELOG).start()
    listed = releases(CHANGELOG)
    assert listed and listed[0][0] == tuple(int(p) for p in VERSION.split(".")), "the newest release is pyproject's"
    assert [v for v, _, _ in listed] == sorted((v for v, _, _ in listed), reverse=True)
    assert [d for _, d, _ in listed] == sorted((d for _, d, _ in listed), reverse=True)
    for version, _, section in listed:
        kinds = re.findall(r"^### (.+)$", section, re.M)
        assert kinds and all(k in KINDS or UPGRADE.match(k) for k in kinds), (version, kinds)


def test_each_release_says_its_storage_format_and_each_format_change_has_upgrade_notes() -> None:
    listed = releases(CHANGELOG)
    assert written_format(listed[0][2]) == FORMAT_VERSION
    for (version, _, section), (_, _, older) in zip(listed, listed[1:] + [((0, 0, 0), date.min, "Storage format 1.")]):
        written, before = written_format(section), written_format(older)
        assert written == version[1], f"{version}: while the major is 0, the minor is the storage format"
        notes = [tuple(map(int, UPGRADE.match(k).groups())) for k in re.findall(r"^### (.+)$", section, re.M) if UPGRADE.match(k)]
        if written != before:
            assert notes == [(before, written)], f"{version} changes the storage format: upgrade notes from {before}"
        else:
            assert notes == [], f"{version} writes the format {before} wrote: no upgrade"


def test_the_release_check_holds_what_a_release_needs() -> None:
    """scripts/release-check builds both distributions, checks them with twine, and runs the README's example
    against the wheel on every Python CI tests: the Pythons it loops over are the classifiers'."""
    script = (ROOT / "scripts" / "release-check").read_text()
    steps = (ROOT / "scripts" / "release_check.py").read_text()
    classifiers = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["classifiers"]
    tested = sorted(c.rsplit(" ", 1)[1] for c in classifiers if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c))
    assert re.search(r"^PYTHONS=\((.*)\)$", script, re.M)[1].split() == tested
    for step in ('"-m", "build"', '"twine", "check", "--strict"', "use_it_snippet()", "WHEEL_CHECK"):
        assert step in steps
