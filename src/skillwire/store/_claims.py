"""The queries of cross-job claims in SQLite (``m007_claims``).

A save that takes claims checks each one before it changes anything (the rule of
:mod:`~skillwire.store._group_commit`: a refused write has written nothing), under the
file's write lock, so the check and the insert that follows it are one step for every
other writer; ``claims_once`` also holds a ``once_per`` key to one row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from skillwire.core.errors import ClaimConflictError
from skillwire.core.store import Claim, ClaimCount, count_claims

__all__ = ["check_claims", "count", "keep_claims"]

_HELD = "SELECT job_id, call, made_at FROM claims WHERE key = ? AND made_at > ?"
_HELD_EVER = "SELECT job_id, call, made_at FROM claims WHERE key = ?"
_TAKE = (
    "INSERT INTO claims (key, job_id, call, made_at, once) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (key, call) DO NOTHING"
)
_RELEASE = "DELETE FROM claims WHERE job_id = ? AND call = ?"
_EXPIRED = "DELETE FROM claims WHERE key = ? AND once = 0 AND made_at <= ?"


def count(db: sqlite3.Connection, claim: Claim) -> ClaimCount:
    """The claims on ``claim.key`` that count against it now."""
    since = claim.since
    if since is None:
        rows = db.execute(_HELD_EVER, (claim.key,)).fetchall()
    else:
        rows = db.execute(_HELD, (claim.key, since)).fetchall()
    return count_claims(claim, rows)


def check_claims(db: sqlite3.Connection, job_id: str, claims: Sequence[Claim]) -> None:
    """Raise :class:`ClaimConflictError` for the first claim whose limit is reached
    (reads only)."""
    for claim in claims:
        found = count(db, claim)
        if claim.refused_by(found.held):
            raise ClaimConflictError(
                job_id, claim.key, claim.limit, found.held, list(found.holders)
            )


def keep_claims(
    db: sqlite3.Connection, job_id: str, claims: Sequence[Claim], released: Sequence[str]
) -> None:
    """Insert the claims (one a call already holds is kept as it is) and delete those of
    the ``released`` calls of ``job_id``; a windowed claim deletes its key's stale
    claims (:attr:`~skillwire.core.store.Claim.stale_before`)."""
    for claim in claims:
        once = claim.limit == 1 and claim.window is None
        db.execute(_TAKE, (claim.key, job_id, claim.call, claim.at, int(once)))
        before = claim.stale_before
        if before is not None:
            db.execute(_EXPIRED, (claim.key, before))
    for call in released:
        db.execute(_RELEASE, (job_id, call))
