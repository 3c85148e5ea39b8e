"""The mutants of src/storage/format.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "the format check lets a newer format version in",
        "        if stored.version is not None and stored.version > FORMAT_VERSION:",
        "        if False:",
        ("tests/test_storage_format.py", "-m", "not server", "-k", "newer"),
    ),
    (
        "the format check sees no foreign data",
        "    return StoredFormat(foreign=_shape_of(sample[0]), has_data=True, thread_collections=None)",
        "    return StoredFormat(has_data=True, thread_collections=None)",
        ("tests/test_storage_format.py", "-m", "not server", "-k", "mongodbsaver or no_one"),
    ),
    (
        "MongoDBSaver checkpoints are not recognised as such",
        '    if "type" in checkpoint:',
        "    if False:",
        ("tests/test_storage_format.py", "-m", "not server", "-k", "mongodbsaver"),
    ),
    (
        "a fresh database's stamp declares no per-thread collection",
        "            if (yield from ask(InsertOne(self.collections.metadata, format_document(names, version)))):",
        "            if (yield from ask(InsertOne(self.collections.metadata, format_document((), version)))):",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "another_process_deletes or stored_once"),
    ),
    (
        "a stamp another process inserted first is taken to declare this one's collections",
        "            if (yield from ask(InsertOne(self.collections.metadata, format_document(names, version)))):",
        "            if (yield from ask(InsertOne(self.collections.metadata, format_document(names, version)))) or True:",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "stamped_first"),
    ),
    (
        "a collection declared after the format check is never stored",
        "        if self._checked:\n            yield from self._declare_plan()\n            return",
        "        if self._checked:\n            return",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "saver_in_use"),
    ),
    # issue 23: the thread summary, kept by the root put's own command
    (
        "a format 1 database is stamped newer without its migration",
        "            yield from MIGRATIONS[step - 1](self.collections)\n",
        "",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "format_1 or unstamped"),
    ),
    # -- issue 34: stored data comes back as it was and never acts as an instruction --
    (
        "issue 34: a declared name is trusted without its key index",
        "            held = sorted(THREAD_KEY_INDEXES & set(indexes))",
        "            held = sorted(THREAD_KEY_INDEXES | set(indexes))",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "application or renamed or run_locks or ttl_index"),
    ),
    (
        "issue 34: a collection trusted once is looked up again every time",
        "                self.thread_collections.trust(name, KEY_INDEX_ROLES[held[0]])\n",
        "                pass\n",
        ("tests/test_thread_collections.py", "-k", "renamed_is_trusted and mongo_java_server"),
    ),
    (
        "issue 34: a malformed stamp read at the format check is taken as it is",
        "        if stored.problem is not None:\n            raise self._malformed(stored.problem)\n",
        "",
        ("tests/test_thread_collections.py", "tests/test_storage_format.py", "-m", "not server", "-k", "could_not_have_made or never_wrote"),
    ),
    (
        "issue 34: a stamp made malformed after the format check is taken as it is",
        "            if problem is not None:\n                raise self._malformed(problem)\n            yield from self._learn_plan(_declared(found[0]))",
        "            yield from self._learn_plan(_declared(found[0]) if problem is None else ())",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "could_not_have_made"),
    ),
    (
        "issue 34: a stamp version of 0 or less passes",
        "isinstance(version, int) and not isinstance(version, bool) and version >= 1:",
        "isinstance(version, int) and not isinstance(version, bool):",
        ("tests/test_storage_format.py", "-m", "not server", "-k", "never_wrote"),
    ),
    (
        "issue 34: a stamp version True passes for 1",
        "isinstance(version, int) and not isinstance(version, bool) and version >= 1:",
        "isinstance(version, int) and version >= 1:",
        ("tests/test_storage_format.py", "-m", "not server", "-k", "never_wrote"),
    ),
    # -- issue 50: a declared collection that does not exist holds nothing to protect --
    (
        "issue 50: a declared collection that was dropped refuses the database",
        "            if not indexes:\n                absent.append(name)\n            elif",
        "            if False:\n                absent.append(name)\n            elif",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "dropped"),
    ),
    (
        "issue 50: a declared collection without the key indexes is skipped as if it did not exist",
        "            if not indexes:\n",
        "            if not THREAD_KEY_INDEXES & set(indexes):\n",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "still_refused"),
    ),
    # -- issue 44: an effect in flight across an upgrade keeps its key --
    (
        "issue 44: a database of format 3 or older is upgraded with runs in flight",
        "        if version < KEYED_BY_VISITS:\n            yield from self._drained_plan(version)",
        "        if False:\n            yield from self._drained_plan(version)",
        ("tests/test_upgrade_in_flight.py", "-m", "not server", "-k", "never_runs and format2 and effect"),
    ),
    (
        "issue 44: an unstamped database with runs in flight is stamped before it is refused",
        "        if version < KEYED_BY_VISITS:\n            yield from self._drained_plan(version)\n"
        "        if stored.version is None:\n            names = self.thread_collections.names\n"
        "            if (yield from ask(InsertOne(self.collections.metadata, format_document(names, version)))):\n"
        "                self.thread_collections.stored(names)  # else another process stamped it first: declared below\n",
        "        if stored.version is None:\n            names = self.thread_collections.names\n"
        "            if (yield from ask(InsertOne(self.collections.metadata, format_document(names, version)))):\n"
        "                self.thread_collections.stored(names)  # else another process stamped it first: declared below\n"
        "        if version < KEYED_BY_VISITS:\n            yield from self._drained_plan(version)\n",
        ("tests/test_upgrade_in_flight.py", "-m", "not server", "-k", "unstamped"),
    ),
)
