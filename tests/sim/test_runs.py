"""Runs on disk: audit.jsonl and run.json as specified, byte-identical replay,
counterfactual governance, the report, determinism and concurrency."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest
from tests.sim.helpers import FLOOD, answer, simulate

from skillwire.core.chat import ChatRequest, ChatResponse
from skillwire.core.errors import ModelUnavailableError, UsageError
from skillwire.sim import load_experiment
from skillwire.sim.proposers import ChatProposer, OfflineProposer, ScriptedProposer
from skillwire.sim.report import build_report, write_chart, write_csv
from skillwire.sim.runner import RunSettings
from skillwire.sim.runs import replay_run, run_experiment

EXP = load_experiment(FLOOD)
FIELDS = {
    "step",
    "agent",
    "agent_type",
    "attempt",
    "raw_output",
    "proposal",
    "results",
    "outcome",
    "executed_skill",
    "state_before",
    "state_after",
}


def offline(seed: int = 42) -> OfflineProposer:
    return OfflineProposer(seed, EXP.temperature, EXP.response_fields, EXP.delimiters)


def run(
    out: Path,
    proposer: Any = None,
    *,
    profile: str = "strict",
    agents: int | None = 20,
    steps: int = 5,
    concurrency: int = 8,
    model: str = "offline",
) -> None:
    asyncio.run(
        run_experiment(
            EXP,
            proposer or offline(),
            RunSettings(profile, 42, steps, agents, concurrency),
            out,
            model_spec=model,
        )
    )


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_audit_records_and_run_json_are_as_specified(tmp_path: Path) -> None:
    run(tmp_path)
    records = lines(tmp_path / "audit.jsonl")
    assert records and all(set(r) == FIELDS for r in records)
    assert {r["outcome"] for r in records} <= {"approved", "rejected", "fallback"}
    for r in records:
        for result in r["results"]:
            assert set(result) == {"validator", "rule", "level", "ok", "message"}
        if r["executed_skill"] is None:
            assert r["state_after"] == r["state_before"]
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["schema_version"] == 1 and meta["seed"] == 42 and meta["model"] == "offline"
    assert meta["governance"] == "strict" and meta["agents"] == 20 and meta["steps"] == 5
    assert set(meta["config_hashes"]) >= {
        "experiment.yaml",
        "skill_registry.yaml",
        "agent_types.yaml",
        "world.py",
    }
    assert meta["versions"]["python"] and meta["audit"]["records"] == len(records)


def test_the_audit_holds_no_wall_clock_and_two_runs_are_the_same_bytes(tmp_path: Path) -> None:
    run(tmp_path / "a")
    run(tmp_path / "b", concurrency=1)
    assert (tmp_path / "a" / "audit.jsonl").read_bytes() == (
        tmp_path / "b" / "audit.jsonl"
    ).read_bytes()


def test_another_seed_is_another_run(tmp_path: Path) -> None:
    run(tmp_path / "a")
    asyncio.run(
        run_experiment(
            EXP, offline(7), RunSettings("strict", 7, 5, 20), tmp_path / "b", model_spec="offline"
        )
    )
    assert (tmp_path / "a" / "audit.jsonl").read_bytes() != (
        tmp_path / "b" / "audit.jsonl"
    ).read_bytes()


def test_replay_with_the_same_profile_is_byte_identical(tmp_path: Path) -> None:
    run(tmp_path)
    outcome = asyncio.run(replay_run(tmp_path))
    assert outcome.identical is True and not outcome.counterfactual
    assert (outcome.out / "audit.jsonl").read_bytes() == (tmp_path / "audit.jsonl").read_bytes()


def test_replay_reports_a_tampered_audit(tmp_path: Path) -> None:
    run(tmp_path)
    path = tmp_path / "audit.jsonl"
    text = path.read_text().splitlines(keepends=True)
    text[3] = (
        text[3].replace('"approved"', '"rejected"', 1) if '"approved"' in text[3] else text[3] + " "
    )
    path.write_text("".join(text))
    outcome = asyncio.run(replay_run(tmp_path))
    assert outcome.identical is False and outcome.first_difference == 4


def test_replay_refuses_a_changed_experiment(tmp_path: Path, flood_copy: Path) -> None:
    exp = load_experiment(flood_copy)
    asyncio.run(
        run_experiment(
            exp, offline(), RunSettings("strict", 42, 2, 3), tmp_path / "run", model_spec="offline"
        )
    )
    with (flood_copy / "world.py").open("a") as handle:
        handle.write("\n# changed\n")
    with pytest.raises(UsageError, match=r"world\.py"):
        asyncio.run(replay_run(tmp_path / "run"))


def test_a_counterfactual_replay_uses_the_same_answers(tmp_path: Path) -> None:
    run(tmp_path)
    outcome = asyncio.run(replay_run(tmp_path, "disabled"))
    assert outcome.counterfactual and outcome.identical is None
    original = {
        (r["step"], r["agent"], r["attempt"]): r["raw_output"]
        for r in lines(tmp_path / "audit.jsonl")
    }
    replayed = lines(outcome.out / "audit.jsonl")
    for r in replayed:
        key = (r["step"], r["agent"], r["attempt"])
        if r["raw_output"] is not None:
            assert r["raw_output"] == original[key]
        elif r["outcome"] == "rejected":
            assert r["results"] == [
                {
                    "validator": "replay",
                    "rule": "unrecorded",
                    "level": "ERROR",
                    "ok": False,
                    "message": "the recorded run has no answer for this call",
                }
            ]
    # under "disabled" nothing is rejected by a governance rule
    assert not any(
        res["validator"] == "consistency" and not res["ok"]
        for r in replayed
        for res in r["results"]
    )
    strict_rejections = sum(
        1 for r in lines(tmp_path / "audit.jsonl") if r["outcome"] == "rejected"
    )
    assert strict_rejections > 0


def test_scripted_outputs_in_call_order(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(
        "\n".join(json.dumps(x) for x in [answer(1), {"raw": answer(3, "VH")}, answer(3, "L")])
        + "\n"
    )
    proposer = ScriptedProposer.from_file(script)
    records, _ = simulate(EXP, proposer, agents=3, steps=1)
    # Agent_3's house is elevated: its option 3 is do_nothing
    assert [r["executed_skill"] for r in records] == ["buy_insurance", "relocate", "do_nothing"]
    with pytest.raises(UsageError, match="call 4"):
        simulate(EXP, ScriptedProposer.from_file(script), agents=4, steps=1)


def test_a_malformed_script_names_its_line(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text('"ok"\n{not json\n')
    with pytest.raises(UsageError, match=r"script.jsonl:2"):
        ScriptedProposer.from_file(script)


class SlowModel:
    """A ChatModel whose answers come back in an order unrelated to the calls."""

    def __init__(self, limit_seen: list[int]) -> None:
        self.active = 0
        self.seen = limit_seen
        self.rng = random.Random(1)

    @property
    def name(self) -> str:
        return "slow"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.active += 1
        self.seen.append(self.active)
        for _ in range(self.rng.randrange(1, 20)):
            await asyncio.sleep(0)
        self.active -= 1
        assert request.messages[0].content.startswith("You are a homeowner")
        return ChatResponse(text=answer(1, "H"))

    async def aclose(self) -> None:
        return None


def test_a_chat_model_is_called_concurrently_up_to_the_limit_and_audited_in_agent_order() -> None:
    seen: list[int] = []
    records, _ = simulate(EXP, ChatProposer(SlowModel(seen)), agents=12, steps=1, concurrency=3)
    assert max(seen) == 3
    assert [r["agent"] for r in records] == [a.id for a in EXP.agents[:12]]
    serial, _ = simulate(EXP, ChatProposer(SlowModel([])), agents=12, steps=1, concurrency=1)
    assert serial == records


class FailingModel:
    @property
    def name(self) -> str:
        return "down"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        raise ModelUnavailableError("503 from the server")

    async def aclose(self) -> None:
        return None


def test_a_failing_model_is_recorded_and_falls_back_and_replays(tmp_path: Path) -> None:
    run(tmp_path, ChatProposer(FailingModel()), agents=2, steps=1, model="down")
    records = lines(tmp_path / "audit.jsonl")
    assert [r["outcome"] for r in records[:5]] == ["rejected"] * 4 + ["fallback"]
    assert (
        records[0]["results"][0]["validator"] == "model"
        and "503" in records[0]["results"][0]["message"]
    )
    assert asyncio.run(replay_run(tmp_path)).identical is True


def test_report_table_csv_and_chart(tmp_path: Path) -> None:
    run(tmp_path, agents=30, steps=4)
    tracked, rows = build_report(tmp_path)
    assert tracked == ["elevated", "has_insurance", "relocated"]
    assert [r.step for r in rows] == [1, 2, 3, 4]
    records = lines(tmp_path / "audit.jsonl")
    assert sum(r.retries for r in rows) == sum(
        1 for r in records if r["attempt"] > 1 and r["outcome"] != "fallback"
    )
    assert sum(r.fallbacks for r in rows) == sum(1 for r in records if r["outcome"] == "fallback")
    rejected = sum(
        1
        for r in records
        for x in r["results"]
        if not x["ok"] and x["level"] == "ERROR" and r["outcome"] != "fallback"
    )
    assert sum(sum(r.rejections.values()) for r in rows) == rejected
    write_csv(tracked, rows, tmp_path / "report.csv")
    header = (tmp_path / "report.csv").read_text().splitlines()[0].split(",")
    assert header[:5] == [
        "step",
        "deciding",
        "share_elevated",
        "share_has_insurance",
        "share_relocated",
    ]
    pytest.importorskip("matplotlib")
    assert write_chart(tracked, rows, tmp_path / "report.png", "t") is None
    assert (tmp_path / "report.png").read_bytes().startswith(b"\x89PNG")


def test_report_shares_follow_the_states(tmp_path: Path) -> None:
    script = tmp_path / "s.jsonl"
    outputs = [answer("relocate"), answer("relocate"), answer("do_nothing"), answer("do_nothing")]
    script.write_text("\n".join(json.dumps(x) for x in outputs + outputs[2:]) + "\n")
    run(tmp_path / "run", ScriptedProposer.from_file(script), agents=4, steps=2, profile="disabled")
    _, rows = build_report(tmp_path / "run")
    # two of four relocate in step 1 and stay relocated (they no longer decide)
    assert rows[0].shares["relocated"] == 0.5 and rows[1].shares["relocated"] == 0.5
    assert rows[0].deciding == 4 and rows[1].deciding == 2


def test_chart_is_skipped_without_matplotlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import builtins

    real = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    reason = write_chart(["x"], [], tmp_path / "r.png", "t")
    assert reason is not None and "matplotlib" in reason and not (tmp_path / "r.png").exists()
