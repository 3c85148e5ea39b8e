"""The mutants of src/views/stored.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "CLI journal prints outcome bytes without --with-outcomes",
        'projection = {"_id": 0} if with_outcomes else {"_id": 0, "outcome.data": 0}',
        'projection = {"_id": 0}',
        ("tests/test_cli_journal.py", "-m", "not server", "-k", "outcome_bytes"),
    ),
    (
        "CLI journal prints outcome chunks without --with-outcomes",
        'query = {"thread_id": thread_id} if with_outcomes else {"thread_id": thread_id, "chunk": 0}',
        'query = {"thread_id": thread_id}',
        ("tests/test_cli_journal.py", "-m", "not server", "-k", "outcome_bytes"),
    ),
    # issue 25: nothing secret printed or stored in clear, nothing lost in silence
    # -- issue 32: positions named by LangGraph's identity of the work --
    (
        "resolve and discard find no entry at a position written as its labels",
        '        found = [e for e in labelled(entries) if "visit" in e and all(e[k] == position[k] for k in labels)]',
        "        found = []",
        ("tests/test_cli_journal.py", "-m", "not server", "-k", "at_its_key_or_its_labels"),
    ),
)
