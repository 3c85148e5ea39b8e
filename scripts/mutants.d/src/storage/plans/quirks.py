"""The mutants of src/storage/plans/quirks.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 35: one identification of the server
    (
        "the interpreters identify mongo-java-server as MongoDB (serverStatus not asked)",
        '    return identify(info, status.value.get("process")), info',
        "    return identify(info), info",
        ("tests/test_server_tier.py", "-m", "server", "-k", "recognised"),
    ),
    (
        "issue 50: mongo-java-server is sent the shard key fields beside _id (it then scans the collection)",
        'MONGO_JAVA_SERVER = ServerQuirks("mongo-java-server", hello=False, ttl_expiry=False, transactions=False, id_alone=True)',
        'MONGO_JAVA_SERVER = ServerQuirks("mongo-java-server", hello=False, ttl_expiry=False, transactions=False)',
        ("tests/test_shard_keys.py", "-k", "id_alone and mongo_java_server"),
    ),
)
