"""Workflows and required inputs apply to the intents that map to them (issue 17 item 5).

A workflow applies to the intents whose ``maps_to_workflow`` names it and to those its
``intents`` lists; one no intent maps to and that names none applies to every intent. A
``required_inputs`` entry applies to its ``intents`` or to every intent. The gate takes
the job's active intents as a set; with none, or one the skill does not have, every
workflow and required input applies (the strictest reading, never none).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.policy.helpers import codes, gate_from, line_of, runs, skill_from
from typer.testing import CliRunner

from skillwire.cli_app import app
from skillwire.core.errors import SkillError
from skillwire.policy import Decision, Gate, NeedInput, ReasonCode, compile_policy
from skillwire.policy.explain import EVERY_INTENT, explain_skill
from skillwire.policy.gate_input import GateInputError
from skillwire.policy.workflows import active_scope, applies, workflow_scope
from skillwire.skills import load_paths, load_skill

INTENTS = """
problem: {statement: Help employees with their accounts}
intents:
  supported:
    - {id: password_reset, description: Reset a password}
    - {id: admin_access, description: Get admin access, maps_to_workflow: admin_flow}
    - {id: unlock_account, description: Unlock a locked account}
"""

TOOLS = """
tools:
  - name: verify_identity
    inputs: [{name: employee_id, type: string, required: true}]
  - name: manager_approval_check
    inputs: [{name: employee_id, type: string, required: true}]
  - name: reset_password
    inputs: [{name: employee_id, type: string, required: true}]
  - name: unlock
    inputs: [{name: employee_id, type: string, required: true}]
  - name: audit_log
    inputs: [{name: employee_id, type: string, required: true}]
"""

WORKFLOWS = """
policy:
  workflows:
    - name: admin_flow            # scoped by admin_access's maps_to_workflow
      required: true
      steps: [verify_identity, manager_approval_check, reset_password]
    - name: reset_flow            # scoped by its own intents
      required: true
      intents: [password_reset]
      steps: [verify_identity, reset_password]
    - name: audit_flow            # no intent maps to it, it names none: every intent
      required: true
      steps: [verify_identity, audit_log]
required_inputs:
  - {path: justification, prompt: "Why do you need admin access?", intents: [admin_access]}
  - {path: ticket_id, prompt: "Your ticket number?"}
