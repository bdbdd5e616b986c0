"""The page's login sessions: the cookie holds a random session id, never the API key.

Logging in with a key opens a session whose id (256 random bits) the login cookie
carries. The server keeps, in memory, per session: the SHA-256 of its id (a dump of the
map yields no cookie that works), the SHA-256 of the key it was opened with, and when it
expires. Each request looks that key up again in the key ring, so a session never
outlives its key nor keeps roles the key no longer has. Logging out closes the session
for good: the same cookie is refused afterwards. Sessions end with the server process
(people log in again after a restart).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.requests import Request

from skillwire.server.auth import KeyRing, Principal

__all__ = ["SESSIONS_PER_KEY", "SESSION_SECONDS", "LoginSessions", "over_https"]

SESSION_SECONDS = 12 * 3600
"""How long a session lasts from login (the cookie's ``Max-Age`` too)."""
SESSIONS_PER_KEY = 50
"""Open sessions kept per key: logging in again past it closes that key's oldest, so a
key holder logging in in a loop cannot grow the server's memory."""


@dataclass(frozen=True)
class _Session:
    key_digest: str
    opened: float
    expires: float


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()


class LoginSessions:
    """Open sessions by the SHA-256 of their id.

    ``clock`` is monotonic seconds (a test passes its own to reach an expiry)."""

    def __init__(
        self,
        *,
        lifetime: float = SESSION_SECONDS,
        per_key: int = SESSIONS_PER_KEY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lifetime = lifetime
        self.per_key = per_key
        self._clock = clock
        self._open: dict[str, _Session] = {}

    def __len__(self) -> int:
        return len(self._open)

    def open(self, key_digest: str) -> str:
        """A new session for the key whose SHA-256 is ``key_digest``; its id (the cookie)."""
        now = self._clock()
        self._forget_expired(now)
        same_key = sorted(
            (s.opened, digest) for digest, s in self._open.items() if s.key_digest == key_digest
        )
        for _, digest in same_key[: max(0, len(same_key) - self.per_key + 1)]:
            del self._open[digest]
        session_id = secrets.token_urlsafe(32)
        self._open[_digest(session_id)] = _Session(key_digest, now, now + self.lifetime)
        return session_id

    def principal(self, session_id: str | None, keys: KeyRing) -> Principal | None:
        """Who the session ``session_id`` belongs to now, or None (unknown, expired, closed,
        or its key is no longer configured)."""
        if not session_id:
            return None
        digest = _digest(session_id)
        session = self._open.get(digest)
        if session is None:
            return None
        if session.expires <= self._clock():
            del self._open[digest]
            return None
        principal = keys.identify_digest(session.key_digest)
        if principal is None:
            del self._open[digest]
        return principal

    def close(self, session_id: str | None) -> bool:
        """End the session ``session_id``; whether it was open."""
        if not session_id:
            return False
        return self._open.pop(_digest(session_id), None) is not None

    def _forget_expired(self, now: float) -> None:
        for digest in [d for d, s in self._open.items() if s.expires <= now]:
            del self._open[digest]


def over_https(request: Request, *, trust_proxy: bool) -> bool:
    """Whether the browser reached the server over HTTPS: the request's own scheme, or,
    behind a proxy the server is told to trust, an ``X-Forwarded-Proto`` naming https.

    Any https entry counts: a client that claims https falsely only gets a ``Secure``
    cookie that its browser then withholds over plain HTTP."""
    if request.url.scheme == "https":
        return True
    if not trust_proxy:
        return False
    forwarded = request.headers.get("x-forwarded-proto", "")
    return "https" in {part.strip().lower() for part in forwarded.split(",")}
