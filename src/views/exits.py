"""The CLI's exit codes, and the error that carries one (the web inspector answers it with an HTTP status).

- ``EXIT_OK`` (0): done.
- ``EXIT_PROBLEM`` (1): ``doctor`` found a problem, ``import-mongodbsaver`` a mismatch, the library refused an
  operation (the message says why), a stored document could not be read (``threads`` and ``inspect`` show the
  rest and name each such document), or the server refused a command for another reason than credentials.
- ``EXIT_USAGE`` (2): bad usage or URI, or a deletion nobody confirmed.
- ``EXIT_UNKNOWN_THREAD`` (3): unknown thread or journal position.
- ``EXIT_UNREACHABLE`` (4): the server cannot be reached.
- ``EXIT_AUTH`` (5): the server refused the credentials (authentication failed) or the user's rights
  (not authorized): fix the user, the password, ``authSource`` or the user's roles; retrying will not help.
- ``EXIT_WARNING`` (6): ``doctor`` found nothing broken but warns (FerretDB's conditional updates are not atomic:
  run one worker per thread), so a script that checks the exit code hears it.
"""

from __future__ import annotations

EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, EXIT_UNKNOWN_THREAD, EXIT_UNREACHABLE, EXIT_AUTH, EXIT_WARNING = 0, 1, 2, 3, 4, 5, 6


class CliError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code
