"""The history explorer (issue 32 item 5): random graphs run through random fault schedules, judged by an oracle
that counts real executions. ``plans`` draws a history, ``graphs`` builds its graph, ``ledger`` records what really
ran and what each node got back, ``history`` runs a history in this process and ``oracle`` judges it; ``kills``
runs one in child processes SIGKILLed at a command (tests/workers/history_worker.py). The tests are in
tests/test_history_explorer.py; ``scripts/explore`` runs more histories.
"""
