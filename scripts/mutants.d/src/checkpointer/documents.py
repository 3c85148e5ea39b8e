"""The mutants of src/checkpointer/documents.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "a checkpoint document's inline values outgrow inline_document_bytes",
        "        if size <= limits.value_bytes and size <= room:",
        "        if size <= limits.value_bytes:",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "inline_document_bytes"),
    ),
    # issue 25: nothing secret printed or stored in clear, nothing lost in silence
    (
        "issue 25: a blob document read unchecked",
        "    check_values(collection, docs, BLOB_FIELDS)\n",
        "",
        ("tests/test_stored_integrity.py", "-m", "not server", "-k", "damaged_blob"),
    ),
    (
        "issue 25: a value the checkpoint references but cannot load dropped in silence",
        "        if typed is None:\n            raise _missing_value(doc, entry)\n",
        "        if typed is None:\n            continue\n",
        ("tests/test_stored_integrity.py", "-m", "not server", "-k", "cannot_load"),
    ),
    (
        "issue 25: replaced bytes of an inline value loaded as another value",
        "                check_checksum(collection, d, f\"values.{i}.{VALUE_DATA}\", bytes(e[VALUE_DATA]), e.get(CHECKSUM))\n",
        "",
        ("tests/test_stored_integrity.py", "-m", "not server", "-k", "checksum"),
    ),
    (
        "issue 25: replaced bytes of a blob loaded as another value",
        "    check_assembled(collection, docs, BLOB_KEY, values)\n",
        "",
        ("tests/test_stored_integrity.py", "-m", "not server", "-k", "checksum"),
    ),
    # -- issue 34: stored data comes back as it was and never acts as an instruction --
    (
        "issue 34: a datetime in metadata is stored as a BSON date",
        "_NATIVE = (str, bool, float, bytes, type(None))",
        "_NATIVE = (str, bool, float, bytes, type(None), datetime)",
        ("tests/test_checkpointer_metadata.py", "-m", "not server", "-k", "exactly"),
    ),
    (
        "issue 34: an int past 64 bits in metadata reaches BSON",
        "    if type(value) in _NATIVE or (type(value) is int and value in _INT64):",
        "    if type(value) in _NATIVE or type(value) is int:",
        ("tests/test_checkpointer_metadata.py", "-m", "not server", "-k", "cannot_write"),
    ),
    (
        "issue 34: a dict with keys that are no strings is stored as a document",
        "    if type(value) is dict and all(isinstance(k, str) for k in value):",
        "    if type(value) is dict:",
        ("tests/test_checkpointer_metadata.py", "-m", "not server", "-k", "exactly"),
    ),
    (
        "issue 34: metadata stored through the serde is read back as its stored form",
        "        if set(stored) == {SERDE_TYPE, SERDE_DATA}:",
        "        if False:",
        ("tests/test_checkpointer_metadata.py", "-m", "not server", "-k", "exactly or nested_filter"),
    ),
    (
        "issue 34: an int past 32 bits comes back as pymongo's Int64",
        "    return int(stored) if type(stored) is Int64 else stored",
        "    return stored",
        ("tests/test_checkpointer_metadata.py", "-k", "exactly and pymongo-mongo_java_server"),
    ),
    (
        "issue 34: a checkpoint whose channel_values is no dict reaches the codec",
        "        if not isinstance(value, Mapping):\n            raise InvalidInputError(\n                f\"{name} must be a dict",
        "        if False:\n            raise InvalidInputError(\n                f\"{name} must be a dict",
        ("tests/test_checkpointer_metadata.py", "-m", "not server", "-k", "malformed"),
    ),
    (
        "issue 34: a channel value without a version is stored",
        "    if unversioned:\n",
        "    if False:\n",
        ("tests/test_checkpointer_metadata.py", "-m", "not server", "-k", "malformed"),
    ),
    (
        "a set in metadata is written in the order it iterates: a filter on an equal set built apart misses it",
        "        value = canonical_set(value)  # equal sets, equal bytes: a filter on one matches",
        "        pass",
        ("tests/test_checkpointer_metadata.py", "-m", "not server", "-k", "whatever_order"),
    ),
    # -- issue 45: the on-call view --
    (
        'a consumed Send topic (an empty list) is taken for Sends still due',
        '        and not (holding and e.get(VALUE_TYPE) == "msgpack" and e.get(CHECKSUM) == EMPTY_LIST_CHECKSUM)\n',
        '',
        ('tests/test_views_states.py', '-m', 'not server', '-k', 'every_shape and send'),
    ),
)
