"""The mutants of src/checkpointer/maintenance.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "copy_thread copies onto a thread that has documents",
        "        if holding and not (yield from ask(Find(self.collections.metadata, note, {\"_id\": 1}, limit=1))):",
        "        if False:",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "copy_thread_refuses"),
    ),
    (
        "prune deletes a checkpoint holding a value a kept one references, without moving it to blobs",
        "        if ops:\n            yield Upsert(self.collections.blobs, ops)",
        "        if False:\n            yield Upsert(self.collections.blobs, ops)",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "held_by or stale_value"),
    ),
    (
        "a checkpoint keeps referencing the holder prune deleted",
        "        yield Upsert(self.collections.checkpoints, unlinked)\n",
        "",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "held_by"),
    ),
    (
        "the pruning saver remembers value locations in checkpoints it deleted",
        "        yield Upsert(self.collections.checkpoints, unlinked)\n        self.locations.forget_thread(thread_id)",
        "        yield Upsert(self.collections.checkpoints, unlinked)",
        ("tests/test_checkpointer_contract.py", "-m", "not server", "-k", "held_by"),
    ),
    (
        "delete_thread trusts the per-thread collections it knew at its format check",
        "        names = self._checkpoints_last((yield from self.storage_format.thread_collections_plan()))\n        for thread_id in thread_ids:",
        "        names = self._checkpoints_last(self.storage_format.thread_collections.names)\n        for thread_id in thread_ids:",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "declared_after"),
    ),
    (
        "ttl keep_latest sweep deletes the thread",
        '        if config.strategy == "delete":\n            if threads:',
        "        if True:\n            if threads:",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest_prunes"),
    ),
    (
        "ttl keep_latest sweep drops the whole journal",
        "            by_ns = yield from self._keep_latest_plan(threads)\n",
        "            by_ns = yield from self._keep_latest_plan(threads)\n"
        '            yield DeleteMany(self.collections.journal, {"thread_id": {"$in": threads}})\n',
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest_prunes"),
    ),
    (
        "ttl keep_latest sweep counts the latest checkpoint's tasks as finished",
        '    return sorted(set(root) - {latest["checkpoint_id"], latest.get("origin")})',
        '    return sorted(set(root) - {latest.get("origin")})',
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest"),
    ),
    (
        "ttl keep_latest sweep counts the tasks the latest checkpoint continues as finished",
        '    return sorted(set(root) - {latest["checkpoint_id"], latest.get("origin")})',
        '    return sorted(set(root) - {latest["checkpoint_id"]})',
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest"),
    ),
    (
        "ttl keep_latest sweep keeps the oldest checkpoint, not the latest",
        "            latest = max(docs)",
        "            latest = min(docs)",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest_prunes or delta_channel"),
    ),
    (
        "ttl keep_latest sweep leaves the expiry: the thread is swept again and again",
        '                yield UpdateMany(coll, {"thread_id": {"$in": threads}}, {"$unset": {"expire_at": ""}})',
        "                pass",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "keep_latest_prunes or sweeper_sweeps"),
    ),
    (
        "ttl sweep ignores sweep_limit",
        '            Aggregate(self.collections.checkpoints, pipeline + ([{"$limit": limit}] if limit else []))',
        "            Aggregate(self.collections.checkpoints, pipeline)",
        ("tests/test_ttl_strategies.py", "-m", "not server", "-k", "sweep_limit"),
    ),
    # issue 23: the thread summary, kept by the root put's own command
    (
        "prune leaves the summary counting the checkpoints it deleted",
        "        summaries = _pruned_summaries(by_ns, keep)\n",
        "        summaries = []\n",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "prune"),
    ),
    (
        "delete_for_runs leaves the summary naming the latest checkpoint it deleted",
        'None if latest == max(docs) else latest))',
        'None))',
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "prune"),
    ),
    (
        "prune reads the thread summary as a checkpoint",
        '        query = {"thread_id": {"$in": thread_ids}, "checkpoint_ns": NOT_SUMMARY}\n',
        '        query = {"thread_id": {"$in": thread_ids}}\n',
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "prune"),
    ),
    # -- issue 34: stored data comes back as it was and never acts as an instruction --
    (
        "issue 34: delete_thread deletes checkpoints before the journal",
        "        return [n for n in names if n not in own] + [n for n in own if n in names]",
        "        return list(names)",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "cut_short"),
    ),
    (
        "issue 34: a copy cut short cannot be completed",
        "        if holding and not (yield from ask(Find(self.collections.metadata, note, {\"_id\": 1}, limit=1))):",
        "        if holding:",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "copy_thread_cut_short"),
    ),
    (
        "issue 34: a copy cut short is completed from another source",
        '        note = {"_id": key_id("copy_thread", target_thread_id), "source": source_thread_id}',
        '        note = {"_id": key_id("copy_thread", target_thread_id)}',
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "copy_thread_cut_short"),
    ),
    (
        "issue 34: a copy completed leaves its note",
        '        yield DeleteMany(self.collections.metadata, {"_id": note["_id"]})\n',
        "",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "copy_thread_cut_short"),
    ),
    (
        "issue 34: a copy completed keeps the older expiry of what was copied before",
        "        if expiry and resumed:\n            yield from self.expiry.spread(target_thread_id, expiry)\n        elif expiry:",
        "        if expiry:",
        ("tests/test_thread_collections.py", "-m", "not server", "-k", "copy_thread_cut_short"),
    ),
    (
        "issue 35: a keep_latest sweep tells its owner of no pruned thread",
        "                for forget in self.hooks.sweep_prunes:",
        "                for forget in []:",
        ("tests/test_platform_ttl.py", "tests/test_ttl_strategies.py", "-m", "not server"),
    ),
    # -- issue 44: an effect its node left running in a thread --
    (
        "copy_thread copies a source whose effect this process still runs, without its outcome",
        "        yield from self.settled(source_thread_id)\n",
        "",
        ("tests/test_callers.py", "-m", "not server", "-k", "left_running_in_a_thread and copy_thread"),
    ),
)
