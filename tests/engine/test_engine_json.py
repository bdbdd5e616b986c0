"""The JSON the engine writes into texts (an approval's prompt, the polisher's evidence)
is what ``json.dumps`` writes, though made by encoders built once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import ORDER, approval_script, run, runtime_for

from skillwire.engine.evidence import evidence_text
from skillwire.engine.state import HistoryEntry, JobState
from skillwire.skills import load_skill

ODD: list[Any] = [
    {"b": 1, "a": [1.5, -0.0, 10**30, True, None], "é": "naïve \u2028 \x00 \ud800 😀"},
    {"z": {"y": {"x": "deep"}}, "1": "one"},
    [],
    {},
]


@pytest.mark.parametrize("value", ODD)
def test_the_evidence_is_what_json_dumps_writes(value: Any) -> None:
    class Run:  # what evidence_text reads of a run
        state = JobState(
            message="m é",
            context={"user_id": "u1"},
            entities={"v": value},
            inputs={"when": {1, 2}},  # not JSON: written as its str, as before
            history=[
                HistoryEntry("t", {"a": value}, value),
                HistoryEntry("failed", {"a": 1}, "hidden", ok=False),
            ],
        )

    expected = json.dumps(
        [
            "m é",
            {"user_id": "u1"},
            {"v": value},
            {"when": {1, 2}},
            [{"a": value}, value],
        ],
        default=str,
        ensure_ascii=False,
    )
    assert evidence_text(Run()) == expected  # type: ignore[arg-type]


def test_an_approval_prompt_holds_the_arguments_as_json_dumps_sorts_them(
    tmp_path: Path, refund_yaml: Path
) -> None:
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", approval_script()) as (rt, _):
            job = await rt.start(load_skill(refund_yaml), f"Refund 750 for {ORDER}")
            waiting = job.record.waiting
            assert waiting is not None and waiting.arguments is not None
            shown = json.dumps(waiting.arguments, sort_keys=True)
            assert shown == '{"amount": 750, "order_id": "ORD-12345"}'
            assert waiting.prompt_message.startswith(
                f"supervisor approval needed: process_refund {shown} ("
            )

    run(main())
