"""The mutants of src/storage/plans/interpreters.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 21: the journal follows the recorded history under stalls, cancellations and handled failures
    (
        "a cancelled await of an effect is not shielded",
        "            return Raised(exc) if work.cancelled() else Raised(exc, pending=work)",
        "            return Raised(exc)",
        ("tests/test_journal_cancellation.py", "-m", "not server", "-k", "to_thread"),
    ),
    (
        "the hold of a cancelled effect is cut short by the node's next cancellation",
        "        while not task.done():\n            with contextlib.suppress(BaseException):",
        "        if not task.done():\n            with contextlib.suppress(BaseException):",
        ("tests/test_journal_cancellation.py", "-m", "not server", "-k", "run_in_executor"),
    ),
    # -- records trailing their effects, roots foreseen (issue 20) --
    (
        "a sync effect on the event loop waits for an async effect's record that loop has to write",
        "            if future.done() or not settled_on(future, loop):",
        "            if True:",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "does_not_block"),
    ),
    # -- issue 44: every caller gets the same journal --
    (
        "a sync call on an event loop does not wait for the records its own face's pool threads write",
        "            if future.done() or not settled_on(future, loop):",
        "            if future.done() or loop is None:",
        ("tests/test_callers.py", "-m", "not server", "-k", "retries_without_charging_twice"),
    ),
    # -- issue 34: stored data comes back as it was and never acts as an instruction --
    (
        "a request's failure is not raised in its plan",
        "            result = self.execute(request)\n        except BaseException as error:  # raised in the plan, which re-raises what it does not handle\n            return _plan_raise(plan, error)",
        "            result = self.execute(request)\n        except BaseException:\n            raise",
        ("tests/test_failed_root_store.py", "-m", "not server", "-k", "not async_face"),
    ),
    (
        "an async request's failure is not raised in its plan",
        "            result = await self.execute(request)\n        except BaseException as error:  # raised in the plan, which re-raises what it does not handle\n            return _plan_raise(plan, error)",
        "            result = await self.execute(request)\n        except BaseException:\n            raise",
        ("tests/test_failed_root_store.py", "-m", "not server", "-k", "async_face"),
    ),
    # -- issue 37: no thread started per run in steady state --
    (
        "a new pool of deferred-plan threads per deferred plan",
        "        if _pool is None:\n            _pool = concurrent.futures.ThreadPoolExecutor(",
        "        if True:\n            _pool = concurrent.futures.ThreadPoolExecutor(",
        ("tests/test_thread_starts.py", "-m", "not server", "-k", "sync_turns and not async"),
    ),
    (
        "a settling join raises the error of a record the run before left",
        "                concurrent.futures.wait([future]) if request.settle else future.result()",
        "                future.result()",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "does_not_raise_its_error and sync"),
    ),
    (
        "an async settling join raises the error of a record the run before left",
        "        if request.settle:\n            await asyncio.wait([asyncio.wrap_future(f) for f in request.futures])\n            return\n",
        "",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "does_not_raise_its_error and async"),
    ),
    (
        "a waiter cancelled while it waits for a record cancels the record's future",
        "            await asyncio.shield(asyncio.wrap_future(future))",
        "            await asyncio.wrap_future(future)",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "does_not_call_the_record_off"),
    ),
    (
        "a deferred record's future can be called off",
        "        done.set_running_or_notify_cancel()  # under way: no waiter can cancel it (``Future.cancel`` refuses then)\n",
        "",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "does_not_call_the_record_off"),
    ),
)
