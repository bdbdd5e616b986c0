"""bench.concurrency on a few jobs: every job ends as expected, in one process and in
several sharing one SQLite file, each process approving jobs another one started."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from bench import concurrency

LATENCY = 0.005


pytestmark = pytest.mark.usefixtures("collector")  # the bench tunes it, as serve does


@pytest.mark.parametrize("processes", [1, 2])
def test_every_job_completes_and_is_counted(tmp_path: Path, processes: int) -> None:
    line = concurrency.measure(6, LATENCY, tmp_path, processes)
    assert line["failed_jobs"] == 0
    assert line["processes"] == processes
    assert line["model_calls"] == 6 * concurrency.CALLS_PER_JOB
    assert line["wall_s"] >= line["ideal_s"] == round(concurrency.CALLS_PER_JOB * LATENCY, 3)
    assert 0 < line["all_paused_s"] < line["wall_s"]
    db = sqlite3.connect(tmp_path / "jobs.db")
    try:
        rows = db.execute("SELECT status, outcome_class FROM jobs").fetchall()
    finally:
        db.close()
    # the warm-up job of each process, then the jobs measured: all completed
    assert rows == [("completed", "SUCCESS")] * (6 + processes)


def test_jobs_that_do_not_split_evenly_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="does not split"):
        concurrency.measure(5, LATENCY, tmp_path, 2)


def test_main_prints_one_json_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    concurrency.main(["--jobs", "4", "--latency", str(LATENCY), "--processes", "2"])
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1
    assert json.loads(out[0])["processes"] == 2
