"""``skillwire edit`` keeps a hand-written file's comments and order; with a model
configured, the assistant drafts every section first (scripted model) and the interview
asks only for what is missing."""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

from ruamel.yaml import YAML
from typer.testing import CliRunner, Result

from skillwire.cli_app import app
from skillwire.skills import load_paths

ROOT = Path(__file__).resolve().parents[2]
REFUND = ROOT / "examples" / "refund_support"


def cli(args: list[str], lines: list[str] | None = None) -> Result:
    stdin = "".join(f"{line}\n" for line in lines or [])
    return CliRunner().invoke(app, args, input=stdin)


def comments(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if "#" in line]


def test_edit_adds_an_intent_and_keeps_every_comment_and_the_order() -> None:
    shutil.copytree(REFUND, "refund")
    before = Path("refund/domain.yaml").read_text()
    lines = [
        "",  # statement kept
        "",  # goals kept
        "",  # no scenario
        "yes",  # add an intent
        "intent_cancel",
        "Customer wants to cancel an order",
        "Cancel my order",
        "Please cancel ORD-12345",
        "",
        "",  # no more intents
        "",  # no tool by hand
        "",  # check_order_status: runs freely
        "",  # process_refund's approver kept
        "",  # no workflow
        "",  # no required input
        "",  # contract kept
        "",  # role name kept
        "",  # persona kept
        "",  # tone: none
        "",  # out-of-domain reply kept
        "",  # write: yes
    ]
    result = cli(["edit", "refund"], lines)
    assert result.exit_code == 0, result.output
    after = Path("refund/domain.yaml").read_text()
    assert comments(after) == comments(before)
    added = [
        line for line in result.output.splitlines() if line.startswith("+") and "+++" not in line
    ]
    removed = [
        line for line in result.output.splitlines() if line.startswith("-") and "---" not in line
    ]
    assert removed == []  # the diff shown before writing: the new intent and its test
    assert "+    - id: intent_cancel" in added
    assert "+  - id: intent-intent_cancel" in added  # its generated scenario, in tests:
    # The rest of the file is byte for byte what the author wrote: only lines added.
    assert only_added(before, after) == [a[1:] for a in added]
    data = YAML(typ="safe").load(after)
    assert [i["id"] for i in data["intents"]["supported"]][-1] == "intent_cancel"
    assert load_paths([Path("refund")]).report.error_count == 0


def only_added(before: str, after: str) -> list[str]:
    """The lines ``after`` adds to ``before``; fails when it changes or removes one."""
    old, new = before.splitlines(), after.splitlines()
    added: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new).get_opcodes():
        assert tag in ("equal", "insert"), (tag, old[i1:i2], new[j1:j2])
        if tag == "insert":
            added += new[j1:j2]
    return added


def test_edit_with_every_default_changes_nothing() -> None:
    shutil.copytree(REFUND, "refund")
    before = Path("refund/domain.yaml").read_text()
    result = cli(["edit", "refund", "--yes", "--no-dry-run"])
    assert result.exit_code == 0, result.output
    assert "is unchanged" in result.output
    assert Path("refund/domain.yaml").read_text() == before


def test_edit_adds_the_generated_scenarios_to_tests_once() -> None:
    shutil.copytree(REFUND, "refund")
    before = Path("refund/domain.yaml").read_text()
    hand_written = [t["id"] for t in YAML(typ="safe").load(before)["tests"]]
    first = cli(["edit", "refund", "--yes"])
    assert first.exit_code == 0, first.output
    after = Path("refund/domain.yaml").read_text()
    added = only_added(before, after)  # the author's lines and comments stay as they were
    assert added[0] == "  - id: intent-intent_refund"
    ids = [t["id"] for t in YAML(typ="safe").load(after)["tests"]]
    generated = ["intent-intent_refund", "intent-intent_order_status", "out-of-domain"]
    assert ids == [*hand_written, *generated]
    # process_refund's approval needs verify_identity first: no scenario, and said so
    assert "no scenario for approval of process_refund" in first.output
    # the dry run is the skill's whole suite, as skillwire test runs it
    assert f"dry run: {len(ids)} passed, 0 failed, 0 manual" in first.output
    second = cli(["edit", "refund", "--yes"])
    assert second.exit_code == 0, second.output
    assert "is unchanged" in second.output
    assert Path("refund/domain.yaml").read_text() == after


