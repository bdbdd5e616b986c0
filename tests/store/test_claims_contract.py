"""The contract of cross-job claims (``once_per``, ``rate_limit``), run against the
SQLite store, the in-memory store and the PostgreSQL store (on a throwaway server: see
``conftest.py``): a claim is taken in the save that carries it or the save is refused
whole; racing jobs never both get the last claim; a released call gives its claim back.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from tests.store.test_contract import Backend, Open, backend, event, make_job, run

from skillwire.core.errors import ClaimConflictError, UsageError, VersionConflict
from skillwire.core.job import JobRecord
from skillwire.core.store import Claim, ClaimStore, claim_key

__all__ = ["backend"]  # the fixture, shared with the job contract

KEY = claim_key("refund", "process_refund", "once_per args.order_id", "ORD-1")
T0 = 1_800_000_000.0


def once(call: str, key: str = KEY, at: float = T0) -> Claim:
    return Claim(key, 1, None, at, call)


async def started(opener: Open, job_id: str) -> tuple[ClaimStore, JobRecord]:
    store = opener()
    assert isinstance(store, ClaimStore)
    job = await store.create(make_job(job_id))  # type: ignore[attr-defined]
    return store, job


def test_every_store_keeps_claims(backend: Backend) -> None:
    async def body(opener: Open) -> None:
        assert isinstance(opener(), ClaimStore)

    run(backend, body)


def test_a_once_claim_is_taken_once_across_jobs(backend: Backend) -> None:
    async def body(opener: Open) -> None:
        store, a = await started(opener, "a")
        _, b = await started(opener, "b")
        saver = opener()
        before = await store.claim_ledger([once("b:0")])
        assert before.held(once("b:0")) is not None and before.held(once("b:0")).held == 0  # type: ignore[union-attr]
        await saver.save(a, expected_version=1, events=[event("a", 1)], claims=[once("a:0")])
        seen = (await store.claim_ledger([once("b:0")])).held(once("b:0"))
        assert seen is not None and seen.held == 1 and seen.holders == ("a",)
        with pytest.raises(ClaimConflictError) as refused:
            await saver.save(b, expected_version=1, events=[event("b", 1)], claims=[once("b:0")])
        assert refused.value.holders == ["a"] and refused.value.key == KEY
        # refused whole: b's version, events and claims are as they were
        stored = await saver.get("b")
        assert stored is not None and stored.version == 1
        assert await saver.events("b") == []
        await saver.save(b, expected_version=1, events=[event("b", 1)])  # without: it lands
        # the same call claiming again (a recovery re-runs it) keeps its claim
        a2 = await saver.get("a")
        assert a2 is not None
        await saver.save(a2, expected_version=2, claims=[once("a:0")])
        # another key is free
        other = once("b:1", key=claim_key("refund", "process_refund", "x", "ORD-2"))
        await saver.save(await _now(saver, "b"), expected_version=2, claims=[other])

    run(backend, body)


async def _now(store: object, job_id: str) -> JobRecord:
    found = await store.get(job_id)  # type: ignore[attr-defined]
    assert found is not None
    return found


def test_a_released_call_gives_its_claim_back(backend: Backend) -> None:
    async def body(opener: Open) -> None:
        store, a = await started(opener, "a")
        _, b = await started(opener, "b")
        a = await store.save(a, expected_version=1, claims=[once("a:0")])  # type: ignore[attr-defined]
        with pytest.raises(ClaimConflictError):
            await store.save(b, expected_version=1, claims=[once("b:0")])  # type: ignore[attr-defined]
        # another job's release does not free a's claim
        b = await store.save(b, expected_version=1, released=["a:0"])  # type: ignore[attr-defined]
        with pytest.raises(ClaimConflictError):
            await store.save(b, expected_version=2, claims=[once("b:0")])  # type: ignore[attr-defined]
        await store.save(a, expected_version=2, released=["a:0"])  # type: ignore[attr-defined]
        await store.save(b, expected_version=2, claims=[once("b:0")])  # type: ignore[attr-defined]

    run(backend, body)


def test_a_version_conflict_takes_no_claim(backend: Backend) -> None:
    async def body(opener: Open) -> None:
        store, a = await started(opener, "a")
        _, b = await started(opener, "b")
        with pytest.raises(VersionConflict):
            await store.save(a, expected_version=7, claims=[once("a:0")])  # type: ignore[attr-defined]
        await store.save(b, expected_version=1, claims=[once("b:0")])  # type: ignore[attr-defined]

    run(backend, body)


def test_rate_claims_count_in_their_window(backend: Backend) -> None:
    async def body(opener: Open) -> None:
        key = claim_key("refund", "process_refund", "rate_limit user", "u1")
        store, a = await started(opener, "a")

        def rate(call: str, at: float) -> Claim:
            return Claim(key, 2, 3600.0, at, call)

        version = a.version
        for n, at in enumerate((T0, T0 + 10)):
            a = await store.save(a, expected_version=version, claims=[rate(f"a:{n}", at)])  # type: ignore[attr-defined]
            version = a.version
        with pytest.raises(ClaimConflictError) as refused:
            await store.save(a, expected_version=version, claims=[rate("a:2", T0 + 20)])  # type: ignore[attr-defined]
        assert refused.value.held == 2 and refused.value.limit == 2
        ledger = await store.claim_ledger([rate("a:2", T0 + 3601)])  # type: ignore[attr-defined]
        assert ledger.held(rate("a:2", T0 + 3601)).held == 1  # the first one has aged out
        await store.save(a, expected_version=version, claims=[rate("a:2", T0 + 3601)])  # type: ignore[attr-defined]

    run(backend, body)


def test_a_windowed_claim_deletes_the_claims_its_window_no_longer_counts(
    backend: Backend,
) -> None:
    """Rate-limit rows do not pile up: a claim taken deletes its key's claims made at or
    before its window's start (and no other key's, and never a ``once_per`` claim), so a
    key holds at most the claims of one window; what still counts is kept."""

    async def body(opener: Open) -> None:
        key = claim_key("refund", "process_refund", "rate_limit user", "u1")
        other = claim_key("refund", "process_refund", "rate_limit user", "u2")
        store, a = await started(opener, "a")

        def rate(call: str, at: float, on: str = key) -> Claim:
            return Claim(on, 3, 60.0, at, call)

        version = a.version
        taken = [rate("a:0", T0 + 30), rate("a:1", T0 + 40), rate("a:2", T0, other), once("a:3")]
        taken += [rate("a:4", T0 + 150)]  # two windows before it: T0 + 30, a:0 goes
        for claim in taken:
            a = await store.save(a, expected_version=version, claims=[claim])  # type: ignore[attr-defined]
            version = a.version
        # seen through a window of a day: only what the last claim's window still counts
        # is left on its key; the other key and the once_per claim are untouched
        day = 86_400.0
        wide = Claim(key, 100, day, T0 + 100, "probe")
        wide_other = Claim(other, 100, day, T0 + 100, "probe")
        ledger = await store.claim_ledger([wide, wide_other, once("probe")])  # type: ignore[attr-defined]
        assert ledger.held(wide).held == 2  # a:1 and a:4; a:0 is gone
        assert ledger.held(wide_other).held == 1
        assert ledger.held(once("probe")).held == 1

    run(backend, body)


def test_a_worker_whose_clock_runs_ahead_deletes_no_claim_others_still_count(
    backend: Backend,
) -> None:
    """Pruning keeps a second window as a margin: a claim made by a worker whose clock
    is 50 s ahead (window 60 s) deletes nothing that a worker on time still counts, so
    one skewed clock cannot reset a rate limit for every worker."""

    async def body(opener: Open) -> None:
        key = claim_key("refund", "process_refund", "rate_limit user", "u1")
        store, a = await started(opener, "a")

        def rate(call: str, at: float) -> Claim:
            return Claim(key, 3, 60.0, at, call)

        version = a.version
        for claim in (rate("a:0", T0), rate("a:1", T0 + 10), rate("a:2", T0 + 110)):
            a = await store.save(a, expected_version=version, claims=[claim])  # type: ignore[attr-defined]
            version = a.version
        on_time = rate("probe", T0 + 60)  # its window: after T0
        ledger = await store.claim_ledger([on_time])  # type: ignore[attr-defined]
        assert ledger.held(on_time).held == 2  # a:1 and a:2, whatever the skewed claim pruned

    run(backend, body)


def test_racing_jobs_never_both_get_the_last_claim(backend: Backend) -> None:
    """Eight jobs on eight handles (eight processes, in effect) claim one order id at
    once, round after round: exactly one wins each key."""

    async def body(opener: Open) -> None:
        handles = [opener() for _ in range(8)]
        jobs = [await h.create(make_job(f"j{n}")) for n, h in enumerate(handles)]
        for round_ in range(5):
            key = claim_key("refund", "process_refund", "once", f"ORD-{round_}")
            attempts = [
                h.save(
                    job,
                    expected_version=job.version,
                    events=[event(job.id, round_ + 1)],
                    claims=[once(f"{job.id}:{round_}", key=key)],
                )
                for h, job in zip(handles, jobs, strict=True)
            ]
            results = await asyncio.gather(*attempts, return_exceptions=True)
            won = [r for r in results if isinstance(r, JobRecord)]
            lost = [r for r in results if isinstance(r, ClaimConflictError)]
            assert len(won) == 1 and len(lost) == 7, results
            jobs = [
                next((w for w in won if w.id == job.id), job) for job in jobs
            ]  # only the winner moved on
            jobs = [await handles[0].get(job.id) or job for job in jobs]  # type: ignore[misc]

    run(backend, body)


def test_bad_claims_are_usage_errors(backend: Backend) -> None:
    async def body(opener: Open) -> None:
        store, a = await started(opener, "a")
        for bad in (
            replace(once("a:0"), call=""),
            replace(once("a:0"), key=""),
            replace(once("a:0"), limit=-1),
            replace(once("a:0"), at=float("nan")),
            replace(once("a:0"), window=float("inf")),
        ):
            with pytest.raises(UsageError):
                await store.save(a, expected_version=1, claims=[bad])  # type: ignore[attr-defined]
        stored = await store.get("a")  # type: ignore[attr-defined]
        assert stored is not None and stored.version == 1

    run(backend, body)
