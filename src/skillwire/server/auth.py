"""API keys, principals and roles.

A key is given as ``Authorization: Bearer <key>`` (the API) or once, to the login form,
which opens a server-side session (:mod:`.sessions`): the page's cookie holds the
session's id, never the key. Only the key's SHA-256 is configured and kept; a presented
key is hashed and compared with :func:`hmac.compare_digest` against every configured
hash. Roles:

- ``user``: start jobs, see them, answer the input they wait for;
- ``admin``: see every job, answer an operator's question, reload skills;
- any other role is an approver role: a job waiting for an approval that a rule gives to
  that role (``approver: supervisor``) is in the inbox of every principal holding it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from skillwire.config import ServerKey

__all__ = [
    "ADMIN",
    "COOKIE_NAME",
    "USER",
    "KeyRing",
    "Principal",
    "hash_key",
    "new_key",
]

USER = "user"
"""Starts jobs, sees and answers its own."""
ADMIN = "admin"
"""Sees every job and reloads skills."""
COOKIE_NAME = "skillwire_session"
"""The page's login cookie: a session id (HttpOnly, SameSite=Strict, Secure over HTTPS)."""


def hash_key(key: str) -> str:
    """The SHA-256 of ``key`` as lowercase hex: what ``[[server.keys]]`` stores.

    A lone surrogate is hashed as it stands (it matches no configured key) rather than
    failing the request."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def new_key() -> str:
    """A fresh random key (256 bits, URL-safe)."""
    return "sw_" + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Principal:
    """Who is calling, and the roles they hold."""

    name: str
    roles: frozenset[str]
    dev: bool = False
    """The ``--dev`` key's principal."""

    def has(self, role: str) -> bool:
        """Whether the principal holds ``role``."""
        return role in self.roles

    @property
    def is_admin(self) -> bool:
        """Holds ``admin``."""
        return ADMIN in self.roles

    @property
    def can_start(self) -> bool:
        """Holds ``user``."""
        return USER in self.roles

    @property
    def approver_roles(self) -> frozenset[str]:
        """The roles held other than ``user`` and ``admin``."""
        return self.roles - {USER, ADMIN}

    def to_dict(self) -> dict[str, object]:
        """JSON form."""
        return {"principal": self.name, "roles": sorted(self.roles), "dev": self.dev}


@dataclass(frozen=True)
class _Entry:
    principal: str
    roles: frozenset[str]
    digest: str
    dev: bool = False


class KeyRing:
    """The configured keys (hashed), plus the ``--dev`` key when the server runs with it.

    The dev principal holds ``user``, ``admin`` and every approver role that
    ``approver_roles`` names at the time of the call (the roles the loaded skills use).
    """

    def __init__(
        self,
        keys: Sequence[ServerKey],
        *,
        dev_key: str | None = None,
        approver_roles: Callable[[], Iterable[str]] = lambda: (),
    ) -> None:
        self._entries = [_Entry(k.principal, frozenset(k.roles), k.key_sha256) for k in keys]
        if dev_key is not None:
            self._entries.append(_Entry("dev", frozenset({USER, ADMIN}), hash_key(dev_key), True))
        self._approver_roles = approver_roles

    def __len__(self) -> int:
        return len(self._entries)

    def identify(self, key: str | None) -> Principal | None:
        """The principal holding ``key``, or None. Every entry is compared (no early exit)."""
        if not key:
            return None
        return self.identify_digest(hash_key(key))

    def identify_digest(self, digest: str) -> Principal | None:
        """The principal of the key whose SHA-256 is ``digest`` (a session's), or None."""
        found: _Entry | None = None
        for entry in self._entries:
            if hmac.compare_digest(entry.digest, digest):
                found = entry
        if found is None:
            return None
        roles = found.roles
        if found.dev:
            roles = roles | frozenset(self._approver_roles())
        return Principal(found.principal, roles, found.dev)
