"""The mutants of src/storage/heartbeats.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # -- issue 37: no thread started per run in steady state --
    (
        "a new lease-renewer thread per heartbeat",
        "            if self._thread is None or not self._thread.is_alive():",
        "            if True:",
        ("tests/test_thread_starts.py", "-m", "not server", "-k", "sync_turns and not async"),
    ),
)
