"""The mutants of src/server.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 25: nothing secret printed or stored in clear, nothing lost in silence
    (
        "issue 25: a bare ttl in LANGGRAPH_CHECKPOINTER read as seconds",
        "            return _minutes(ttl) if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) else ttl",
        "            return ttl",
        ("tests/test_agent_server_factory.py", "-m", "not server", "-k", "reads_the_ttl"),
    ),
)
