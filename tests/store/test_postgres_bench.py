"""bench.concurrency --store postgres: every job ends as expected on both stores, two
processes sharing each database, and one JSON line carries both stores' figures."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator

import pytest
from bench import concurrency


@pytest.fixture
def collector() -> Iterator[None]:
    """The collector put back as it was (the bench tunes and freezes it)."""
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)
    gc.unfreeze()


@pytest.mark.usefixtures("collector")
def test_the_bench_runs_on_postgres_next_to_sqlite(
    pg_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    concurrency.main(
        ["--jobs", "6", "--latency", "0.005", "--workers", "2", "--store", "postgres",
         "--pg-url", pg_server]
    )  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1
    line = json.loads(out[0])
    assert (line["store"], line["processes"], line["failed_jobs"]) == ("postgres", 2, 0)
    assert line["model_calls"] == 6 * concurrency.CALLS_PER_JOB
    assert line["sqlite"]["failed_jobs"] == 0
    for figures in (line, line["sqlite"]):
        assert figures["jobs_per_s"] > 0
        assert 0 < figures["resume_p50_ms"] <= figures["resume_p99_ms"]
    assert line["resume_p50_ms"] >= line["resume_ideal_ms"] == 3 * 5.0
