"""The mutants of src/checkpointer/expiry.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "one expiry: a write stamps its own clock's value, below one already read",
        '        return {"expire_at": self.known.raise_to(thread_id, computed)}',
        '        self.known.raise_to(thread_id, computed)\n        return {"expire_at": computed}',
        ("tests/test_checkpointer_graphs.py", "-m", "not server", "-k", "one_expiry"),
    ),
    (
        "one expiry: the journal stamps a newer expiry than the thread's",
        "if highest is not None and highest > lease.utcnow():",
        "if False:",
        ("tests/test_checkpointer_graphs.py", "-m", "not server", "-k", "one_expiry"),
    ),
    (
        "one expiry: spreading it may move an expiry back",
        '{"expire_at": {"$lt": value}}',
        '{"expire_at": {"$ne": value}}',
        ("tests/test_checkpointer_graphs.py", "-m", "not server", "-k", "never_lowers"),
    ),
    (
        "ttl keep_latest readers hide an expired thread",
        '        if self.ttl_config is None or self.ttl_config.strategy != "delete":\n            return False',
        "        if self.ttl_config is None:\n            return False",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest_prunes"),
    ),
    (
        "ttl refresh_on_read does not refresh",
        "        if self.ttl_config is None or not self.ttl_config.refresh_on_read:\n            return",
        "        return",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "refresh_on_read"),
    ),
)