"""

E1 = {"employee_id": "E1"}
TICKET = {"ticket_id": "T-1"}
VERIFIED = runs("verify_identity", employee_id="E1")


def _fields(decision: Decision) -> list[str]:
    assert isinstance(decision, NeedInput), decision
    return list(decision.requested_fields)


@pytest.fixture
def gate(tmp_path: Path) -> Gate:
    return gate_from(tmp_path, INTENTS, TOOLS, WORKFLOWS)


def test_scopes_come_from_maps_to_workflow_and_the_workflows_intents(tmp_path: Path) -> None:
    skill = skill_from(tmp_path, INTENTS, TOOLS, WORKFLOWS)
    admin, reset, audit = skill.policy.workflows
    assert workflow_scope(skill, admin) == {"admin_access"}
    assert workflow_scope(skill, reset) == {"password_reset"}
    assert workflow_scope(skill, audit) is None


def test_a_password_reset_is_not_pushed_into_the_admin_workflow(gate: Gate) -> None:
    # admin_flow would want manager_approval_check before reset_password
    decision = gate.check(
        "reset_password", E1, history=VERIFIED, inputs=TICKET, intent="password_reset"
    )
    assert decision.kind == "allow", decision.reasons
    # ... and for admin access it does.
    admin = gate.check(
        "reset_password",
        E1,
        history=VERIFIED,
        inputs={**TICKET, "justification": "on call"},
        intent="admin_access",
    )
    assert _workflows(admin) == ["admin_flow"]
    assert "manager_approval_check" in admin.reasons[0].message


def test_a_workflow_scoped_by_its_intents_applies_to_those_only(gate: Gate) -> None:
    first = gate.check("reset_password", E1, inputs=TICKET, intent="password_reset")
    assert _workflows(first) == ["reset_flow"]  # verify first
    assert "verify_identity" in first.reasons[0].message
    history = runs("verify_identity", "manager_approval_check", employee_id="E1")
    other = gate.check("reset_password", E1, history=history, intent="unlock_account")
    assert other.kind == "allow"  # both orders met (see the next test)


def test_an_unscoped_workflow_applies_to_every_intent(gate: Gate) -> None:
    for intent in ("password_reset", "admin_access", "unlock_account"):
        decision = gate.check(
            "audit_log", E1, inputs={**TICKET, "justification": "x"}, intent=intent
        )
        assert _workflows(decision) == ["audit_flow"], intent


def test_a_required_input_of_another_intent_is_not_asked(gate: Gate) -> None:
    reset = gate.check("verify_identity", E1, intent="password_reset")
    assert reset.kind == "need_input"
    assert _fields(reset) == ["ticket_id"]  # unscoped: asked of every intent
    admin = gate.check("verify_identity", E1, intent="admin_access")
    assert _fields(admin) == ["justification", "ticket_id"]
    assert "Why do you need admin access?" in admin.prompt
    assert gate.check("verify_identity", E1, inputs=TICKET, intent="unlock_account").kind == (
        "allow"
    )


# -- attacker tests ---------------------------------------------------------------------


def test_an_intent_mapping_to_a_workflow_that_lists_other_intents_still_gets_it(
    tmp_path: Path,
) -> None:
    # reset_flow lists password_reset; unlock_account maps to it: both get it.
    mapped = INTENTS.replace(
        "{id: unlock_account, description: Unlock a locked account}",
        "{id: unlock_account, description: Unlock, maps_to_workflow: reset_flow}",
    )
    gate = gate_from(tmp_path, mapped, TOOLS, WORKFLOWS)
    decision = gate.check("reset_password", E1, inputs=TICKET, intent="unlock_account")
    assert _workflows(decision) == ["reset_flow"]


def test_a_scope_never_leaves_a_tool_unguarded(gate: Gate) -> None:
    # manager_approval_check is admin_flow's only: a password reset calling it is held
    # to admin_flow's order (verify first), though admin_flow is not its workflow.
    early = gate.check("manager_approval_check", E1, inputs=TICKET, intent="password_reset")
    assert _workflows(early) == ["admin_flow"]
    # unlock_account has no workflow naming reset_password: every one that does applies.
    unlock = gate.check("reset_password", E1, inputs=TICKET, intent="unlock_account")
    assert _workflows(unlock) == ["admin_flow", "reset_flow"]
    verified = gate.check(
        "reset_password", E1, history=VERIFIED, inputs=TICKET, intent="unlock_account"
    )
    assert _workflows(verified) == ["admin_flow"]
    # A password reset names reset_password in its own workflow: that one decides.
    own = gate.check("reset_password", E1, history=VERIFIED, inputs=TICKET, intent="password_reset")
    assert own.kind == "allow"


def test_another_active_intent_cannot_skip_a_workflow(gate: Gate) -> None:
    # admin_access brings admin_flow; adding password_reset does not take it away.
    decision = gate.check(
        "reset_password",
        E1,
        history=VERIFIED,
        inputs={**TICKET, "justification": "x"},
        intents=["password_reset", "admin_access"],
    )
    assert _workflows(decision) == ["admin_flow"]
    both = gate.check("verify_identity", E1, intents={"password_reset", "admin_access"})
    assert _fields(both) == ["justification", "ticket_id"]
    # ``intent`` and ``intents`` add up.
    mixed = gate.check(
        "reset_password",
        E1,
        history=VERIFIED,
        inputs={**TICKET, "justification": "x"},
        intent="password_reset",
        intents=("admin_access",),
    )
    assert _workflows(mixed) == ["admin_flow"]


@pytest.mark.parametrize(
    "given",
    [
        {},
        {"intent": "out_of_domain"},
        {"intents": []},
        {"intents": ["password_reset", "bogus"]},
        {"intent": ""},
        {"intents": ["PASSWORD_RESET"]},
    ],
)
def test_an_unknown_or_missing_intent_gets_every_workflow_never_none(
    gate: Gate, given: dict[str, object]
) -> None:
    # Every workflow's order applies: reset_flow's and admin_flow's, and audit_flow's.
    unverified = gate.check("reset_password", E1, inputs=TICKET, **given)  # type: ignore[arg-type]
    assert _workflows(unverified) == ["admin_flow", "reset_flow"]
    verified = gate.check(
        "reset_password",
        E1,
        history=VERIFIED,
        inputs={**TICKET, "justification": "x"},
        **given,  # type: ignore[arg-type]
    )
    assert _workflows(verified) == ["admin_flow"]  # the manager first
    audit = gate.check("audit_log", E1, inputs={**TICKET, "justification": "x"}, **given)  # type: ignore[arg-type]
    assert _workflows(audit) == ["audit_flow"]
    asked = gate.check("verify_identity", E1, **given)  # type: ignore[arg-type]
    assert _fields(asked) == ["justification", "ticket_id"]


def _workflows(decision: Decision) -> list[str]:
    """The workflows whose order blocks ``decision``."""
    assert all(r.code is ReasonCode.WORKFLOW_ORDER for r in decision.reasons), decision
    return [r.rule.split(":")[0] for r in decision.reasons]


def test_a_jobs_tools_are_the_union_of_its_intents(tmp_path: Path) -> None:
    """Issue 20 item 4: a job of several intents may use what any of them allows; an
    intent that lists no tools allows every tool."""
    listed = INTENTS.replace(
        "{id: password_reset, description: Reset a password}",
        "{id: password_reset, description: Reset, tools: [verify_identity, reset_password]}",
    ).replace(
        "{id: unlock_account, description: Unlock a locked account}",
        "{id: unlock_account, description: Unlock, tools: [unlock]}",
    )
    gate = gate_from(tmp_path, listed, TOOLS)
    both = ["password_reset", "unlock_account"]
    assert codes(gate.check("unlock", E1, intent="password_reset")) == [
        ReasonCode.TOOL_NOT_FOR_INTENT
    ]
    assert gate.check("unlock", E1, intents=both).kind == "allow"
    assert gate.check("reset_password", E1, intents=both).kind == "allow"
    # admin_access lists no tools: with it, every tool
    assert gate.check("audit_log", E1, intents=[*both, "admin_access"]).kind == "allow"


def test_an_intent_the_skill_does_not_have_widens_nothing(tmp_path: Path) -> None:
    """Attacker: naming an intent the skill does not have (or one in another case) next
    to a scoped one does not count as an intent that lists no tools."""
    listed = INTENTS.replace(
        "{id: password_reset, description: Reset a password}",
        "{id: password_reset, description: Reset, tools: [verify_identity, reset_password]}",
    )
    gate = gate_from(tmp_path, listed, TOOLS)
    for extra in ("bogus", "UNLOCK_ACCOUNT", "unlock_account ", ""):
        blocked = gate.check("audit_log", E1, intents=["password_reset", extra])
        assert codes(blocked) == [ReasonCode.TOOL_NOT_FOR_INTENT], extra
        assert "'password_reset'" in blocked.reasons[0].message
    # no intent of the skill active: no intent's list applies (as with no intent at all)
    assert gate.check("audit_log", E1, intents=["bogus"]).kind == "allow"
    assert gate.check("audit_log", E1).kind == "allow"


class _Text(str):
    """Text that says it equals everything (an intent must be exactly ``str``)."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


