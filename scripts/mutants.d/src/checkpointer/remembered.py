"""The mutants of src/checkpointer/remembered.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 20: an edit made as the interrupted node completes it; its next visit is a new occurrence
    (
        "an edit as the interrupted node is continued like any other edit",
        "        return checkpoint_id if node is not None and node in known.completed else known.origin",
        "        return known.origin",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "edit_as_the_interrupted_node"),
    ),
    (
        "a node's first effect is not woken by the store it waits for, and polls for it instead",
        "                woken += self._waiting.pop(key, ())\n        for wake in woken:\n            wake()\n",
        "                woken += self._waiting.pop(key, ())\n",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "own_background_store"),
    ),
    # -- records trailing their effects, roots foreseen (issue 20) --
    (
        "a checkpoint waits for no task of its namespace prepared before it",
        "hold.prepared_from < checkpoint_id",
        "hold.prepared_from > checkpoint_id",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "another_worker_beat"),
    ),
    (
        "a failed record a checkpoint's save raised no longer holds its task's own writes",
        "            return (*hold.futures, *hold.raised) if hold is not None else ()",
        "            return tuple(hold.futures) if hold is not None else ()",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "keeps_its_task_s_writes_out"),
    ),
    # -- issue 44: forks --
    (
        "a checkpoint read again forgets it was superseded",
        "                    doc.get(\"shift\") or 0, known is not None and known.superseded,",
        "                    doc.get(\"shift\") or 0, False,",
        ("tests/test_operator_actions.py", "-k", "stays_so"),
    ),
)
