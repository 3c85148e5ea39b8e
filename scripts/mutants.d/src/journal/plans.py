"""The mutants of src/journal/plans.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "claim_always does not claim an at-least-once effect under the run lock: a crash mid-effect goes uncounted",
        "        if exclusive and not call.at_most_once and not self.claim_always:",
        "        if exclusive and not call.at_most_once:",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "attempt_counts_an_execution_cut_short"),
    ),
    (
        "journal record fence",
        "self._settle(held_fence(pos, claimed.fence), update)",
        'self._settle(entry_filter(pos, status="started"), update)',
        ("tests/test_journal_fences.py",),
    ),
    (
        "a replay's callback run is not marked replayed",
        "info = EffectInfo(pos, call.kind, call.name, 0, call.at_most_once, replayed=True)",
        "info = EffectInfo(pos, call.kind, call.name, 0, call.at_most_once)",
        ("tests/test_journal_callbacks.py", "-m", "not server", "-k", "whether_it_replayed"),
    ),
    # issue 21: the journal follows the recorded history under stalls, cancellations and handled failures
    (
        "another effect at a recorded position replays the recorded one's outcome",
        '        if recorded == (call.kind, call.name) or (entry.get("status") == "failed" and not terminal):',
        '        if True:',
        ("tests/test_journal_store.py", "-m", "not server", "-k", "nondeterminism"),
    ),
    (
        "a rerun keeps the recorded outcome of the effect it replaces",
        '        if self._rerun_in_place(entry, call, pos, terminal) and status != "started":\n            return "takeover"',
        '        if self._rerun_in_place(entry, call, pos, terminal) and status == "failed":\n            return "takeover"',
        ("tests/test_journal_store.py", "-m", "not server", "-k", "nondeterminism"),
    ),
    (
        "an at_most_once effect whose worker died is run again",
        '        if (call.at_most_once or entry.get("at_most_once")) and entry.get("not_run") is not True:',
        '        if call.at_most_once and entry.get("not_run") is not True:',
        ("tests/test_journal_store.py", "tests/test_journal_lease.py", "-m", "not server", "-k", "at_most_once"),
    ),
    (
        "a claim waits for the lease of an owner whose process on this host exited",
        "        if not expired and not owner_gone(entry):",
        "        if not expired:",
        ("tests/test_journal_lease.py", "-m", "not server", "-k", "dead_owner"),
    ),
    (
        "a take-over another worker beat is taken for won",
        "                if (yield from ask(FencedUpdate(self.collection, takeover_fence(pos, entry), update))):",
        "                if (yield from ask(FencedUpdate(self.collection, takeover_fence(pos, entry), update))) or True:",
        ("tests/test_journal_fences.py", "tests/test_journal_races.py", "-m", "not server"),
    ),
    (
        "an interrupted effect keeps its position until its lease runs out",
        "            yield FencedUpdate(self.collection, held_fence(pos, claimed.fence), released_update(ended.now))\n",
        "            yield Sleep(0)\n",
        ("tests/test_journal_commands.py", "-m", "not server", "-k", "left_started"),
    ),
    (
        "an outcome the serde cannot write is not recorded",
        "            yield from self._end_claim(pos, claimed, failed)\n",
        "            yield Sleep(0)\n",
        ("tests/test_journal_store.py", "-m", "not server", "-k", "unserializable"),
    ),
    (
        "a handled failure is run again on resume",
        "    return any(key.isdigit() and int(key) > issued for key in keys)",
        "    return False",
        ("tests/test_journal_history.py", "-m", "not server", "-k", "handled_failure_is_raised_again"),
    ),
    (
        "a failure that ended the attempt counts as handled",
        "    return any(key.isdigit() and int(key) > issued for key in keys)",
        "    return any(key.isdigit() and int(key) >= issued for key in keys)",
        ("tests/test_journal_history.py", "-m", "not server", "-k", "ended_the_attempt or retry_policy"),
    ),
    (
        "an effect starts after its claim outlived the run's lease",
        "        yield from self._fence(pos, claimed)\n        with (yield from ask(self._heartbeat(pos, claimed))):\n            result = yield from ask(Invoke(fn",
        "        with (yield from ask(self._heartbeat(pos, claimed))):\n            result = yield from ask(Invoke(fn",
        ("tests/test_self_fencing.py", "-m", "not server", "-k", "outlived"),
    ),
    (
        "a cancelled effect frees its position while its thread still works",
        "        if isinstance(result, Raised) and result.pending is not None:\n            yield from self._outlive(call, pos, claimed, result)\n",
        "",
        ("tests/test_journal_cancellation.py", "-m", "not server", "-k", "plain and sync"),
    ),
    (
        "an unclaimed effect cancelled under the run lock is not claimed before the run ends",
        "        if claimed.unclaimed is not None:\n            claimed = yield from self._claim_late(pos, claimed)\n",
        "",
        ("tests/test_journal_cancellation.py", "-m", "not server", "-k", "platform.compile"),
    ),
    (
        "a claim whose reply was lost is not sent again",
        "        if not isinstance(answer.error, ConnectionFailure):\n            raise answer.error",
        "        raise answer.error",
        ("tests/test_journal_lost_replies.py", "-m", "not server"),
    ),
    # -- records trailing their effects, roots foreseen (issue 20) --
    (
        "an effect starts before the record of the one before it is written",
        "            yield from self._after_trailing_records(where)\n            pos, claimed = yield from self._claim(call, where)\n            watch.placed(pos, claimed.attempt, claimed.recorded_key)\n            if isinstance(claimed, _RecordedOutcome):\n                return",
        "            pos, claimed = yield from self._claim(call, where)\n            watch.placed(pos, claimed.attempt, claimed.recorded_key)\n            if isinstance(claimed, _RecordedOutcome):\n                return",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "starts_once"),
    ),
    (
        "a trailing record another worker beat hands the node's writes that worker's outcome silently",
        "            if trailing:\n                raise EffectRecordLostError(",
        "            if False:\n                raise EffectRecordLostError(",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "another_worker_beat"),
    ),
    # -- issue 36: the first hour --
    (
        "an effect's lease lost before its record is not logged",
        '        logger.warning(\n            "%s %r at %s: lease lost before recording; the outcome was not recorded", call.kind, call.name, pos\n        )',
        "        pass",
        ("tests/test_logging.py", "-m", "not server", "-k", "lost_effect_lease"),
    ),
    (
        "a replay under the run lock is not logged",
        "        _log_replay(call, pos, known)\n",
        "",
        ("tests/test_logging.py", "-m", "not server", "-k", "under_the_run_lock"),
    ),
    # -- issue 32: positions named by LangGraph's identity of the work --
    (
        "a re-execution after a take-over gets another idempotency key than the one its entry was first claimed under",
        'recorded_key = entry.get("idempotency_key") or pos.idempotency_key',
        "recorded_key = pos.idempotency_key",
        ("tests/test_journal_lease.py", "-m", "not server", "-k", "take_over_keeps_the_key"),
    ),
    (
        "an outcome unknown names another idempotency key than the one the system it calls saw",
        'key = entry.get("idempotency_key") or pos.idempotency_key  # the one',
        "key = pos.idempotency_key  # the one",
        ("tests/test_journal_lease.py", "-m", "not server", "-k", "outcome_unknown_names_the_key"),
    ),
    (
        "an at_most_once outcome trails its effect, so a crash after it returned leaves it unknown",
        "isinstance(where, Slot) and not call.at_most_once else None",
        "isinstance(where, Slot) else None",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "at_most_once_outcome"),
    ),
    # issue 44, break 8: a preview never stops a claim or a record
    (
        "issue 44: a preview that cannot be made stops the record",
        "        try:\n            return preview(value, limit=self.preview_chars, redactor=self.redactor, secrets=secrets)\n        except Exception as exc:",
        "        try:\n            return preview(value, limit=self.preview_chars, redactor=self.redactor, secrets=secrets)\n        except KeyError as exc:",
        ("tests/test_hostile_values.py", "-m", "not server", "-k", "preview_cannot"),
    ),
    (
        "issue 44: an error message holding a lone surrogate is stored as it is",
        "        return storable(scrub(str(exc), claimed.secrets)) if self.store_messages else \"\"",
        "        return scrub(str(exc), claimed.secrets) if self.store_messages else \"\"",
        ("tests/test_hostile_values.py", "-m", "not server", "-k", "error_message"),
    ),
    # issue 44, break 9: stored data never acts as an instruction
    (
        "issue 44: a recorded outcome is loaded without encryption's rules",
        '            return load_stored(self.serde, typed, StoredAt(pos.thread_id, self.collection, str(pos), "outcome.data"))',
        "            return self.serde.loads_typed(typed)",
        ("tests/test_stored_instructions.py", "-m", "not server", "-k", "outcome_planted or outcome_read"),
    ),
    (
        "issue 44: the input-digest key is loaded without encryption's rules",
        '        self._input_key = bytes(load_stored(self.serde, (doc["type"], bytes(doc["data"])), at))',
        '        self._input_key = bytes(self.serde.loads_typed((doc["type"], bytes(doc["data"]))))',
        ("tests/test_stored_instructions.py", "-m", "not server", "-k", "digest_key_planted"),
    ),
    (
        "issue 44: a recorded failure's class is imported from the module its entry names",
        "    found: Any = sys.modules.get(module)\n",
        '    found: Any = sys.modules.get(module) or __import__("importlib").import_module(module)\n',
        ("tests/test_stored_instructions.py", "-m", "not server", "-k", "never_imported"),
    ),
    (
        "issue 44: a recorded failure's class is looked up with getattr (a module's __getattr__ may import)",
        "        namespace = getattr(found, \"__dict__\", None)\n        found = namespace.get(part) if isinstance(namespace, Mapping) else None\n",
        "        found = getattr(found, part, None)\n",
        ("tests/test_stored_instructions.py", "-m", "not server", "-k", "found_among"),
    ),
    (
        "issue 44: a declared terminal error is not found by its module and name",
        "        if (cls.__module__, cls.__qualname__) == (module, qualname):\n            return cls\n",
        "        pass\n",
        ("tests/test_stored_instructions.py", "-m", "not server", "-k", "found_among"),
    ),
    # -- issue 45: every entry stores its label --
    (
        "a visit the thread's labels cannot number is stored without reading its sequence",
        "        sequence = sequence_filter(visit) if labels is not None and label is None else None",
        '        sequence = None',
        ('tests/test_position_costs.py', '-m', 'not server', '-k', 'number_them'),
    ),
    # -- issue 44: an effect its node left running in a thread --
    (
        "an effect its cancelled node no longer waits for runs on after its run has ended and released its lock",
        "    return trail.under_way() if trail is not None else contextlib.nullcontext()",
        "    return contextlib.nullcontext()",
        ("tests/test_callers.py", "-m", "not server", "-k", "left_running_in_a_thread"),
    ),
)