@pytest.mark.parametrize(
    ("intents", "path"),
    [
        ([1], "intents[0]"),
        (["ok", None], "intents[1]"),
        ({"password_reset": True}, "intents"),
        (7, "intents"),
        (["\udc80"], "intents[0]"),
        (("ok", "\ud800x"), "intents[1]"),
        (frozenset({"\udfff"}), "intents[0]"),
        ((_Text("password_reset"),), "intents[0]"),
        ([_Text("password_reset")], "intents[0]"),
        ("\udc80", "intents[0]"),
    ],
)
def test_intents_that_are_not_text_are_the_callers_bug(
    gate: Gate, intents: object, path: str
) -> None:
    with pytest.raises(GateInputError) as caught:
        gate.check("verify_identity", E1, intents=intents)  # type: ignore[arg-type]
    assert caught.value.path == path


@pytest.mark.parametrize("intent", ["\udc80", "refund\ud800", _Text("password_reset"), 7])
def test_an_intent_that_is_not_utf8_text_is_the_callers_bug(gate: Gate, intent: object) -> None:
    with pytest.raises(GateInputError) as caught:
        gate.check("verify_identity", E1, intent=intent)  # type: ignore[arg-type]
    assert caught.value.path == "intent"


def test_one_text_is_one_intent_not_its_letters(gate: Gate) -> None:
    decision = gate.check("verify_identity", E1, intents="password_reset")  # type: ignore[arg-type]
    assert _fields(decision) == ["ticket_id"]


