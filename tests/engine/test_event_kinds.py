"""Event kinds: one closed set, each kind with one stage, listed in docs/engine.md.

The kinds' and stages' texts are stored and read by the store, the API and the page,
so the events an older skillwire stored must read as the same kinds and stages."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import ROOT
from tests.engine.helpers import ORDER, decide, input_script, run, runtime_for

from skillwire.core.job import Event, EventKind, Stage
from skillwire.skills import load_skill

FIXTURES = Path(__file__).parent / "fixtures"


def test_every_kind_has_its_own_text_and_a_stage() -> None:
    assert len(EventKind) == 37
    assert len({k.value for k in EventKind}) == len(EventKind)
    for kind in EventKind:
        assert isinstance(kind.stage, Stage)
        assert EventKind(kind.value) is kind
        assert type(kind._value_) is str and type(kind.stage._value_) is str


def test_events_stored_by_every_state_version_read_as_the_same_kinds() -> None:
    for path in sorted(FIXTURES.glob("state_v*.json")):
        for item in json.loads(path.read_text())["events"]:
            assert EventKind(item["kind"]).stage == item["stage"], (path.name, item["kind"])


def test_a_job_records_only_known_kinds_each_with_its_stage(tmp_path: Path) -> None:
    async def scenario() -> list[Event]:
        skill = load_skill(ROOT / "examples" / "refund_support" / "domain.yaml")
        async with runtime_for(tmp_path / "jobs.db", input_script()) as (runtime, _model):
            job = await runtime.start(skill, "Refund 750 please")
            job = await runtime.resume(job.id, input={"order_id": ORDER})
            job = await decide(runtime, job.id, "approve", role="supervisor")
            assert job.status == "completed"
            return job.events

    events = run(scenario())
    for event in events:
        assert type(event.stage) is str and type(event.kind) is str  # plain text, stored
        assert EventKind(event.kind).stage == event.stage
    assert {"input_received", "approval_granted", "paused"} <= {e.kind for e in events}


def test_docs_engine_md_lists_every_kind_under_its_stage() -> None:
    text = (ROOT / "docs" / "engine.md").read_text()
    section = text.split("## What a job records", 1)[1].split("\n## ", 1)[0]
    listed = {
        stage: re.findall(r"`(\w+)`", kinds)
        for stage, kinds in re.findall(r"^\| (\w+) \| (.+) \|$", section, flags=re.M)
        if stage != "stage"  # the header
    }
    assert listed == {
        stage.value: [k.value for k in EventKind if k.stage is stage] for stage in Stage
    }
