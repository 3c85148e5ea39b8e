"""What really happened in a history, outside MongoDB: every real execution of an effect, every value a node got
back, and when the fault fired. In this process a list; shared with child processes, a file of JSON lines (each
appended and fsynced, so it survives the SIGKILL that may follow at once)."""

from __future__ import annotations

import contextvars
import json
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Ledger:
    """Records of ``kind`` ``executed`` (an effect ran for real), ``got`` (a node got a value back) and ``fault``."""

    path: Path | None = None
    life: int = 1  # which life of the thread id runs (a delete and reuse starts the next)
    records: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, kind: str, **fields: Any) -> dict[str, Any]:
        with self._lock:
            record = {"kind": kind, "life": self.life, "pid": os.getpid(), **fields}
            self.records.append(record)
            if self.path is not None:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(fd, (json.dumps(record) + "\n").encode())
                    os.fsync(fd)
                finally:
                    os.close(fd)
            return record

    def executed(self, slot: dict[str, Any], key: str) -> str:
        """Note a real execution of the effect at ``slot``; returns its token, unique to this execution."""
        token = uuid.uuid4().hex[:10]
        self.add("executed", token=token, key=key, at=time.monotonic_ns(), **slot)
        return token

    def all(self) -> list[dict[str, Any]]:
        """Every record: from the file when there is one (child processes wrote there too), else this process's."""
        if self.path is None:
            return list(self.records)
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.all() if r["kind"] == kind]


#: The ledger the effects of this process record on (the history running now sets it).
CURRENT = Ledger()
#: The same, as the context the history's runs started in saw it: an effect a history's run left running in a thread,
#: which ends only once the next history has started, is noted on its own history's ledger, not on the next one's.
_BOUND: contextvars.ContextVar[Ledger | None] = contextvars.ContextVar("ledger", default=None)


def use(ledger: Ledger) -> Ledger:
    global CURRENT
    CURRENT = ledger
    _BOUND.set(ledger)
    return ledger


def current() -> Ledger:
    """The ledger of the history whose run calls this (``CURRENT`` outside any)."""
    return _BOUND.get() or CURRENT
