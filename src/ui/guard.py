"""Who may use the inspector: where it listens, the token a remote client must carry, and the CSRF token of writes.

Loopback (``127.0.0.1``, ``::1``, ``localhost``) by default, where requests must name a loopback host in their
``Host`` header (a web page elsewhere cannot reach the inspector through a DNS name rebound to 127.0.0.1).
Any other address needs ``--allow-remote`` and a token: every request must carry it, as ``Authorization:
Bearer <token>``, the ``token`` cookie, or ``?token=`` (which sets the cookie). Every write is a POST carrying
the server's CSRF token (a form field or the ``X-CSRF-Token`` header), which only its own pages show.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field

from ..errors import InvalidInputError

#: The host names that mean this machine.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
#: The cookie that carries the token once a browser presented it.
TOKEN_COOKIE = "token"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, ``[::1]`` included) is this machine only."""
    host = host.strip("[]") if host.startswith("[") else host
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Guard:
    """The rules of one inspector process.

    Args:
        token: what every request must carry (None on loopback without ``--token``).
        allow_writes: the write routes act (else each answers 403).
        csrf: the token every write must carry; random per process.
    """

    token: str | None = None
    allow_writes: bool = False
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))

    def host_allowed(self, host_header: str) -> bool:
        """Without a token, only a loopback ``Host`` is served (the port aside)."""
        if self.token is not None:
            return True
        name = (
            host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 or host_header.startswith("[") else host_header
        )
        return is_loopback(name)

    def token_valid(self, presented: str | None) -> bool:
        """Whether ``presented`` is the token (always true without one); compared in constant time."""
        if self.token is None:
            return True
        return presented is not None and hmac.compare_digest(presented.encode(), self.token.encode())

    def csrf_valid(self, presented: str | None) -> bool:
        """Whether ``presented`` is this process's CSRF token; compared in constant time."""
        return presented is not None and hmac.compare_digest(presented.encode(), self.csrf.encode())


def guard_for(host: str, *, allow_remote: bool, token: str | None, allow_writes: bool) -> tuple[Guard, bool]:
    """The guard for listening on ``host``, checked before the server starts.

    Args:
        host: the address to listen on.
        allow_remote: ``--allow-remote`` was given.
        token: ``--token``, or None.
        allow_writes: ``--allow-writes`` was given.

    Returns:
        The guard, and whether its token was generated here (so it must be printed).

    Raises:
        InvalidInputError: ``host`` is not loopback and ``--allow-remote`` is missing, or the token is empty.
    """
    if token is not None and len(token) < 16:
        raise InvalidInputError("--token must be at least 16 characters: pass a long random one, or let ui make one")
    if is_loopback(host):
        return Guard(token=token, allow_writes=allow_writes), False
    if not allow_remote:
        raise InvalidInputError(
            f"ui listens on {host!r}, which is not loopback: anyone who reaches it could read every thread. "
            "Pass --allow-remote (a token is then required: --token, or one is made and printed), or --host 127.0.0.1"
        )
    made = token is None
    return Guard(token=token or secrets.token_urlsafe(24), allow_writes=allow_writes), made
