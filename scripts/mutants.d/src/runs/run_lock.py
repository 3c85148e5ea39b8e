"""The mutants of src/runs/run_lock.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "run-lock take-over condition",
        'return {"thread_id": holder["thread_id"], "fence": holder.get("fence"), "lease_until": holder.get("lease_until")}',
        'return {"thread_id": holder["thread_id"]}',
        ("tests/test_run_lock_fence.py", "-m", "not server", "-k", "take_over_loses or one_wins"),
    ),
    (
        "run-lock take-over ignores a renewal after its read",
        '"fence": holder.get("fence"), "lease_until": holder.get("lease_until")}',
        '"fence": holder.get("fence")}',
        ("tests/test_run_lock_fence.py", "-m", "not server", "-k", "take_over_loses"),
    ),
    (
        "run-lock renewal of an expired lease",
        '{"thread_id": holding.thread_id, "fence": holding.fence, "lease_until": {"$gt": now}}',
        '{"thread_id": holding.thread_id, "fence": holding.fence}',
        ("tests/test_run_lock_fence.py", "-m", "not server", "-k", "renewal_fails"),
    ),
    (
        "run-lock renewal without the fence",
        '{"thread_id": holding.thread_id, "fence": holding.fence, "lease_until": {"$gt": now}}',
        '{"thread_id": holding.thread_id, "lease_until": {"$gt": now}}',
        ("tests/test_run_lock_fence.py", "-m", "not server", "-k", "renewal_fails"),
    ),
    (
        "run-lock release without the fence",
        '{"thread_id": holding.thread_id, "fence": holding.fence},',
        '{"thread_id": holding.thread_id},',
        ("tests/test_run_lock_fence.py", "-m", "not server", "-k", "release_after"),
    ),
    (
        "a nested run waits for its own thread's lock",
        "return sorted({t for t in thread_ids if (id(self), t) not in held})",
        "return sorted(set(thread_ids))",
        ("tests/test_run_lock.py", "-m", "not server", "-k", "nested_run_of_the_same_thread"),
    ),
    (
        "run-lock key ignores a top-level thread_id",
        'return cast(RunnableConfig, {**config, "configurable": dict(config.get("configurable") or {})})',
        'return cast(RunnableConfig, {"configurable": dict(config.get("configurable") or {})})',
        ("tests/test_run_lock_entry.py", "-m", "not server", "-k", "top_level"),
    ),
    (
        "batch runs one thread's inputs at once",
        "        n = 0 if thread_id is None else seen[thread_id]\n",
        "        n = 0\n",
        ("tests/test_run_lock_entry.py", "-m", "not server", "-k", "batch_runs_one_thread"),
    ),
    (
        "a busy thread is refused before run_wait_seconds have passed",
        "                if since >= deadline:",
        "                if since >= deadline - self.wait_seconds / 2:",
        ("tests/test_run_lock.py", "-m", "not server", "-k", "busy_thread_raises"),
    ),
    (
        "the run lock is taken for an empty thread id",
        "    return require_thread_id(str(thread_id) if thread_id else thread_id)",
        "    return str(thread_id)",
        ("tests/test_thread_ids.py", "-m", "not server", "-k", "empty and platform"),
    ),
    # issue 20: an edit made as the interrupted node completes it; its next visit is a new occurrence
    (
        "a run lock taken back unread without checking that it was released",
        '            {"thread_id": thread_id, "owner": None},\n            {"$set": self._holder(owner, now), "$inc": {"fence": 1}},',
        '            {"thread_id": thread_id},\n            {"$set": self._holder(owner, now), "$inc": {"fence": 1}},',
        ("tests/test_run_lock_fence.py", "-m", "not server", "-k", "two_runs_taking_one_free_lock"),
    ),
    (
        "a run lock that cannot be released replaces the run's own error",
        "            try:\n                await self._finish(cleanly=isinstance(ended, StopAsyncIteration))\n            except Exception as error:  # the run's own outcome is what the caller gets\n                _release_failed(self._thread_ids, error)\n            raise",
        "            await self._finish(cleanly=isinstance(ended, StopAsyncIteration))\n            raise",
        ("tests/test_self_fencing.py", "-k", "real_proxy and async"),
    ),
    # issue 21: the journal follows the recorded history under stalls, cancellations and handled failures
    (
        "the run lock's holder ignores its own clock",
        "            if holding.lost or (not holding.released and holding.lapsed()):",
        "            if holding.lost:",
        ("tests/test_self_fencing.py", "-m", "not server", "-k", "blocked_event_loop_starts or lapsed_holder"),
    ),
    (
        "a renewal does not move the holder's own deadline",
        "        if renewed:\n            holding.renewed(sent)\n        elif not holding.released:",
        "        if not renewed and not holding.released:",
        ("tests/test_self_fencing.py", "-m", "not server", "-k", "longer_than_its_lease"),
    ),
    # -- records trailing their effects, roots foreseen (issue 20) --
    (
        "a stream that raised releases the run lock as ended cleanly",
        "            self._finish(cleanly=isinstance(ended, StopIteration))  # its release",
        "            self._finish(cleanly=True)  # its release",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "failed_releases_the_lock and stream and sync"),
    ),
    (
        "an async stream that raised releases the run lock as ended cleanly",
        "await self._finish(cleanly=isinstance(ended, StopAsyncIteration))",
        "await self._finish(cleanly=True)",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "failed_releases_the_lock and stream and async"),
    ),
    (
        "a batch whose run raised releases the run lock as ended cleanly",
        "        except BaseException:\n            held.release(cleanly=False)\n            raise\n        held.release()",
        "        finally:\n            held.release()",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "batch and sync"),
    ),
    (
        "an async batch whose run raised releases the run lock as ended cleanly",
        "        except BaseException:\n            await held.arelease(cleanly=False)\n            raise\n        await held.arelease()",
        "        finally:\n            await held.arelease()",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "batch and async"),
    ),
    (
        "a sync run finds its own release still under way and waits for its lease",
        "                if (releasing := self._release_of(thread_id)) is not None:\n                    releasing.result()",
        "                if False:\n                    pass",
        ("tests/test_run_lock.py", "-m", "not server", "-k", "returns_before and not ainvoke"),
    ),
    (
        "an async run finds a sync run's release still under way and waits for its lease",
        "                if (releasing := self._release_of(thread_id)) is not None:\n                    await asyncio.wrap_future(releasing)",
        "                if False:\n                    pass",
        ("tests/test_run_lock.py", "-m", "not server", "-k", "returns_before and ainvoke"),
    ),
    # -- issue 34: stored data comes back as it was and never acts as an instruction --
    (
        "issue 34: the run locks write with the client's concern",
        '            role="runs",\n',
        "",
        ("tests/test_write_concerns.py", "-m", "not server"),
    ),
    # -- issue 36: the first hour --
    (
        "a run lock taken over is not logged",
        '            logger.info("took over the run lock of thread %r from %s", thread_id, _describe(holder))',
        "            pass",
        ("tests/test_logging.py", "-m", "not server", "-k", "run_lock_taken_over"),
    ),
    # -- issue 32: positions named by LangGraph's identity of the work --
    (
        "a run of this process that ended is held to its lease when its release was lost",
        "            if found and not _takeable(found[0], now) and not self._ended_here(found[0].get(\"owner\")):",
        "            if found and not _takeable(found[0], now):",
        ("tests/test_run_lock.py", "-m", "not server", "-k", "release_lost"),
    ),
    (
        "a run lock take whose reply was lost is taken for a failed one, though it was applied",
        "        if found and found[0].get(\"owner\") == owner:",
        "        if False:",
        ("tests/test_run_lock_fence.py", "-m", "not server", "-k", "reply_was_lost_after"),
    ),
    # -- issue 44: a run's records land before its lock is free --
    (
        "a run's lock is released before the records it left in flight",
        "        return [settle(h.thread_id) for h in ending] if settle is not None else []",
        "        return []",
        ("tests/test_run_lock.py", "-m", "not server", "-k", "records_it_left"),
    ),
    # -- issue 46: what OpenTelemetry is told --
    (
        "taking this process's own ended run's lock counts as a take-over",
        "        return owner is not None and not self._ended_here(owner)",
        "        return owner is not None",
        ("tests/test_telemetry.py", "-m", "not server", "-k", "own_ended_run"),
    ),
    # -- issue 45: the on-call view --
    (
        "a take-over keeps no record of the dead holder's run",
        '        update = {"$set": {**self._holder(owner, now), **_ended_record(holder, now)}, "$inc": {"fence": 1}}',
        '        update = {"$set": self._holder(owner, now), "$inc": {"fence": 1}}',
        ('tests/test_run_lock.py', '-m', 'not server', '-k', 'dead_holder or expired'),
    ),
    (
        'a crashed holder is recorded as having lost its lock',
        '    return run_record(fence, holder, last_seen, "crashed" if gone else "lock lost")',
        '    return run_record(fence, holder, last_seen, "lock lost")',
        ('tests/test_run_lock.py', '-m', 'not server', '-k', 'dead_holder'),
    ),
    (
        'a release keeps no record of its run',
        '"ended_cleanly": cleanly, **record}}',
        '"ended_cleanly": cleanly}}',
        ('tests/test_run_lock.py', '-m', 'not server', '-k', 'each_release'),
    ),
    (
        'a renewal does not say when it renewed',
        ', "renewed_at": now}},',
        '}},',
        ('tests/test_run_lock.py', '-m', 'not server', '-k', 'each_release'),
    ),
    # -- issue 44: work a run left running starts no effect after the run ended --
    (
        "a run that ended is not marked so before it waits for what it left: a late effect runs beside the next run",
        "            holding.ended = True  # first",
        "            pass  # first",
        ("tests/test_callers.py", "-m", "not server", "-k", "after_its_run_ended and platform.compile"),
    ),
    (
        "check_held lets an effect start under a run that has ended",
        "            if holding.ended:\n                raise holding.ended_error()\n",
        "",
        ("tests/test_callers.py", "-m", "not server", "-k", "after_its_run_ended and platform.compile"),
    ),
)
