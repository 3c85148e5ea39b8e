"""The mutants of src/checkpointer/roots.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "an edit at an interrupt continues nothing",
        '        if metadata.get("source") != "update":\n',
        "        if True:\n",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "edit"),
    ),
    (
        "an edit of an older checkpoint continues it (time travel is no fork)",
        '        if len(newest) != 1 or newest[0]["checkpoint_id"] != parent_id:',
        "        if not newest:",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "edit"),
    ),
    (
        "wait_stored trusts its registry alone",
        "if found := (yield from ask(Find(self.collections.checkpoints, key, ORIGIN_FIELDS, limit=1))):",
        "if found := []:",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "wait_stored"),
    ),
    (
        "a checkpoint read is still taken for one this process wrote and no other run met",
        "        self.stored.note(thread_id, checkpoint_ns, [_registered(d) for d in docs])",
        "        self.stored.note(thread_id, checkpoint_ns, [_registered(d) for d in docs], written=True)",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "root_node_resumed_after_its_interrupt"),
    ),
    # issue 20: an edit made as the interrupted node completes it; its next visit is a new occurrence
    (
        "a node's first effect queries for its root checkpoint while this process is still storing it",
        "        recheck_at = time.monotonic() + STORED_FIRST_CHECK_SECONDS",
        "        recheck_at = 0.0",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "own_background_store"),
    ),
    # -- records trailing their effects, roots foreseen (issue 20) --
    (
        "a node's writes are saved before the records of its effects",
        "        if held := self.holds.of_task(thread_id, task_id):\n            yield Join(held)",
        "        if False:\n            yield Join(())",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "starts_once"),
    ),
    # -- issue 32: positions named by LangGraph's identity of the work --
    (
        "a task waiting for a root store refused for a lost lock says the checkpoint was not stored",
        "                if isinstance(error, RunLockLostError):",
        "                if False:",
        ("tests/test_failed_root_store.py", "-m", "not server", "-k", "lost_lock"),
    ),
    (
        "a failed root store leaves the effects waiting for it to their timeout",
        "        self.stored.fail(thread_id, checkpoint_id, error)",
        "        pass",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "failed_root_store_ends"),
    ),
    (
        "a failed root store stops the waits of the newer checkpoints of the run only if they are still waiting",
        "            if (error := self.stored.failed(thread_id, checkpoint_id)) is not None:\n",
        "            if (error := None) is not None:\n",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "failed_root_store_ends"),
    ),
    (
        "a new run keeps the failed root stores of the run before it",
        "        self.stored.forget_failures(thread_id)",
        "        pass",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "failed_root_store_ends"),
    ),
    # -- issue 44: forks and edits inside children --
    (
        "a run sent to a checkpoint the thread moved past is not noted as a fork",
        "        if newer:\n            self.stored.supersede(thread_id, checkpoint_id)",
        "        if False:\n            self.stored.supersede(thread_id, checkpoint_id)",
        ("tests/test_operator_actions.py", "-m", "not server", "-k", "changed_input_sent"),
    ),
    (
        "an edit inside a child's run records no shift of its steps",
        '[], _shift(newest[0], metadata.get("step"), bool(completed))',
        "[], 0",
        ("tests/test_operator_actions.py", "-m", "not server", "-k", "leaves_the_charge_alone"),
    ),
    (
        "an edit of a child's input checkpoint (its later stores lost) shifts its run's steps",
        '    if completed or (parent.get("metadata") or {}).get("source") == "input":',
        "    if completed:",
        ("tests/test_operator_actions.py", "-m", "not server", "-k", "later_checkpoints_were_lost"),
    ),
    (
        "an edit inside a child that completed its node shifts the run's later steps",
        '    if completed or (parent.get("metadata") or {}).get("source") == "input":',
        '    if (parent.get("metadata") or {}).get("source") == "input":',
        ("tests/test_operator_actions.py", "-m", "not server", "-k", "every_visit_after"),
    ),
    (
        "a child's checkpoint written by its run after an edit takes none of the edit's shift",
        "                return (yield from self._inherited_shift(thread_id, checkpoint_ns, parent_id))",
        "                return NOT_CONTINUED",
        ("tests/test_operator_actions.py", "-m", "not server", "-k", "before_its_interrupt_s_step"),
    ),
    (
        "a child's checkpoint whose store is under way is taken for one no edit shifted",
        '"checkpoint_id": {"$lte": checkpoint_id}},\n            ORIGIN_FIELDS,\n            [("checkpoint_id", -1)],',
        '"checkpoint_id": checkpoint_id},\n            ORIGIN_FIELDS,\n            [("checkpoint_id", -1)],',
        ("tests/test_operator_actions.py", "-m", "not server", "-k", "under_way_continues"),
    ),
    (
        "a child's checkpoint after an edit 0.4.0 stored completing a node takes the edit's whole shift",
        "    return max(parent.shift - 1, 0) if parent.completed else parent.shift",
        "    return parent.shift",
        ("tests/test_operator_actions.py", "-m", "not server", "-k", "every_visit_after"),
    ),
    (
        "a new run does not wait for the records the runs before left in flight",
        "        yield from self.settled_plan(thread_id, effects)\n        self.holds.drop_failed(thread_id)",
        "        self.holds.drop_failed(thread_id)",
        ("tests/test_history_explorer.py", "-k", "in_flight and async and not durability"),
    ),
    (
        "a new run keeps the failed records of the run before it",
        "        self.holds.drop_failed(thread_id)",
        "        pass",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "cancelled_with_a_record_lost or stopped_with_a_record_lost"),
    ),
    (
        "a sync effect on the event loop does not send the store under way of its root checkpoint",
        "        if (pending := self.stored.pending(thread_id, checkpoint_id)) is not None:",
        "        if (pending := None) is not None:",
        ("tests/test_callers.py", "-k", "store_is_under_way and mongo_java_server"),
    ),
    # -- issue 45: every entry stores its label --
    (
        "a thread whose latest checkpoint another process stored is taken for this process's",
        '                status = "ours" if self._written.get(thread_id) == latest else "foreign"',
        '                status = "ours"',
        ('tests/test_journal_labels.py', '-k', 'whichever_process'),
    ),
    (
        "a run from a checkpoint it names is taken for one from the thread's latest",
        '            if chosen:\n                status = "foreign"',
        '            if False:\n                status = "foreign"',
        ('tests/test_journal_labels.py', '-k', 'never_vouches'),
    ),
    # -- issue 44: an effect its node left running in a thread --
    (
        "the end of a run waits for its effects in flight, not for the record one of them left once it ended",
        "        while unfinished := tuple(",
        "        if unfinished := tuple(",
        ("tests/test_callers.py", "-m", "not server", "-k", "left_running_in_a_thread"),
    ),
)
