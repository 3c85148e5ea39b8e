"""The mutants of src/checkpointer/store.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "one expiry: reads do not teach the thread's expiry",
        "        self.expiry.saw(docs)\n",
        "",
        ("tests/test_checkpointer_graphs.py", "-m", "not server", "-k", "one_expiry"),
    ),
    (
        "a DeltaChannel chain walk stops at the end of its first page",
        "        exhausted = len(first) < FIRST_CHAIN_PAGE\n",
        "        exhausted = True\n",
        ("tests/test_checkpointer_graphs.py", "-m", "not server", "-k", "older_pages"),
    ),
    (
        "a reader drops a value whose holder is gone instead of looking in blobs",
        "        if missing:\n",
        "        if False:\n",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "stale_value"),
    ),
    # issue 21: the journal follows the recorded history under stalls, cancellations and handled failures
    (
        "a lapsed holder writes a checkpoint",
        "            self._fenced(thread_id)  # a run whose lease may have run out writes no checkpoint (no I/O)\n",
        "",
        ("tests/test_self_fencing.py", "-m", "not server", "-k", "lapsed_holder"),
    ),
    (
        "a lapsed holder writes pending writes",
        "        self._fenced(thread_id)\n        yield Upsert(self.collections.writes, ops)",
        "        yield Upsert(self.collections.writes, ops)",
        ("tests/test_self_fencing.py", "-m", "not server", "-k", "lapsed_holder or blocked_event_loop_writes"),
    ),
    # issue 25: nothing secret printed or stored in clear, nothing lost in silence
    (
        "issue 25: a checkpoint document read unchecked",
        "        check_checkpoints(self.collections.checkpoints, docs)\n        docs = [d for d in docs if not self.expiry.expired(d)]",
        "        docs = [d for d in docs if not self.expiry.expired(d)]",
        ("tests/test_stored_integrity.py", "-m", "not server", "-k", "checkpoint_that_cannot"),
    ),
    (
        "issue 25: a pending write read unchecked",
        "        check_values(self.collections.writes, found_writes, WRITE_FIELDS)\n",
        "",
        ("tests/test_stored_integrity.py", "-m", "not server", "-k", "pending_write"),
    ),
    (
        "issue 25: replaced bytes of a pending write loaded as another value",
        "        check_assembled(self.collections.writes, docs, WRITE_KEY, values)\n",
        "",
        ("tests/test_stored_integrity.py", "-m", "not server", "-k", "checksum"),
    ),
    # issue 23: the thread summary, kept by the root put's own command
    (
        "list without a namespace yields the thread summary as a checkpoint",
        '    query.setdefault("checkpoint_ns", NOT_SUMMARY)\n',
        "",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "without_a_namespace"),
    ),
    # -- records trailing their effects, roots foreseen (issue 20) --
    (
        "a checkpoint is saved before the records of the tasks before it",
        "            yield from self.roots.after_held(thread_id, checkpoint_ns, checkpoint_id)\n",
        "",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "another_worker_beat"),
    ),
    # -- issue 34: stored data comes back as it was and never acts as an instruction --
    (
        "issue 34: a filter compares a value BSON would change in its BSON form",
        '"metadata", filter, lambda value: stored_value(value, serde.dumps_typed, "a filter value")',
        '"metadata", filter',
        ("tests/test_checkpointer_metadata.py", "-m", "not server", "-k", "filter_on_a_value"),
    ),
    (
        "issue 35: the store never asks its run fence",
        "        if self.hooks.run_fence is not None:\n            self.hooks.run_fence(thread_id)",
        "        pass",
        ("tests/test_saver_hooks.py", "-m", "not server", "-k", "saver_s_run_fence"),
    ),
    # -- issue 50: every command names its thread by the shard key --
    (
        "issue 50: a checkpoint's upsert names it by _id alone, without its thread",
        '            stored = UpdateOne(key_filter(thread_id, checkpoint_ns, checkpoint_id), {"$set": document}, upsert=True)',
        '            stored = UpdateOne({"_id": key_filter(thread_id, checkpoint_ns, checkpoint_id)["_id"]}, {"$set": document}, upsert=True)',
        ("tests/test_shard_keys.py", "-m", "not server", "-k", "sync and platform"),
    ),
    (
        "issue 50: a pending write's upsert names it by _id alone, without its thread",
        "                ident = key_filter(thread_id, checkpoint_ns, checkpoint_id, task_id, write_idx, doc[\"chunk\"])",
        "                ident = {\"_id\": key_filter(thread_id, checkpoint_ns, checkpoint_id, task_id, write_idx, doc[\"chunk\"])[\"_id\"]}",
        ("tests/test_shard_keys.py", "-m", "not server", "-k", "sync and platform"),
    ),
    # issue 44, break 9: under encryption, a value stored in clear is refused wherever the saver loads one
    (
        "issue 44: a pending write is loaded without encryption's rules",
        "                (task_id, channel, load_stored(serde, typed, at))",
        "                (task_id, channel, serde.loads_typed(typed))",
        ("tests/test_stored_instructions.py", "-m", "not server", "-k", "pending_write_planted"),
    ),
    (
        "issue 44: a checkpoint's values and metadata are loaded without encryption's rules",
        "            return load_stored(\n                serde, typed, StoredAt(doc[\"thread_id\"], self.collections.checkpoints, doc.get(\"_id\"), field)\n            )",
        "            return serde.loads_typed(typed)",
        ("tests/test_stored_instructions.py", "-m", "not server", "-k", "message_planted or checkpoint_or_metadata_planted"),
    ),
    (
        "issue 44: a DeltaChannel seed is loaded without encryption's rules",
        "                result[channel][\"seed\"] = load_stored(serde, typed, at)",
        "                result[channel][\"seed\"] = serde.loads_typed(typed)",
        ("tests/test_stored_instructions.py", "-m", "not server", "-k", "delta_channel_seed"),
    ),
)
