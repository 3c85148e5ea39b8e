"""The mutants of src/storage/schema.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "the pending writes' index is gone from the registry",
        '    "writes": (IndexModel(_ascending(*WRITE_KEY, "chunk"), unique=True, name="thread_ns_checkpoint_task_idx"),),',
        '    "writes": (),',
        ("tests/test_index_use.py", "-k", "not async"),
    ),
    (
        "the journal's position index is gone from the registry",
        '        IndexModel(_ascending(*POSITION_FIELDS, "chunk"), unique=True, name="thread_effect_position"),\n',
        "",
        ("tests/test_index_use.py", "-k", "async"),
    ),
    # -- issue 34: stored data comes back as it was and never acts as an instruction --
    (
        "issue 34: majority drops the client's wtimeout and j",
        '    return WriteConcern(**{**given.document, "w": "majority"})',
        '    return WriteConcern(w="majority")',
        ("tests/test_write_concerns.py", "-m", "not server", "-k", "lower"),
    ),
    (
        "issue 50: a document named by its key is named by _id alone, without the shard key",
        "    return {\"_id\": key_id(*key), **dict(zip(KEY_PREFIX, key, strict=False))}",
        "    return {\"_id\": key_id(*key)}",
        ("tests/test_shard_keys.py", "-m", "not server", "-k", "sync and platform"),
    ),
)
