"""The times and ids a job records: written as the standard library writes them, though
made without it on the hot path (:func:`skillwire.engine.run.now`, the ids)."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

import pytest

from skillwire.engine import run as run_module
from skillwire.engine.run import new_correlation_id, new_job_id, now


def test_now_is_isoformat_with_microseconds_and_the_current_time() -> None:
    before = datetime.now(UTC)
    text = now()
    after = datetime.now(UTC)
    assert before <= datetime.fromisoformat(text) <= after
    assert text == datetime.fromisoformat(text).isoformat(timespec="microseconds")


@pytest.mark.parametrize(
    "nanos",
    [
        0,
        999,
        1_000,
        999_999_999,
        1_764_045_539_000_000_000,
        1_764_045_539_000_001_999,
        1_764_045_539_999_999_999,
        4_102_444_799_999_999_000,
    ],
)
def test_now_writes_what_the_standard_library_writes(
    monkeypatch: pytest.MonkeyPatch, nanos: int
) -> None:
    monkeypatch.setattr(run_module, "_second", (-1, ""))
    monkeypatch.setattr(time, "time_ns", lambda: nanos)
    expected = datetime.fromtimestamp(nanos // 1_000_000_000, UTC).replace(
        microsecond=nanos // 1000 % 1_000_000
    )
    assert now() == expected.isoformat(timespec="microseconds")


def test_now_formats_a_new_second_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([5_999_999_999_999, 6_000_000_000_000])
    monkeypatch.setattr(time, "time_ns", lambda: next(clock))
    assert now() == "1970-01-01T01:39:59.999999+00:00"
    assert now() == "1970-01-01T01:40:00.000000+00:00"


def test_job_ids_are_version_7_uuids_in_time_order() -> None:
    first = new_job_id()
    parsed = uuid.UUID(first)
    assert str(parsed) == first
    assert parsed.version == 7
    assert parsed.variant == uuid.RFC_4122
    millis = parsed.int >> 80
    assert abs(millis - time.time_ns() // 1_000_000) < 60_000
    ids = [new_job_id() for _ in range(50)]
    assert len(set(ids)) == 50
    assert [i[:13] for i in ids] == sorted(i[:13] for i in ids)  # the time part


def test_correlation_ids_are_random_version_4_uuids() -> None:
    ids = [new_correlation_id() for _ in range(200)]
    assert len(set(ids)) == 200
    for text in ids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text  # lower case, dashes where uuid puts them
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