def test_active_scope_and_applies() -> None:
    known = frozenset({"a", "b"})
    assert active_scope(known, ["a"]) == {"a"}
    assert active_scope(known, []) is None
    assert active_scope(known, ["a", "z"]) is None
    assert applies(None, frozenset({"a"}))
    assert applies(frozenset({"b"}), None)
    assert applies(frozenset({"a", "b"}), frozenset({"b"}))
    assert not applies(frozenset({"b"}), frozenset({"a"}))


# -- loading and explaining ---------------------------------------------------------------


def test_unknown_intent_names_are_load_errors_with_their_line(tmp_path: Path) -> None:
    typos = WORKFLOWS.replace("intents: [password_reset]", "intents: [password_rest]").replace(
        "intents: [admin_access]}", "intents: [admin_acess]}"
    )
    with pytest.raises(SkillError) as caught:
        skill_from(tmp_path, INTENTS, TOOLS, typos)
    found = {i.code: i for i in caught.value.issues if i.code == "unknown-intent"}
    issues = [i for i in caught.value.issues if i.code == "unknown-intent"]
    assert len(issues) == 2 and found
    path = tmp_path / "domain.yaml"
    wf, req = issues
    assert "'password_rest'" in wf.message and "password_reset" in wf.hint
    assert wf.location.line == line_of(path, "password_rest")
    assert "'admin_acess'" in req.message
    assert req.location.line == line_of(path, "admin_acess")


@pytest.mark.parametrize("where", ["workflow", "input"])
def test_an_empty_intents_list_is_an_error_not_every_intent(tmp_path: Path, where: str) -> None:
    old = "intents: [password_reset]" if where == "workflow" else "intents: [admin_access]"
    with pytest.raises(SkillError) as caught:
        skill_from(tmp_path, INTENTS, TOOLS, WORKFLOWS.replace(old, "intents: []"))
    issue = caught.value.issues[0]
    assert issue.path[-1] == "intents" and issue.location.line == line_of(
        tmp_path / "domain.yaml", "intents: []"
    )


def test_explain_shows_each_workflows_and_inputs_scope(tmp_path: Path) -> None:
    entry = explain_skill(skill_from(tmp_path, INTENTS, TOOLS, WORKFLOWS))
    path = tmp_path / "domain.yaml"
    assert [(w["name"], w["intents"]) for w in entry["workflows"]] == [
        ("admin_flow", ["admin_access"]),
        ("reset_flow", ["password_reset"]),
        ("audit_flow", [EVERY_INTENT]),
    ]
    assert entry["workflows"][1]["source"].rsplit(":", 2)[1] == str(
        line_of(path, "name: reset_flow")
    )
    assert [(r["path"], r["intents"]) for r in entry["required_inputs"]] == [
        ("justification", ["admin_access"]),
        ("ticket_id", [EVERY_INTENT]),
    ]
    orders = {r["text"]: r["intents"] for r in entry["rules"] if r["kind"] == "workflow_order"}
    assert orders["reset_flow: reset_password runs after verify_identity"] == ["password_reset"]
    assert orders["audit_flow: audit_log runs after verify_identity"] == [EVERY_INTENT]


