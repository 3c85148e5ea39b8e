"""The mutants of src/storage/deployment.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "doctor creates no missing index, on either face",
        "            elif not row[\"present\"] and fix:",
        "            elif False:",
        ("tests/test_cli_deployments.py", "-k", "both_faces"),
    ),
    (
        "doctor --fix creates our indexes in a foreign database",
        "    report[\"indexes\"] = db.run(index_rows_plan(names, fix and ours))",
        "    report[\"indexes\"] = db.run(index_rows_plan(names, fix))",
        ("tests/test_storage_format.py", "-m", "not server", "-k", "doctor"),
    ),
    # issue 22: SecureLLM streams when the wrapped model would, and runs it inside its own callback run
    (
        "doctor expects a run lock index where no run lock is ever taken",
        "    no_run_locks = names.checkpoints in collections and names.runs not in collections",
        "    no_run_locks = False",
        ("tests/test_cli_deployments.py", "-k", "agent_server"),
    ),
    (
        "doctor takes a database without checkpoints for one without run locks",
        "    no_run_locks = names.checkpoints in collections and names.runs not in collections",
        "    no_run_locks = names.runs not in collections",
        ("tests/test_cli_deployments.py", "-k", "empty_database"),
    ),
    # -- issue 34: stored data comes back as it was and never acts as an instruction --
    (
        "issue 34: doctor repairs summaries in a newer format",
        "    if stored.version is None or not 2 <= stored.version <= FORMAT_VERSION:",
        "    if stored.version is None or not 2 <= stored.version:",
        ("tests/test_storage_format.py", "-m", "not server", "-k", "repairs_nothing"),
    ),
    (
        "issue 34: doctor finds drift but calls the database ok",
        "    report[\"ok\"] = ours and indexed and not drifted(report[\"summaries\"])",
        "    report[\"ok\"] = ours and indexed",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "found_and_repaired"),
    ),
)
