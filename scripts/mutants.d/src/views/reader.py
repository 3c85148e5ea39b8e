"""The mutants of src/views/reader.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 23: the thread summary, kept by the root put's own command
    (
        "the inspector lists a format 1 database without upgrading it",
        "    if stored.foreign is None and stored.has_data and (stored.version or 0) < FORMAT_VERSION:",
        "    if False:",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "inspector_upgrades"),
    ),
    # issue 22: SecureLLM streams when the wrapped model would, and runs it inside its own callback run
    (
        "threads reads a foreign database as its own",
        "    if stored.foreign is not None:\n        message",
        "    if False:\n        message",
        ("tests/test_cli_deployments.py", "-k", "mongodbsaver"),
    ),
    # issue 33: the inspector never shows or does more than the CLI
    (
        "ui shows state values unredacted without --with-outcomes",
        "        return redacted_values(values, secrets)\n",
        "        return {name: shown(v) for name, v in values.items()}\n",
        ("tests/test_ui_guards.py", "-k", "redacted"),
    ),
    (
        "the read-only inspector upgrades an older format",
        "        if not upgrade:\n",
        "        if False:\n",
        ("tests/test_thread_summaries.py", "-k", "read_only_inspector and mongomock"),
    ),
    (
        "the status a live page polls answers for another thread the id starts",
        '        return rows[0] if rows and rows[0]["thread_id"] == thread_id else None',
        "        return rows[0] if rows else None",
        ("tests/test_ui_bounds.py", "-k", "polls"),
    ),
    # issue 33: entries paged, whole values on request, the timeline
    (
        'a whole value is sent past the size limit',
        '        if len(text) > MAX_FULL_CHARS:\n',
        '        if False:\n',
        ('tests/test_ui_bounds.py', '-k', 'whole_on_request'),
    ),
    (
        'a whole value is sent unredacted without --with-outcomes',
        'full_text(values, channel, redacted=not self.with_outcomes)',
        'full_text(values, channel, redacted=False)',
        ('tests/test_ui_bounds.py', '-k', 'whole_on_request'),
    ),
    # -- issue 45: the on-call view --
    (
        "the views' saver decodes state values with LangGraph's default serde",
        'collections=self.names, auto_setup=False, serde=self._serde',
        'collections=self.names, auto_setup=False',
        ('tests/test_ui_hostile.py', '-m', 'not server', '-k', 'crafted'),
    ),
    (
        "errors and interrupts are not scrubbed of the thread's credential values",
        '        secrets = None if self.with_outcomes else credential_values(values)',
        '        secrets = None if self.with_outcomes else frozenset()',
        ('tests/test_ui_hostile.py', '-m', 'not server', '-k', 'echoes'),
    ),
    (
        'a filtered list judges only its first page of threads',
        '            if full or not page["more"] or wanted is None or found["scanned"] >= MAX_SCANNED:',
        '            if True:',
        ('tests/test_views_states.py', '-m', 'not server', '-k', 'filter'),
    ),
    (
        "issue 25: threads crashes on a non-string thread id (the CLI's list is the views')",
        '        listed = [s for s in page["summaries"] if isinstance(s.get("thread_id"), str)]',
        '        listed = list(page["summaries"])',
        ("tests/test_cli_corrupt.py", "-m", "not server"),
    ),
)
