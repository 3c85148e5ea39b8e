"""Child processes of the reliability suite: durable runs to kill, restart and race.

test_crash_storm.py, test_process_restarts.py and test_concurrent_runs.py run them in processes;
test_security.py, test_server_faults.py and test_bad_input.py run their graph in the test's own process.
"""