def test_a_generated_test_the_skill_outgrew_is_replaced_and_the_diff_shows_it() -> None:
    shutil.copytree(REFUND, "refund")
    assert cli(["edit", "refund", "--yes"]).exit_code == 0
    path = Path("refund/domain.yaml")
    stale = path.read_text().replace(
        "message: Where is my order?", "message: Where is my order?  # asked by hand"
    )
    stale = stale.replace(
        "{intent: intent_order_status, entities: {}}", "{intent: intent_refund, entities: {}}"
    )
    path.write_text(stale)
    result = cli(["edit", "refund", "--yes"])
    assert result.exit_code == 0, result.output
    assert "-      - {stage: intent, json: {intent: intent_refund, entities: {}}}" in result.output
    assert "# asked by hand" not in path.read_text()  # the entry was written anew
    tests = YAML(typ="safe").load(path)["tests"]
    assert len([t for t in tests if t["id"] == "intent-intent_order_status"]) == 1


DRAFT = {
    "problem": {"statement": "Help customers with refunds", "goals": ["Refund fast"]},
    "intents": [
        {
            "id": "intent_refund",
            "description": "Customer wants a refund",
            "examples": ["I want my money back", "Refund please"],
        }
    ],
    "tools": [
        {
            "name": "issue_refund",
            "description": "Refund an order",
            "inputs": [
                {"name": "order_id", "type": "string", "required": True},
                {"name": "amount", "type": "number", "required": True},
            ],
        }
    ],
    "policies": [
        {
            "tool": "issue_refund",
            "choice": "approval_when",
            "when": "amount > 200",
            "approver": "finance",
        }
    ],
    "output_contract": ["order_id", "status"],
    "persona": {"name": "Refund desk", "persona": "Calm and exact", "tone": "warm"},
    "out_of_domain": "I only handle refunds.",
}


def script(tmp: Path, reply: object) -> Path:
    path = tmp / "draft.json"
    text = reply if isinstance(reply, str) else json.dumps(reply)
    path.write_text(json.dumps([{"stage": "planner", "text": text}]))
    return path


def test_the_assistant_drafts_every_section_and_only_the_missing_is_asked(tmp_path: Path) -> None:
    path = script(tmp_path, DRAFT)
    lines = [
        "A desk that refunds orders; big refunds need finance.",  # the description
        "",  # write: yes
    ]
    result = cli(["new", "desk", "--model", f"scripted:{path}"], lines)
    assert result.exit_code == 0, result.output
    assert "the assistant drafted from your description" in result.output
    assert "runs: amount > 200" in result.output
    # Everything was drafted: no phase asked (only the write was confirmed).
    assert "In one sentence, what does this agent solve?" not in result.output
    assert "Policy of issue_refund" not in result.output
    data = YAML(typ="safe").load(Path("desk/domain.yaml"))
    assert data["policy"]["approvals"] == [
        {
            "tool_id": "issue_refund",
            "when": "amount > 200",
            "action": "require_approval",
            "approver": "finance",
        }
    ]
    assert data["tools"][0]["executor"]["type"] == "simulate"
    assert load_paths([Path("desk")]).report.error_count == 0
    assert "dry run: 3 passed, 0 failed" in result.output


