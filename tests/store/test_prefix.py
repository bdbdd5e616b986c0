"""Job ids by prefix: ``JobStore.ids_starting`` (one range of the primary key's index)
and ``resolve_job_id`` (a full id, a unique prefix, or a clear error)."""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.store.test_sqlite import make_job

from skillwire.core.errors import NotFoundError, UsageError
from skillwire.core.store import PREFIX_CANDIDATES, after_prefix, resolve_job_id
from skillwire.store import SQLiteJobStore
from skillwire.store.sqlite import _IDS_BETWEEN

T = TypeVar("T")

TRICKY = [
    "abc",
    "abd",
    "ab%",
    "ab_",
    "ab",
    "a",
    "A",
    "b",
    "%",
    "_",
    "%%",
    "a_c",
    "aXc",
    "é1",
    "\U0010ffff",
    "\U0010ffffz",
    "\ud7ffz",
    "\ue000",
    "a\x00b",
    "019ab7c2-1234-7abc-8def-0123456789ab",
    "019ab7c2-1234-7abc-8def-0123456789ac",
]
"""Ids a LIKE or GLOB would get wrong, and the edges of the next-string computation."""


def on_store(ids: Sequence[str], work: Callable[[SQLiteJobStore], Awaitable[T]]) -> T:
    """Run ``work`` on a fresh store holding a job for each of ``ids``."""

    async def main() -> T:
        with tempfile.TemporaryDirectory() as folder:
            store = SQLiteJobStore(Path(folder) / "jobs.db")
            try:
                for job_id in ids:
                    await store.create(make_job(job_id))
                return await work(store)
            finally:
                await store.close()

    return asyncio.run(main())


def starting(ids: Sequence[str], prefix: str) -> list[str]:
    """What the store should answer: by brute force (code point order is UTF-8 order)."""
    return sorted(i for i in ids if i.startswith(prefix))


@pytest.mark.parametrize(
    "prefix",
    [
        *("%", "_", "%%", "a", "ab", "ab%", "ab_", "a_", "A", "z", "\U0010ffff", "\ud7ff"),
        *("019ab7c2-", "a\x00", "' OR 1=1 --", "a' OR id > '"),
    ],
)
def test_a_prefix_is_text_no_wildcard(prefix: str) -> None:
    found = on_store(TRICKY, lambda store: store.ids_starting(prefix, limit=100))
    assert found == starting(TRICKY, prefix)


def test_wildcards_match_only_themselves() -> None:
    ids = ["abc", "a%c", "a_c"]
    assert on_store(ids, lambda s: s.ids_starting("a%", limit=10)) == ["a%c"]
    assert on_store(ids, lambda s: s.ids_starting("a_", limit=10)) == ["a_c"]
    assert on_store(ids, lambda s: s.ids_starting("%", limit=10)) == []


def test_an_empty_prefix_and_a_negative_limit_are_refused() -> None:
    with pytest.raises(UsageError, match="must not be empty"):
        on_store(["a"], lambda s: s.ids_starting(""))
    with pytest.raises(UsageError, match="limit"):
        on_store(["a"], lambda s: s.ids_starting("a", limit=-1))


def test_limit_keeps_the_first_ids_in_order() -> None:
    ids = [f"job-{n:03d}" for n in range(30)]
    assert on_store(ids, lambda s: s.ids_starting("job-", limit=3)) == ids[:3]
    assert on_store(ids, lambda s: s.ids_starting("job-", limit=0)) == []


def test_the_lookup_is_one_range_of_the_index(tmp_path: Path) -> None:
    """The plan searches the primary key's index; it never scans the jobs table."""

    async def fill() -> None:
        async with SQLiteJobStore(tmp_path / "jobs.db") as store:
            await store.create(make_job("abc"))

    asyncio.run(fill())
    db = sqlite3.connect(tmp_path / "jobs.db")
    try:
        plan = " ".join(
            row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {_IDS_BETWEEN}", ("a", "b", 5))
        )
    finally:
        db.close()
    assert "SEARCH jobs USING COVERING INDEX" in plan and "(id>? AND id<?)" in plan, plan
    assert "SCAN" not in plan, plan


