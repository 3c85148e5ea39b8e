"""The mutants of src/storage/connections.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "CLI takes a string that is no URI for a host name",
        "    if not uri.startswith(URI_SCHEMES):",
        "    if False:",
        ("tests/test_cli.py", "-k", "bad_uri"),
    ),
    (
        "a closed platform makes a client for a new loop",
        "                if self._closed:\n",
        "                if False:\n",
        ("tests/test_platform_lifecycle.py", "-k", "two_asyncio_runs"),
    ),
    (
        "aclose leaves the running loop's client open",
        "            if loop is here:\n                await entry.closer.aclose()",
        "            if loop is here:\n                self._closing_at_loop_end.append(entry)",
        ("tests/test_platform_lifecycle.py", "-k", "async_with_closes or saver_alone"),
    ),
    (
        "close skips a loop that is not running",
        "        elif not loop.is_closed():\n",
        "        elif False:\n",
        ("tests/test_platform_lifecycle.py", "-k", "not_running"),
    ),
    (
        "close skips a loop running in another thread",
        "            asyncio.run_coroutine_threadsafe(entry.closer.aclose(), loop).result(CLOSE_TIMEOUT_SECONDS)",
        "            pass",
        ("tests/test_platform_lifecycle.py", "-k", "another_thread"),
    ),
    (
        "a loop's client is not closed when the loop ends",
        "        self.closer = _until_loop_ends(client)\n        # run the closer to its yield now, inside the running loop, which registers it\n        with contextlib.suppress(StopIteration):\n            self.closer.asend(None).send(None)\n",
        "        self.closer = _until_loop_ends(client)\n",
        ("tests/test_platform_lifecycle.py", "-k", "two_asyncio_runs or inside_a_coroutine"),
    ),
    (
        "probing a private attribute of a loop's clients makes a client",
        "        if name.startswith(\"_\"):\n            raise AttributeError(name)\n        return getattr(self._clients.resolve(self._path, self._options), name)",
        "        return getattr(self._clients.resolve(self._path, self._options), name)",
        ("tests/test_platform_lifecycle.py", "-k", "probing"),
    ),
    (
        "the async clients from_conn_string opens do not name us",
        "AsyncMongoClient(uri, driver=DRIVER_INFO, **timeout))",
        "AsyncMongoClient(uri, **timeout))",
        ("tests/test_driver_info.py", "-k", "each_loops_async_client"),
    ),
    (
        "mongomock clients are told our name too",
        "    if isinstance(client, (MongoClient, AsyncMongoClient)):",
        "    if True:",
        ("tests/test_checkpointer_connections.py", "-k", "kinds_are_detected"),
    ),
    (
        "a client we are given or make does not name us (the CLI's is named where every client is)",
        "            client.append_metadata(DRIVER_INFO)",
        "            pass",
        ("tests/test_driver_info.py", "-k", "cli or appended"),
    ),
    # issue 25: nothing secret printed or stored in clear, nothing lost in silence
    (
        "issue 25: a URI's password printed (user info not masked)",
        "        tail = f\"***@{tail.rpartition('@')[2]}\"",
        "        pass",
        ("tests/test_cli_credentials.py", "-m", "not server"),
    ),
    (
        "issue 25: a secret URI option printed",
        "    return prefix + _SECRET_OPTION.sub(r\"\\1\\2=<redacted>\", tail)",
        "    return prefix + tail",
        ("tests/test_cli_credentials.py", "-m", "not server"),
    ),
    # issue 22: SecureLLM streams when the wrapped model would, and runs it inside its own callback run
    (
        "db_name= loses to the URI's path",
        "    if db_name:\n        return db_name\n",
        "",
        ("tests/test_database_naming.py",),
    ),
    # -- issue 34: stored data comes back as it was and never acts as an instruction --
    (
        "issue 34: a per-loop client's collection is made without its options",
        "        return LoopBound(self._clients, (*self._path, name), options)",
        "        return LoopBound(self._clients, (*self._path, name))",
        ("tests/test_write_concerns.py", "-k", "per_loop and mongo_java_server"),
    ),
    # -- issue 36: the first hour --
    (
        "the clients from_conn_string opens wait pymongo's 30 s for an unreachable server",
        "        timeout = selection_timeout(uri, APP_SERVER_SELECTION_MS)",
        "        timeout = {}",
        ("tests/test_checkpointer_connections.py", "-k", "unreachable and sync"),
    ),
)
