"""The mutants of src/journal/locator.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "a scope bound with the platform's locator journals a graph on another checkpointer",
        '        if self.saver is not None and getattr(running, "base_saver", running) is not self.saver:',
        "        if False:",
        ("tests/test_platform_forms.py", "-m", "not server", "-k", "platform_locator_refuses"),
    ),
    (
        "a resumed root-level occurrence is taken for a new one, so its recorded effects are not read",
        "    return fresh and stored is not None and stored.written",
        "    return not resolved.retried",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "root_node_resumed_after_its_interrupt"),
    ),
    (
        "a strict msgpack clone of the saver is not the platform's",
        'getattr(running, "base_saver", running) is not self.saver',
        "running is not self.saver",
        ("tests/test_journal_serde_modes.py", "-m", "not server", "-k", "plain"),
    ),
    # issue 20: an edit made as the interrupted node completes it; its next visit is a new occurrence
    (
        "a sync effect on the event loop waits for the store that loop has to run",
        "            if unstored and on_event_loop() and saver.stores_on_event_loop(thread_id):",
        "            if False:",
        ("tests/test_platform_replay.py", "-k", "does_not_wait_on_the_loop and mongo_java_server"),
    ),
    # -- issue 32: positions named by LangGraph's identity of the work --
    (
        "a node's first effect runs before the root checkpoint its position derives from is stored",
        "                saver.wait_stored(thread_id, root)",
        "                pass",
        ("tests/test_failed_root_store.py", "-m", "not server", "-k", "sync_face"),
    ),
    (
        "an async node's first effect runs before the root checkpoint its position derives from is stored",
        "                await saver.await_stored(thread_id, root)",
        "                pass",
        ("tests/test_failed_root_store.py", "-m", "not server", "-k", "async_face"),
    ),
    (
        "the visits beneath a retried task are taken for new ones, so the entries of its earlier attempts are not read",
        " and first_attempt and not resolved.retried",
        " and first_attempt",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "retry_of_a_function_node"),
    ),
    # -- issue 44: every caller --
    (
        "an at_most_once sync effect on the event loop runs before its root checkpoint is stored",
        "        if node.unconfirmed and node.root_key is not None and saver is not None and not saver.stored_now(\n            node.thread_id, node.root_key\n        ):",
        "        if False:",
        ("tests/test_callers.py", "-m", "not server", "-k", "refused_before"),
    ),
    (
        "an effect inside a @task holds only its call's writes, so the node that called it is saved done without its record",
        "            for task in tasks:\n                saver.hold_task_writes(thread_id, task, record)",
        "            saver.hold_task_writes(thread_id, tasks[-1], record)",
        ("tests/test_callers.py", "-m", "not server", "-k", "record_is_lost_keeps_its_caller"),
    ),
    # -- issue 45: every entry stores its label --
    (
        'labels known before another process ran the thread are kept',
        '            if known is not None and lineage is not None and (known[0] == lineage or lineage[1] == "ours"):',
        '            if known is not None:',
        ('tests/test_journal_labels.py', '-k', 'whichever_process'),
    ),
    (
        'a thread another process ran is numbered as if it were new',
        '                labels = ThreadLabels(fresh=lineage is not None and lineage[1] == "fresh")',
        '                labels = ThreadLabels(fresh=True)',
        ('tests/test_position_costs.py', '-m', 'not server', '-k', 'number_them'),
    ),
)