def test_a_draft_that_does_not_load_is_refused_part_by_part_and_asked_for(tmp_path: Path) -> None:
    broken = {
        **DRAFT,
        "policies": [{"tool": "issue_refund", "choice": "approval_when", "when": " > "}],
    }
    broken["problem"] = {"statement": 42}  # not text: left out, so it is asked
    path = script(tmp_path, broken)
    lines = [
        "Refunds.",
        "Help customers with refunds",  # the statement, asked because the draft lacked it
        "",  # no goal
        "",  # issue_refund: approval when (proposed for a payment with an amount)
        "amount > 100",
        "",  # write
    ]
    result = cli(["new", "desk", "--model", f"scripted:{path}", "--no-dry-run"], lines)
    assert result.exit_code == 0, result.output
    assert "the drafted condition of issue_refund does not compile: asking" in result.output
    data = YAML(typ="safe").load(Path("desk/domain.yaml"))
    assert data["problem"]["statement"] == "Help customers with refunds"
    assert data["policy"]["approvals"][0]["when"] == "amount > 100"


def test_a_reply_that_is_not_json_falls_back_to_the_interview(tmp_path: Path) -> None:
    path = script(tmp_path, "Sure! Here is your skill: ...")
    result = cli(
        ["new", "desk", "--model", f"scripted:{path}", "--no-dry-run"], ["Refunds.", *[""] * 40]
    )
    assert "the model's draft is not JSON: asking instead" in result.output
    assert result.exit_code == 0, result.output
    assert load_paths([Path("desk")]).report.error_count == 0


def test_changing_one_answer_changes_one_line(tmp_path: Path) -> None:
    shutil.copytree(REFUND, "refund")
    before = Path("refund/domain.yaml").read_text()
    lines = [""] * 6 + ["manager"] + [""] * 9  # the approver of process_refund
    result = cli(["edit", "refund", "--no-dry-run"], lines)
    assert result.exit_code == 0, result.output
    after = Path("refund/domain.yaml").read_text()
    assert after == before.replace("approver: supervisor", "approver: manager")
    assert "-      approver: supervisor\n+      approver: manager" in result.output


def test_the_offline_interview_is_deterministic() -> None:
    args = ["--describe", "Track parcels. Refund orders.", "--yes", "--no-dry-run"]
    first = cli(["new", "one/desk", *args])
    second = cli(["new", "two/desk", *args])
    assert first.exit_code == second.exit_code == 0
    assert Path("one/desk/domain.yaml").read_text() == Path("two/desk/domain.yaml").read_text()


def test_drafting_is_one_json_call_through_the_chat_model_protocol(tmp_path: Path) -> None:
    import asyncio

    from skillwire.builder import DefaultsPrompter, Session, draft_with_model, open_draft
    from skillwire.testing import ScriptedModel

    model = ScriptedModel([{"stage": "planner", "json": DRAFT}])
    draft = open_draft(tmp_path / "desk", new=True, description="Refunds, big ones by finance.")
    session = Session(draft, DefaultsPrompter(), description="Refunds, big ones by finance.")
    tools = [{"name": "lookup", "description": "finds things"}]
    assert asyncio.run(draft_with_model(session, model, tools))
    model.assert_complete()
    request = model.calls[0]
    assert request.response_format == "json" and request.tools == ()
    assert "Refunds, big ones by finance." in request.messages[-1].content
    assert '"lookup"' in request.messages[-1].content  # the tools the author has
    assert session.only_missing and draft.last.loads


def test_a_failing_test_of_the_skill_fails_the_dry_run_as_skillwire_test_fails() -> None:
    shutil.copytree(REFUND, "refund")
    path = Path("refund/domain.yaml")
    path.write_text(
        path.read_text()
        + "  - id: wrong-end\n"
        + "    message: Please refund 120 for order ORD-12345\n"
        + "    expect: {outcome: BLOCKED}\n"
    )
    result = cli(["edit", "refund", "--yes"])
    assert result.exit_code == 1, result.output
    assert "FAIL wrong-end: expected outcome BLOCKED, got SUCCESS" in result.output
    assert "dry run: 8 passed, 1 failed, 0 manual" in result.output
    assert "intent-intent_refund" in path.read_text()  # written: only the run failed
    test = cli(["test", "refund"])
    assert test.exit_code == 1 and "8 passed, 1 failed, 0 manual" in test.output
