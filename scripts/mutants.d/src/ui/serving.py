"""The mutants of src/ui/serving.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 33: the inspector never shows or does more than the CLI
    (
        "ui without --allow-writes upgrades an older format as it starts",
        "    require_our_format(views.db, names, upgrade=allow_writes)",
        "    require_our_format(views.db, names, upgrade=True)",
        ("tests/test_thread_summaries.py", "-k", "read_only_inspector and mongomock"),
    ),
)
