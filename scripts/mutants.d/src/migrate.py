"""The mutants of src/migrate.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "import-mongodbsaver accepts a $ collection name",
        'if text.startswith("$") or "\\x00" in text:',
        'if "\\x00" in text:',
        ("tests/test_mongodbsaver_import.py", "-k", "bad_input"),
    ),
    (
        "import-mongodbsaver does not check thread ids",
        'ids = None if thread_ids is None else require_str_list("thread_ids", thread_ids)',
        "ids = None if thread_ids is None else list(thread_ids)",
        ("tests/test_mongodbsaver_import.py", "-k", "bad_input"),
    ),
    (
        "import-mongodbsaver imports a database into itself",
        "if source_db.name == saver.db_name and saver.collections.checkpoints == checkpoints:",
        "if False:",
        ("tests/test_mongodbsaver_import.py", "-k", "into_itself"),
    ),
    (
        "import-mongodbsaver writes again a checkpoint already present",
        "        if have is None:",
        "        if True:",
        ("tests/test_mongodbsaver_import.py", "-k", "second_run"),
    ),
    (
        "import-mongodbsaver writes again writes already present",
        "            if not wanted - have:",
        "            if False:",
        ("tests/test_mongodbsaver_import.py", "-k", "second_run"),
    ),
    (
        "import-mongodbsaver keeps MongoDBSaver's int channel versions",
        'return f"{version:032}" if isinstance(version, int) and not isinstance(version, bool) else version',
        "return version",
        ("tests/test_mongodbsaver_import.py", "-k", "copies_every_thread"),
    ),
    (
        "import-mongodbsaver does not compare metadata",
        'fields = ("config", "checkpoint", "metadata", "parent_config")',
        'fields = ("config", "checkpoint", "parent_config")',
        ("tests/test_mongodbsaver_import.py", "-k", "cli"),
    ),
    (
        "import-mongodbsaver reads a namespace whole instead of in pages",
        'Find(self.checkpoints, query, {"_id": 0}, [("checkpoint_id", direction)], self.batch_size)',
        'Find(self.checkpoints, query, {"_id": 0}, [("checkpoint_id", direction)])',
        ("tests/test_mongodbsaver_import.py", "-k", "pages"),
    ),
    (
        "import-mongodbsaver does not report a checkpoint missing from the destination",
        'self.report.mismatches.append(f"{thread_id} {ns!r} {want_id}: missing from the destination")',
        "pass",
        ("tests/test_mongodbsaver_import.py", "-k", "verification"),
    ),
)
