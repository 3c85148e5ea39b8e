"""The mutants of src/journal/journal.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "the journal takes a claim_always that is not a bool",
        "        if not isinstance(claim_always, bool):\n",
        "        if False:\n",
        ("tests/test_bad_input_options.py", "-k", "journal_refuses"),
    ),
    (
        "the journal takes any class as a terminal error",
        "    if not all(isinstance(t, type) and issubclass(t, BaseException) for t in types):",
        "    if not all(isinstance(t, type) for t in types):",
        ("tests/test_bad_input_options.py", "-k", "journal_refuses"),
    ),
    (
        "a short digest_key keys the journal's input digests",
        "(not isinstance(digest_key, bytes) or len(digest_key) < 16)",
        "not isinstance(digest_key, bytes)",
        ("tests/test_bad_input_options.py", "-k", "journal_refuses"),
    ),
    (
        "the journal declares no per-thread collection",
        '        storage_format.thread_collections.register(self.collection, "journal")',
        "        pass",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "another_process"),
    ),
    # -- issue 34: stored data comes back as it was and never acts as an instruction --
    (
        "issue 34: the journal writes with the client's concern",
        '            role="journal",\n',
        "",
        ("tests/test_write_concerns.py", "-m", "not server"),
    ),
    (
        "issue 35: a journal built from a saver does not share its run fence",
        '        options.setdefault("run_fence", saver.run_fence)\n',
        "",
        ("tests/test_saver_hooks.py", "tests/test_self_fencing.py", "-m", "not server"),
    ),
)
