"""The mutants of src/views/tree.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "CLI inspect orders ordinals as text",
        'return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in ordinal.split("."))',
        'return ((1, 0, ordinal),)',
        ("tests/test_cli_threads.py", "-m", "not server", "-k", "ordinals"),
    ),
    # issue 33: the inspector never shows or does more than the CLI
    (
        "a path's node occurrences are ordered by name, not as they ran",
        "for node in sorted(nodes, key=lambda n: (first[(path, n)], sibling_key(n)))",
        "for node in sorted(nodes, key=sibling_key)",
        ("tests/test_ui_accounts.py", "-k", "order"),
    ),
)
