"""The queries of cross-job claims in PostgreSQL (``m003_claims``).

Before it counts a key's claims, a save takes ``pg_advisory_xact_lock`` of the key (in
key order, so two saves never wait on each other crosswise): saves that claim the same
key count one after the other, each seeing what the one before committed, and the lock
is held to the end of the transaction that inserts the claim. ``claims_once`` holds a
``once_per`` key to one row besides.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from skillwire.core.errors import ClaimConflictError
from skillwire.core.store import Claim, ClaimCount, count_claims

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["check_claims", "count", "keep_claims"]

_LOCK_KEY = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
_HELD = "SELECT job_id, call, made_at FROM claims WHERE key = %s AND made_at > %s"
_HELD_EVER = "SELECT job_id, call, made_at FROM claims WHERE key = %s"
_TAKE = (
    "INSERT INTO claims (key, job_id, call, made_at, once) VALUES (%s, %s, %s, %s, %s) "
    "ON CONFLICT (key, call) DO NOTHING"
)
_RELEASE = "DELETE FROM claims WHERE job_id = %s AND call = %s"
_EXPIRED = "DELETE FROM claims WHERE key = %s AND NOT once AND made_at <= %s"


async def count(conn: AsyncConnection[Any], claim: Claim) -> ClaimCount:
    since = claim.since
    if since is None:
        found = await conn.execute(_HELD_EVER, (claim.key,))
    else:
        found = await conn.execute(_HELD, (claim.key, since))
    return count_claims(claim, await found.fetchall())


async def keep_claims(
    conn: AsyncConnection[Any], job_id: str, claims: Sequence[Claim], released: Sequence[str]
) -> None:
    """Insert the claims (one its call holds already is kept) and delete the released
    calls'; a windowed claim deletes its key's stale claims
    (:attr:`~skillwire.core.store.Claim.stale_before`). A ``once_per`` key another
    transaction took meanwhile (which the advisory lock prevents) would break
    ``claims_once``: refused as a conflict all the same."""
    import psycopg

    for claim in claims:
        once = claim.limit == 1 and claim.window is None
        try:
            await conn.execute(_TAKE, (claim.key, job_id, claim.call, claim.at, once))
        except psycopg.errors.UniqueViolation:
            raise ClaimConflictError(job_id, claim.key, claim.limit, 1, []) from None
        before = claim.stale_before
        if before is not None:
            await conn.execute(_EXPIRED, (claim.key, before))
    for call in released:
        await conn.execute(_RELEASE, (job_id, call))


async def check_claims(conn: AsyncConnection[Any], job_id: str, claims: Sequence[Claim]) -> None:
    """Lock each claim's key, then raise :class:`ClaimConflictError` for the first whose
    limit is reached (reads only: the transaction is rolled back)."""
    for claim in sorted(claims, key=lambda c: c.key):  # one lock order: no deadlock
        await conn.execute(_LOCK_KEY, (claim.key,))
        found = await count(conn, claim)
        if claim.refused_by(found.held):
            raise ClaimConflictError(
                job_id, claim.key, claim.limit, found.held, list(found.holders)
            )
