"""The mutants of src/platform.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "the plain compile form runs a graph whose children platform.compile refuses (own saver, checkpointer=True/False)",
        "        self.checkpointer.observe_root_runs(self._validate_run)\n",
        "",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "refuse_a_child_the_platform_cannot_identify"),
    ),
    (
        "the run lock's guard is gone: effects are neither stopped by it nor journaled as the run's alone",
        "EffectScope(self.journal, self.locator, check_held if self.run_locks is not None else None)",
        "EffectScope(self.journal, self.locator, None)",
        # the journal's own self-fence stops the effect too (issue 21): the claim it no longer skips shows it
        ("tests/test_journal_costs.py", "-m", "not server", "-k", "under_the_run_lock_an_effect_costs_one"),
    ),
    (
        "a keep_latest sweep leaves the journal entries of visits prepared from pruned checkpoints",
        '{"root_key": {"$in": sorted(finished)}}',
        '{"root_key": {"$in": []}}',
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest"),
    ),
    (
        "from_conn_string takes a URI that is not a string",
        "        if not isinstance(uri, str) or not uri:\n",
        "        if False:\n",
        ("tests/test_platform_lifecycle.py", "-k", "not_a_string"),
    ),
    (
        "close() closes the clients under a sync run's background release",
        "        self.checkpointer.stop_sweepers()\n        self._finish_releases()\n        super().close()",
        "        self.checkpointer.stop_sweepers()\n        super().close()",
        ("tests/test_run_lock.py", "-k", "closing_the_platform and close and not aclose"),
    ),
    (
        "aclose() closes the clients under a sync run's background release",
        "        await asyncio.to_thread(self._finish_releases)\n",
        "",
        ("tests/test_run_lock.py", "-k", "closing_the_platform and aclose"),
    ),
    (
        "the journal replays with its own serde, not the run's saver's",
        "replace(self._effects, journal=self.journal.with_serde(saver.serde))",
        "replace(self._effects, journal=self.journal)",
        ("tests/test_journal_serde_modes.py", "-m", "not server"),
    ),
    (
        "a copy of a durable graph drops the strict msgpack allowlist",
        '        return _langgraph.keep_allowlist(self, copied)',
        '        return copied',
        ("tests/test_journal_serde_modes.py", "-m", "not server", "-k", "with_config"),
    ),
    (
        "ttl keep_latest sweep keeps what finished tasks left in the journal",
        "        self.checkpointer.observe_sweep_prunes(self._forget_finished)\n",
        "",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest"),
    ),
    (
        "closing the platform leaves the checkpointer's sweepers running",
        "        self.checkpointer.stop_sweepers()\n        await self.checkpointer.astop_sweepers()\n        await asyncio.to_thread",
        "        await asyncio.to_thread",
        # the Agent Server factory's sweeper too: the platform's aclose() at the end of its block stops it
        (
            "tests/test_ttl_strategies.py",
            "tests/test_agent_server_factory.py",
            "-k",
            "closing_the_platform or sweeper_of_the_ttl_block",
        ),
    ),
    (
        "a sync close of the platform leaves the sweeper thread running",
        "        self.checkpointer.stop_sweepers()\n        self._finish_releases()\n        super().close()",
        "        self._finish_releases()\n        super().close()",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "closing_the_platform and sync"),
    ),
    # -- issue 36: the first hour --
    (
        "an option the platform does not take reaches an inner class",
        "    unknown = [name for name in options if name not in known]",
        "    unknown = []",
        ("tests/test_bad_input_options.py", "-k", "typo"),
    ),
    (
        "a platform's with block does not close it",
        "    def __exit__(self, *exc: object) -> None:\n        self.close()",
        "    def __exit__(self, *exc: object) -> None:\n        pass",
        ("tests/test_bad_input_options.py", "-k", "context_manager"),
    ),
    (
        "issue 35: a platform with exclusive runs gives its checkpointer no run fence",
        "fence = check_held if exclusive_runs else None",
        "fence = None",
        ("tests/test_saver_hooks.py", "tests/test_self_fencing.py", "-m", "not server"),
    ),
)
