"""The mutants of src/checkpointer/ttl.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "ttl block accepts unknown keys",
        "        if unknown:\n            raise InvalidInputError(",
        "        if False:\n            raise InvalidInputError(",
        ("tests/test_ttl_strategies.py", "-k", "bad_ttl"),
    ),
    (
        "ttl block accepts a bad sweep_limit",
        "        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:",
        "        if False:",
        ("tests/test_ttl_strategies.py", "-k", "bad_ttl"),
    ),
    # issue 25: nothing secret printed or stored in clear, nothing lost in silence
    (
        "issue 25: a TTL or interval above 100 years accepted",
        "    if value > largest:",
        "    if False:",
        ("tests/test_ttl_strategies.py", "tests/test_agent_server_factory.py", "-m", "not server", "-k", "bad_ttl"),
    ),
)
