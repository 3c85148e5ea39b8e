"""The mutants of src/views/states.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 33: the inspector never shows or does more than the CLI
    (
        "a crashed run shows as interrupted",
        "    if due and INTERRUPT not in written and lock is not None and lock.get(\"owner\") is not None:",
        "    if False:",
        ("tests/test_ui_stops.py", "-k", "crashed"),
    ),
    (
        "an interrupted thread whose lock was released shows as crashed",
        "    if due and INTERRUPT not in written and lock is not None and lock.get(\"owner\") is not None:",
        "    if due and INTERRUPT not in written and lock is not None:",
        ("tests/test_ui_stops.py", "-k", "crashed"),
    ),
    (
        "an effect never completed shows as replayed",
        '    if entry.get("status") != "completed":\n        return False\n    counted',
        "    counted",
        ("tests/test_ui_accounts.py",),
    ),
)