def test_the_next_string_after_a_prefix() -> None:
    assert after_prefix("ab") == "ac"
    assert after_prefix("a\U0010ffff") == "b"
    assert after_prefix("\ud7ff") == "\ue000"  # surrogates skipped
    assert after_prefix("\U0010ffff\U0010ffff") is None


@settings(max_examples=40, deadline=None)
@given(
    ids=st.lists(
        st.text(alphabet="ab%_\U0010ffff\ud7ff\ue000é", min_size=1, max_size=4),
        unique=True,
        max_size=8,
    ),
    prefix=st.text(alphabet="ab%_\U0010ffff\ud7ff\ue000é", min_size=1, max_size=3),
)
def test_any_ids_and_any_prefix_as_by_brute_force(ids: list[str], prefix: str) -> None:
    assert on_store(ids, lambda s: s.ids_starting(prefix, limit=100)) == starting(ids, prefix)


# -- resolve_job_id -------------------------------------------------------------------


def resolve(ids: Sequence[str], text: str, visible: Sequence[str] | None = None) -> str:
    async def work(store: SQLiteJobStore) -> str:
        async def can_see(job_id: str) -> bool:
            return visible is None or job_id in visible

        return await resolve_job_id(store, text, visible=can_see if visible is not None else None)

    return on_store(ids, work)


IDS = [
    "019ab7c2-1234-7abc-8def-0123456789ab",
    "019ab7c2-1234-7abc-8def-0123456789ac",
    "019ab7c2-9999-7abc-8def-0123456789ab",
]


def test_a_unique_prefix_or_a_full_id_names_its_job() -> None:
    assert resolve(IDS, "019ab7c2-9") == IDS[2]
    assert resolve(IDS, IDS[0]) == IDS[0]
    assert resolve(IDS, "019ab7c2-1234-7abc-8def-0123456789ac") == IDS[1]


def test_a_full_id_wins_over_longer_ids_that_start_with_it() -> None:
    assert resolve(["ab", "abc", "abd"], "ab") == "ab"


def test_an_ambiguous_prefix_lists_the_candidates() -> None:
    with pytest.raises(UsageError, match="ambiguous") as caught:
        resolve(IDS, "019ab7c2-1")
    message = str(caught.value)
    assert IDS[0] in message and IDS[1] in message and IDS[2] not in message
    assert "2 jobs start with it" in message


@pytest.mark.parametrize("text", ["%", "_", "x", "019ab7c2_", "019AB7C2"])
def test_a_prefix_of_no_job_is_not_found(text: str) -> None:
    with pytest.raises(NotFoundError, match="no job"):
        resolve(IDS, text)


def test_an_empty_or_a_one_character_prefix_names_no_job_by_itself() -> None:
    with pytest.raises(UsageError, match="give a job id"):
        resolve(IDS, "")
    with pytest.raises(UsageError, match="ambiguous"):
        resolve(IDS, "0")


def test_more_candidates_than_are_listed_say_so() -> None:
    ids = [f"job-{n:03d}" for n in range(PREFIX_CANDIDATES + 5)]
    with pytest.raises(UsageError, match=f"more than {PREFIX_CANDIDATES} jobs") as caught:
        resolve(ids, "job-")
    assert str(caught.value).count("job-0") == PREFIX_CANDIDATES


def test_only_visible_jobs_are_candidates_and_named() -> None:
    """A prefix several jobs share names the one the caller may see; the others are
    neither chosen nor named."""
    assert resolve(IDS, "019ab7c2-", visible=[IDS[2]]) == IDS[2]
    with pytest.raises(NotFoundError):
        resolve(IDS, "019ab7c2-1", visible=[IDS[2]])
    with pytest.raises(UsageError) as caught:
        resolve(IDS, "019ab7c2-", visible=[IDS[0], IDS[2]])
    assert IDS[1] not in str(caught.value)
