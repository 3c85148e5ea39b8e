"""The mutants of src/resolver/namespace.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # -- issue 44: an effect inside a @task --
    (
        "a @task call's writes are held under its caller's namespace, not that of the loop that saves them",
        "    loop_ns = segments[-1 - calls].parent_ns",
        "    loop_ns = segments[-1].parent_ns",
        ("tests/test_callers.py", "-m", "not server", "-k", "record_is_lost_keeps_its_caller"),
    ),
)
