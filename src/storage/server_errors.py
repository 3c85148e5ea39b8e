"""What a MongoDB server's failure means, as the typed errors of ``errors``: pymongo's exceptions translated
once, so a caller (the CLI) tells an unreachable server from a refused login without knowing pymongo.

Example::

    with typed_server_errors(uri):
        client.admin.command("ping")  # raises ServerUnreachableError, AccessDeniedError, ServerRefusedError
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pymongo.errors import ConnectionFailure, OperationFailure, PyMongoError

from ..errors import AccessDeniedError, ServerRefusedError, ServerUnreachableError
from .connections import masked_uri

#: MongoDB's codes for a refused login or right (UserNotFound, Unauthorized, AuthenticationFailed), and what to fix.
AUTH_CODES = {
    11: "the user does not exist: check the user name and authSource",
    13: "the user lacks a role this command needs: grant readWrite on the database (dbAdmin for doctor --fix)",
    18: "authentication failed: check the user name, the password, authSource and authMechanism",
}


def translated(error: PyMongoError, uri: str | None) -> ServerRefusedError | ServerUnreachableError:
    """Our typed error for what pymongo raised; its message names the server by its masked URI (``masked_uri``).

    Args:
        error: what pymongo raised (its messages carry hosts, never credentials).
        uri: the URI connected to (None for a client passed in).

    Returns:
        ``AccessDeniedError`` for a refused login or right (``AUTH_CODES``), ``ServerUnreachableError`` for a
        connection failure, ``ServerRefusedError`` for any other refused command.
    """
    where = f"MongoDB at {masked_uri(uri)}" if uri else "MongoDB"
    if isinstance(error, OperationFailure) and error.code in AUTH_CODES:
        return AccessDeniedError(f"{where} refused: {AUTH_CODES[error.code]} ({error})")
    if isinstance(error, ConnectionFailure):
        return ServerUnreachableError(f"cannot reach {where}: {error}")
    return ServerRefusedError(f"{where} refused the command: {error}")


@contextmanager
def typed_server_errors(uri: str | None) -> Iterator[None]:
    """Raise ``translated(error, uri)`` for any pymongo error the block raises (pymongo's own left out of the chain).

    Args:
        uri: the URI connected to (None for a client passed in).

    Raises:
        AccessDeniedError, ServerUnreachableError, ServerRefusedError: as ``translated`` says.
    """
    try:
        yield
    except PyMongoError as error:
        raise translated(error, uri) from None
