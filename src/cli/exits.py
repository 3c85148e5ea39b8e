"""The CLI's exit codes, and the error that carries one."""

from __future__ import annotations

EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, EXIT_UNKNOWN_THREAD, EXIT_UNREACHABLE = 0, 1, 2, 3, 4


class CliError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code
