"""The mutants of src/storage/plans/quirks.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 35: one identification of the server
    (
        "the interpreters identify mongo-java-server as MongoDB (serverStatus not asked)",
        '    return identify(info, status.value.get("process")), info',
        "    return identify(info), info",
        ("tests/test_server_tier.py", "-m", "server", "-k", "recognised"),
    ),
)
