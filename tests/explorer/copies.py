"""The operator action "``copy_thread``, then resume both": once the history's first run returned or raised (at an
interrupt, after its fault, or done), its thread is copied to ``COPY_THREAD``; the source's life goes on, then the
copy's life resumes the copy to its end.

The copy's life is numbered ``COPY_LIFE`` + the source's on the ledger, so its slots are its own: the oracle judges
that every effect the copy runs again runs under the copy's key (``one_key``: no key of the source's), that a value
the copy replays was produced by an execution made before the copy (``own_value``), and that a slot runs no more
often, the source's executions before the copy counted in (``runs_once``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import ledger

COPY_THREAD = "history-copy"
#: The copy's life on the ledger: this plus the source's.
COPY_LIFE = 100


class Copy:
    """The ``after_first_run`` action of a history's first life, then the copy's own life (``resume``)."""

    def __init__(self, history_ledger: ledger.Ledger) -> None:
        self.ledger = history_ledger
        self.source_life = history_ledger.life
        self.life = COPY_LIFE + self.source_life
        self.at = 0  # the ledger's records once the copy was made: the executions the copy inherits

    async def __call__(self, driver: Any) -> None:
        try:
            await self._copy(driver)
        except Exception:  # noqa: BLE001 - the history's storage fault cut it short: the same call completes it
            await self._copy(driver)
        # once copied: ``copy_thread`` first waits for the effects the source's ended run left running here (a node
        # that stopped waiting for them), so those the ledger saw end during the call are the copy's inheritance
        self.at = len(self.ledger.all())

    @staticmethod
    async def _copy(driver: Any) -> None:
        source = driver.config["configurable"]["thread_id"]
        saver = driver.platform.checkpointer
        if driver.plan.mode != "sync":  # an async graph (async or mixed nodes): the async API, as Driver.call
            await saver.acopy_thread(source, COPY_THREAD)
        else:
            saver.copy_thread(source, COPY_THREAD)

    def resume(self, run_life: Callable[[str], Any]) -> Any:
        """The copy's life, run by ``run_life(thread_id)`` with its life number on the ledger."""
        previous, self.ledger.life = self.ledger.life, self.life
        try:
            return run_life(COPY_THREAD)
        finally:
            self.ledger.life = previous  # the source's, or its fork's after it
