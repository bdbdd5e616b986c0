"""An absent optional argument: conditions see the schema's ``default``, never the
caller's; with no default, a rule reading it still fails closed."""

from __future__ import annotations

from pathlib import Path

from tests.policy.helpers import codes, gate_from

from skillwire.policy import ReasonCode

PUSH = """
tools:
  - name: push
    inputs:
      - {name: branch, type: string, required: true}
      - {name: force, type: boolean, default: true}
      - {name: dry_run, type: boolean}
      - {name: remote, type: string, required: true, default: origin}
    policy:
      conditions:
        - {when: "force == true and branch == 'main'", action: deny, message: no force-push to main}
  - name: deploy
    inputSchema:
      type: object
      properties:
        target: {type: string}
        replicas: {type: integer, default: 12}
        dry_run: {type: boolean}
    policy:
      conditions:
        - {when: "replicas > 10", action: require_approval, message: big deploys need ops}
        - {when: "dry_run == false", action: require_approval, message: real deploys need ops}
        - {when: "args.replicas > 11", action: deny, message: args sees the default too}
"""


def test_a_deny_rule_sees_the_default_of_an_absent_argument(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, PUSH)
    left_out = gate.check("push", {"branch": "main", "remote": "origin"})
    assert left_out.kind == "block" and codes(left_out) == [ReasonCode.TOOL_DENIED]
    as_null = gate.check("push", {"branch": "main", "remote": "origin", "force": None})
    assert as_null.kind == "block", "null is not given: the default applies"
    given = gate.check("push", {"branch": "main", "remote": "origin", "force": False})
    assert given.kind == "allow", "a value given is the value judged"
    other = gate.check("push", {"branch": "dev", "remote": "origin"})
    assert other.kind == "allow"


def test_an_input_schema_default_is_seen_by_name_and_through_args(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, PUSH)
    decision = gate.check("deploy", {"target": "eu", "dry_run": True})
    assert decision.kind == "block" and "args sees the default too" in str(decision.reasons)
    small = gate.check("deploy", {"target": "eu", "dry_run": True, "replicas": 2})
    assert small.kind == "allow"


def test_an_absent_argument_without_default_still_fails_closed(tmp_path: Path) -> None:
    """``dry_run`` has no default: the rule reading it cannot be judged, so approval is
    asked (fail closed), as before defaults were read."""
    gate = gate_from(tmp_path, PUSH)
    decision = gate.check("deploy", {"target": "eu", "replicas": 2})
    assert decision.kind == "need_approval"
    assert "fail closed" in str(decision.reasons)


def test_a_required_argument_is_asked_for_its_default_notwithstanding(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, PUSH)
    decision = gate.check("push", {"branch": "dev"})
    assert decision.kind == "need_input"
    assert decision.requested_fields == ("remote",)  # type: ignore[union-attr]


def test_the_caller_cannot_supply_or_change_a_default(tmp_path: Path) -> None:
    """Defaults come from the skill: context, entities, inputs and stated arguments named
    like the argument change nothing, and a decision leaves the schema as it was."""
    gate = gate_from(tmp_path, PUSH)
    decision = gate.check(
        "push",
        {"branch": "main", "remote": "origin"},
        context={"force": False},
        entities={"force": False},
        inputs={"force": False},
    )
    assert decision.kind == "block"
    schema = gate.skill.tool("push").input_schema()  # type: ignore[union-attr]
    assert schema["properties"]["force"]["default"] is True
    again = gate.check("push", {"branch": "main", "remote": "origin"})
    assert again.kind == "block"
