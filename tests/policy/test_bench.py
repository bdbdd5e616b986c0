"""The gate benchmark runs, compiles exactly 50 rules over 20 tools, prints one line."""

from __future__ import annotations

import json

import pytest
from bench import gate as bench_gate


def test_bench_skill_has_50_rules_and_20_tools() -> None:
    line = bench_gate.run(distinct=200, rounds=1)
    assert (line["bench"], line["rules"], line["tools"]) == ("gate", 50, 20)
    assert set(line["kinds"]) == {"allow", "block", "need_approval", "need_input"}
    assert line["p50_us"] <= line["p99_us"]
    assert line["decisions"] == 200


def test_bench_prints_one_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_gate.main(["--proposals", "50", "--rounds", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1
    fields = json.loads(out[0])
    assert {"bench", "rules", "p50_us", "p99_us", "decisions_per_s"} <= set(fields)


def test_the_provenance_bench_runs_every_kind_of_decision() -> None:
    from bench import gate_provenance

    line = gate_provenance.run(distinct=100, rounds=1)
    assert (line["bench"], line["history"], line["decisions"]) == ("gate_provenance", 20, 100)
    assert set(line["kinds"]) == {"allow", "block", "need_approval"}
    assert line["p50_us"] <= line["p99_us"]
