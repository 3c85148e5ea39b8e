"""The mutants of src/_bson.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "an empty thread id reaches the saver",
        "    if isinstance(value, str) and value:",
        "    if isinstance(value, str):",
        ("tests/test_thread_ids.py", "-m", "not server", "-k", "empty"),
    ),
)
