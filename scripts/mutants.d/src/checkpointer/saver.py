"""The mutants of src/checkpointer/saver.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "ttl keep_latest creates a TTL index",
        '        if self.ttl_config is not None and self.ttl_config.strategy == "keep_latest":',
        "        if False:",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "creates_no_ttl_index"),
    ),
    # -- records trailing their effects, roots foreseen (issue 20) --
    # -- issue 32: positions named by LangGraph's identity of the work --
    (
        "a sync run called from a coroutine is taken for one storing on that coroutine's loop (its effects would not wait)",
        "        self._notice_run_start(config, on_loop=False)",
        "        self._notice_run_start(config, on_loop=True)",
        ("tests/test_failed_root_store.py", "-m", "not server", "-k", "sync_face"),
    ),
    (
        "issue 35: a child run's start reaches no observer",
        "            for observer in self.hooks.child_runs:",
        "            for observer in []:",
        ("tests/test_saver_hooks.py", "-m", "not server", "-k", "hooks"),
    ),
)