def test_the_load_report_says_each_workflows_scope(tmp_path: Path) -> None:
    skill_from(tmp_path, INTENTS, TOOLS, WORKFLOWS)
    path = tmp_path / "domain.yaml"
    found = {
        f.path[-1]: f
        for f in compile_policy(load_skill(path)).findings
        if f.code == "workflow-scope"
    }
    assert found[0].severity == "info"
    assert "applies to intents admin_access only (maps_to_workflow of admin_access)" in (
        found[0].message
    )
    assert "password_reset only (its intents: [password_reset])" in found[1].message
    assert "applies to every intent" in found[2].message
    assert found[2].location.line == line_of(path, "name: audit_flow")
    verbose = CliRunner().invoke(app, ["check", "-v", str(path)])
    assert verbose.exit_code == 0, verbose.output
    text = " ".join(verbose.stdout.split())
    assert "workflow 'audit_flow' applies to every intent" in text
    explained = CliRunner().invoke(app, ["check", "--explain", str(path)])
    assert explained.exit_code == 0, explained.output
    table = explained.stdout
    rows = [line for line in table.splitlines() if "workflow " in line or "required input" in line]
    assert any("admin_flow" in r and "admin_access" in r for r in rows)
    assert any("audit_flow" in r and EVERY_INTENT in r for r in rows)
    assert any("justification" in r and "admin_access" in r for r in rows)


def test_a_misspelt_maps_to_workflow_is_an_error_where_workflows_are_scoped(
    tmp_path: Path,
) -> None:
    # reset_flow names its intents: admin_access's typo would leave it off admin_flow.
    typo = INTENTS.replace("maps_to_workflow: admin_flow", "maps_to_workflow: admin_flw")
    with pytest.raises(SkillError) as caught:
        skill_from(tmp_path, typo, TOOLS, WORKFLOWS)
    (issue,) = [i for i in caught.value.issues if i.code == "unknown-workflow"]
    assert issue.severity == "error" and "admin_flow" in issue.hint
    assert issue.location.line == line_of(tmp_path / "domain.yaml", "admin_flw")


def test_a_misspelt_maps_to_workflow_stays_a_warning_where_nothing_is_scoped(
    tmp_path: Path,
) -> None:
    # With no scoped workflow every workflow applies to every intent: the typo weakens
    # nothing.
    typo = INTENTS.replace("maps_to_workflow: admin_flow", "maps_to_workflow: admin_flw")
    unscoped = WORKFLOWS.replace("      intents: [password_reset]\n", "")
    path = tmp_path / "domain.yaml"
    path.write_text("\n".join([typo, TOOLS, unscoped]))
    report = load_paths([path]).report.skills[0]
    assert report.loaded
    assert [i.code for i in report.warnings] == ["unknown-workflow"]
    gate = Gate.for_skill(load_skill(path))
    decision = gate.check(
        "reset_password", E1, history=VERIFIED, inputs=TICKET, intent="password_reset"
    )
    assert _workflows(decision) == ["admin_flow"]  # no scope: the strictest reading


MIXED_DESK = """
id: mixed-desk
problem: {statement: Help desk}
intents:
  supported:
    - {id: chat}
    - {id: quick, tools: [verify_identity]}
    - {id: admin}
tools:
  - {name: verify_identity, inputs: [{name: e, required: true}]}
  - {name: manager_check, inputs: [{name: e, required: true}]}
  - {name: grant_admin, inputs: [{name: e, required: true}]}
policy:
  workflows:
    - {name: quick_flow, required: true, intents: [quick],
       steps: [verify_identity, grant_admin]}
    - {name: admin_flow, required: true, intents: [admin],
       steps: [verify_identity, manager_check, grant_admin]}
"""


def test_two_intents_are_never_looser_than_one_of_them_that_may_use_the_tool(
    tmp_path: Path,
) -> None:
    """Attack: quick's workflow names grant_admin but quick may not use it; chat may use
    any tool, and with chat alone admin_flow orders grant_admin (no workflow of the job
    names it). Naming both made quick_flow the job's own workflow for grant_admin, which
    dropped admin_flow's order, and chat's list let the tool through: grant_admin ran
    without the manager check that every job of one of these intents needs."""
    gate = gate_from(tmp_path, MIXED_DESK)
    verified = runs("verify_identity", e="E1")
    for intents in (["chat"], ["quick"], ["admin"], ["chat", "quick"], ["quick", "chat"]):
        decision = gate.check("grant_admin", {"e": "E1"}, history=verified, intents=intents)
        assert decision.kind == "block", (intents, decision)
    checked = runs("verify_identity", "manager_check", e="E1")
    allowed = gate.check("grant_admin", {"e": "E1"}, history=checked, intents=["chat", "quick"])
    assert allowed.kind == "allow", allowed
