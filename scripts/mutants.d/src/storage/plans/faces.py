"""The mutants of src/storage/plans/faces.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "clients you pass are not told our name",
        "        announce(given)",
        "        pass",
        ("tests/test_driver_info.py", "-k", "appended_once"),
    ),
    (
        "a face's first plan skips the storage format check",
        "        yield from self._guard()",
        "        pass",
        ("tests/test_storage_format.py", "-m", "not server"),
    ),
    (
        "a plan's input checks run after the face's setup has written",
        '        going = plan if self._ready["sync"] else started(plan)  # once set up, a plan runs as it is: no wrapper\n',
        "        going = plan\n",
        ("tests/test_thread_ids.py", "-m", "not server", "-k", "saver_refuses"),
    ),
    (
        "an async plan's input checks run after the face's setup has written",
        '        going = plan if self._ready["async"] else started(plan)\n',
        "        going = plan\n",
        ("tests/test_thread_ids.py", "-m", "not server", "-k", "saver_refuses"),
    ),
    # issue 22: SecureLLM streams when the wrapped model would, and runs it inside its own callback run
    (
        "a URI passed as a client is taken for one",
        "    if isinstance(client, str) or isinstance(async_client, str):",
        "    if False:",
        ("tests/test_database_naming.py", "-k", "refused"),
    ),
    # -- issue 34: stored data comes back as it was and never acts as an instruction --
    (
        "issue 34: the journal and the run locks write with the client's concern",
        "        majority = role in MAJORITY_WRITTEN",
        "        majority = False",
        ("tests/test_write_concerns.py", "-m", "not server"),
    ),
    # -- issue 36: the first hour --
    (
        "an unreachable server surfaces as pymongo's whole topology description",
        "            raise unreachable(error) from None\n\n    async def _arun",
        "            raise\n\n    async def _arun",
        ("tests/test_checkpointer_connections.py", "-k", "unreachable and sync"),
    ),
    # -- issue 44: a plan started before its face is set up --
    (
        "a plan started before its face was set up never sees a request's failure: its finally runs when it is collected",
        "            step = functools.partial(plan.throw, error)",
        "            raise",
        ("tests/test_plan_faces.py",),
    ),
    (
        "a plan started before a face whose setup failed is left suspended: its finally runs when it is collected",
        "            except BaseException:  # a cancellation while the face is set up too\n                plan.close()",
        "            except BaseException:  # a cancellation while the face is set up too\n                pass",
        ("tests/test_plan_faces.py", "-k", "cannot_be_set_up and async"),
    ),
)
