"""The mutants of scripts/mkdocs_hooks.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # -- issue 36: the first hour --
    (
        "the docs build quotes a figure no run measured",
        "            raise KeyError(key)",
        "            return \"?\"",
        ("tests/test_docs_numbers.py",),
    ),
    (
        "the home page keeps the README's docs/ links, which are no pages of the site",
        '        return target[len("docs/"):]',
        "        return target",
        ("tests/test_docs_numbers.py",),
    ),
)
