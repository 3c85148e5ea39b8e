"""The mutants of src/storage/thread_summaries.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 23: the thread summary, kept by the root put's own command
    (
        "a root put sent again counts its checkpoint twice in the thread summary",
        '        {**summary_filter(thread_id), LATEST: {"$lt": checkpoint_id}},',
        '        summary_filter(thread_id),',
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "stored_again"),
    ),
)
