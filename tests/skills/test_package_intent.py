"""A spec-003 package declares no intents: one implicit intent, from its description and
its tools' selectionHints, so its jobs are not all out of domain."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from skillwire.core.issues import Severity
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine import JobView, Runtime
from skillwire.models.offline import OfflineModel
from skillwire.skills import load_paths
from skillwire.store import SQLiteJobStore
from skillwire.tools import Executors

TOOLS: list[dict[str, Any]] = [
    {
        "name": "track_parcel",
        "description": "Where a parcel is",
        "selectionHints": {
            "tags": ["shipping", "parcel"],
            "aliases": ["track shipment"],
            "examples": ["where is my parcel", "track my package delivery"],
            "domain": "logistics",
        },
        "inputSchema": {"type": "object", "properties": {"parcel_id": {"type": "string"}}},
        "executor": {"type": "simulate", "result": {"status": "in transit"}},
    },
    {
        "name": "reroute_parcel",
        "selectionHints": {"examples": ["send my parcel to another address"], "tags": ["parcel"]},
        "inputSchema": {"type": "object", "properties": {"address": {"type": "string"}}},
        "executor": {"type": "simulate", "result": {"ok": True}},
    },
]


def package(
    tmp_path: Path,
    *,
    description: str = "Track and reroute parcels",
    tools: list[dict[str, Any]] | None = None,
) -> Path:
    folder = tmp_path / "parcels"
    folder.mkdir()
    manifest = {
        "schemaVersion": "ayati-skill/v1",
        "id": "parcels",
        "version": "1.0.0",
        "title": "Parcels",
        "description": description,
        "files": {"skillDoc": "skill.md", "tools": "tools.json"},
    }
    (folder / "skill.json").write_text(json.dumps(manifest, indent=2))
    (folder / "skill.md").write_text("# Parcels\n")
    (folder / "tools.json").write_text(
        json.dumps(
            {
                "schemaVersion": "ayati-tools/v1",
                "skillId": "parcels",
                "tools": TOOLS if tools is None else tools,
            },
            indent=2,
        )
    )
    return folder


def test_the_implicit_intent_and_the_report_line(tmp_path: Path) -> None:
    result = load_paths([package(tmp_path)])
    skill = result.skills["parcels"]
    (intent,) = skill.intents.supported
    assert intent.id == "parcels" and intent.description == "Track and reroute parcels"
    assert intent.examples == [
        "where is my parcel",
        "track my package delivery",
        "track shipment",
        "shipping",
        "parcel",
        "logistics",
        "send my parcel to another address",
    ]
    assert intent.tools is None  # every tool of the package serves it
    (line,) = [i for i in result.report.skills[0].issues if i.code == "implicit-intent"]
    assert line.severity is Severity.INFO and "implicit intent 'parcels'" in line.message
    assert line.location.file.endswith("skill.json") and line.location.line


def test_a_package_with_nothing_to_match_warns(tmp_path: Path) -> None:
    bare = [{k: v for k, v in t.items() if k != "selectionHints"} for t in TOOLS]
    folder = package(tmp_path, description="", tools=bare)
    data = json.loads((folder / "skill.json").read_text())
    data["title"] = ""
    (folder / "skill.json").write_text(json.dumps(data))
    report = load_paths([folder]).report.skills[0]
    (warning,) = [i for i in report.warnings if i.code == "implicit-intent"]
    assert "every job is out of domain" in warning.message


def test_declared_intents_are_kept(tmp_path: Path) -> None:
    folder = package(tmp_path)
    data = json.loads((folder / "skill.json").read_text())
    data["schemaVersion"] = "skillwire-skill/v1"
    data["intents"] = {"supported": [{"id": "intent_track", "examples": ["track it"]}]}
    (folder / "skill.json").write_text(json.dumps(data))
    result = load_paths([folder])
    assert [i.id for i in result.skills["parcels"].intents.supported] == ["intent_track"]
    assert not [i for i in result.report.skills[0].issues if i.code == "implicit-intent"]


def _job(folder: Path, tmp_path: Path, message: str) -> JobView:
    async def flow() -> JobView:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        runtime = Runtime(store, OfflineModel(), executors=Executors())
        try:
            skill = load_paths([folder]).skills["parcels"]
            return await runtime.start(skill, message, context={"user_id": "u1"})
        finally:
            await store.close()

    return asyncio.run(flow())


def test_a_message_like_the_package_is_in_domain_on_the_offline_model(tmp_path: Path) -> None:
    job = _job(package(tmp_path), tmp_path, "Where is my parcel? I need to track the delivery")
    assert job.record.outcome_class is not OutcomeClass.OUT_OF_DOMAIN, job.record
    detected = [e for e in job.events if e.kind == "intent_detected"]
    assert detected and detected[0].data["intent"] == "parcels"
    assert "planner" in [c.stage for c in job.model_calls]


def test_an_unrelated_message_is_out_of_domain(tmp_path: Path) -> None:
    job = _job(package(tmp_path), tmp_path, "What's the weather like in Paris tomorrow?")
    assert (job.record.status, job.record.outcome_class) == (
        JobStatus.COMPLETED,
        OutcomeClass.OUT_OF_DOMAIN,
    )
    assert [c.stage for c in job.model_calls] == ["intent"]
