"""The mutants of src/storage/thread_collections.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "a stamp without declarations is read as declaring nothing",
        "        self._add(self._assumed if declared is None else [n for n in declared if n not in skipped])",
        "        self._add([n for n in declared or () if n not in skipped])",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "before_declarations"),
    ),
    # -- issue 34: stored data comes back as it was and never acts as an instruction --
    (
        "issue 34: a stamp may declare a collection holding a NUL or a $",
        '    if "\\x00" in name or "$" in name:',
        "    if False:",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "could_not_have_made and (NUL or cmd)"),
    ),
    (
        "issue 34: a stamp may declare an empty collection name",
        "    if not name:\n",
        "    if False:\n",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "could_not_have_made and empty"),
    ),
    (
        "issue 34: a stamp may declare a system collection",
        '    if name.startswith("system."):',
        "    if False:",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "could_not_have_made and system"),
    ),
    (
        "issue 34: a stamp may declare a non-string",
        "    if not isinstance(name, str):\n",
        "    if False:\n",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "could_not_have_made and non-strings"),
    ),
    (
        "issue 34: a stamp's thread_collections may be a string or an object",
        "    if not isinstance(listed, list):\n",
        "    if False:\n",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "could_not_have_made and (string or object)"),
    ),
    (
        "issue 50: a declared collection that does not exist is learned (a TTL index would create it)",
        "        self._add(self._assumed if declared is None else [n for n in declared if n not in skipped])",
        "        self._add(self._assumed if declared is None else declared)",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "dropped"),
    ),
    # -- issue 44: a copy's entries get the copy's keys --
    (
        "issue 44: a copied journal entry keeps the source's idempotency key",
        "        if rewrite is not None:\n            rewrite(copied)",
        "        if False:\n            rewrite(copied)",
        ("tests/test_copied_keys.py", "-m", "not server", "-k", "failed_charge_copied and embedded-platform and sync"),
    ),
    (
        "issue 44: a collection trusted by its key index is copied as no role's",
        "        self._roles.setdefault(name, role)\n",
        "",
        ("tests/test_copied_keys.py", "-m", "not server", "-k", "built_no_journal and platform and sync"),
    ),
    (
        "issue 44: a collection a storage class registers is copied as no role's",
        "        self._roles[name] = role\n",
        "",
        ("tests/test_copied_keys.py", "-m", "not server", "-k", "named_apart"),
    ),
)
