"""The builder's parts: the draft refuses an answer that brings an error, policies are
proposed from what a tool does, tools are read from Python and OpenAPI, conditions are
shown back as the CEL that runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillwire.builder import (
    Draft,
    Effect,
    PolicyChoice,
    classify_tool,
    edits,
    open_draft,
    propose_policy,
    tools_from_openapi,
    tools_from_python,
    view_condition,
)
from skillwire.core.errors import SkillError, UsageError

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def small_draft(folder: Path) -> Draft:
    draft = open_draft(folder, new=True, description="Refunds")
    assert not draft.update(lambda r: edits.set_problem(r, "Refund orders"))
    assert not draft.update(lambda r: edits.add_intent(r, "intent_refund", "Refund", ["Refund"]))
    tool = {"name": "refund", "inputs": [{"name": "amount", "type": "number", "required": True}]}
    assert not draft.update(lambda r: edits.add_tool(r, tool))
    return draft


def test_an_answer_that_brings_an_error_is_undone_with_its_fix(tmp_path: Path) -> None:
    draft = small_draft(tmp_path / "s")
    before = draft.text()
    errors = draft.update(lambda r: edits.add_approval(r, "refund", "amount >", "supervisor"))
    assert errors and errors[0].hint  # what to write instead
    assert draft.text() == before
    errors = draft.update(lambda r: edits.add_approval(r, "refund", "amout > 5", "supervisor"))
    assert "did you mean `amount`" in errors[0].hint
    assert draft.text() == before
    assert draft.last.loads


def test_a_missing_part_is_not_an_error_of_the_answer_but_blocks_the_write(tmp_path: Path) -> None:
    draft = open_draft(tmp_path / "s", new=True)
    assert not draft.update(lambda r: edits.set_problem(r, "Refund orders"))
    assert {i.code for i in draft.last.errors} == {"required-part"}
    with pytest.raises(SkillError):
        draft.write()
    assert not (tmp_path / "s" / "domain.yaml").exists()


def test_a_change_that_raises_is_refused_not_crashed(tmp_path: Path) -> None:
    draft = small_draft(tmp_path / "s")
    errors = draft.update(lambda r: edits.add_approval(r, "no_such_tool", "always", "x"))
    assert "no tool named 'no_such_tool'" in errors[0].message


def test_the_diff_and_the_write(tmp_path: Path) -> None:
    draft = small_draft(tmp_path / "s")
    assert draft.diff().startswith("--- a/domain.yaml\n+++ b/domain.yaml\n")
    path = draft.write()
    assert draft.diff() == ""
    assert Draft(path.parent).text() == path.read_text()


def test_new_top_level_keys_go_where_the_spec_puts_them(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "domain.yaml").write_text("id: s  # mine\ntools: []\nengine: fast\n")
    draft = Draft(folder)
    draft.update(lambda r: edits.set_problem(r, "Solve it"))
    draft.update(lambda r: edits.set_output_contract(r, ["x"]))
    assert list(draft.data) == ["id", "problem", "tools", "output_contract", "engine"]
    assert draft.text().startswith("id: s  # mine\n")


@pytest.mark.parametrize(
    ("name", "description", "method", "effect"),
    [
        ("check_order_status", "", None, Effect.READ),
        ("getOrder", "", None, Effect.READ),
        ("process_refund", "", None, Effect.PAYMENT),
        ("deleteFile", "", None, Effect.DELETION),
        ("get_and_delete", "", None, Effect.DELETION),  # the most consequential word wins
        ("lookup_refund", "", None, Effect.PAYMENT),
        ("frobnicate", "", None, Effect.WRITE),  # unknown: never a free pass
        ("frobnicate", "Looks up a value", None, Effect.READ),
        ("frobnicate", "Looks up a value", "POST", Effect.WRITE),  # a POST changes things
        ("pets", "", "DELETE", Effect.DELETION),
        ("get_pet", "", "GET", Effect.READ),
        ("undeleted_items", "", None, Effect.WRITE),  # words, not substrings
    ],
)
def test_what_a_tool_does(name: str, description: str, method: str | None, effect: Effect) -> None:
    assert classify_tool(name, description, method) is effect


def test_the_proposed_policies() -> None:
    money = {"type": "object", "properties": {"amount": {"type": "number"}}}
    assert propose_policy("list_orders").choice is PolicyChoice.FREE
    refund = propose_policy("issue_refund", schema=money)
    assert (refund.choice, refund.condition) == (PolicyChoice.APPROVAL_WHEN, "amount > 500")
    assert propose_policy("issue_refund").choice is PolicyChoice.APPROVAL
    assert propose_policy("delete_user").choice is PolicyChoice.APPROVAL
    assert propose_policy("send_email").choice is PolicyChoice.APPROVAL


def test_conditions_are_shown_back_as_the_cel_that_runs() -> None:
    view = view_condition("amount > 500 and currency = 'USD'", ["amount", "currency"])
    assert view.expression == "amount > 500 && currency == 'USD'"
    assert "runs: amount > 500 && currency == 'USD'" in str(view)
    bad = view_condition(" > ", ["amount"])
    assert not bad.ok and "fix:" in str(bad)
    sneaky = view_condition("__import__('os').system('x')", ["amount"])
    assert not sneaky.ok


def test_python_functions_become_tools_with_their_schemas(tmp_path: Path) -> None:
    found = tools_from_python(FIXTURES / "shop_tools.py", tmp_path)
    tools = {t["name"]: t for t in found.tools}
    assert set(tools) == {"check_order_status", "process_refund", "delete_account"}
    status = tools["check_order_status"]
    assert status["executor"] == {"type": "python", "callable": "shop_tools:check_order_status"}
    prop = status["inputSchema"]["properties"]["order_id"]
    assert prop == {
        "type": "string",
        "pattern": "^ORD-[0-9]{5}$",
        "description": "The order number",
    }
    refund = tools["process_refund"]["inputSchema"]
    assert refund["required"] == ["order_id", "amount"]
    assert refund["properties"]["amount"] == {
        "type": "number",
        "description": "How much to give back.",
    }
    assert refund["properties"]["reason"]["default"] == ""
    assert found.skipped == ["untyped: parameter 'value' has no type hint"]
    assert not (tmp_path / "shop_tools.py").exists()  # written with the skill, not before
    assert found.write_files() == [tmp_path / "shop_tools.py"]
    assert (tmp_path / "shop_tools.py").read_text() == (FIXTURES / "shop_tools.py").read_text()


def test_a_python_file_never_overwrites_a_different_module(tmp_path: Path) -> None:
    found = tools_from_python(FIXTURES / "shop_tools.py", tmp_path)
    (tmp_path / "shop_tools.py").write_text("# the author's own\n")
    with pytest.raises(UsageError, match="exists and differs"):
        found.write_files()
    with pytest.raises(UsageError, match="exists and differs"):
        tools_from_python(FIXTURES / "shop_tools.py", tmp_path)
    assert (tmp_path / "shop_tools.py").read_text() == "# the author's own\n"


def test_a_python_file_that_fails_to_import_is_a_usage_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(UsageError, match=r"importing .* failed: RuntimeError: boom"):
        tools_from_python(broken, tmp_path)


def test_openapi_operations_become_http_tools() -> None:
    found = tools_from_openapi(FIXTURES / "petstore.yaml")
    tools = {t["name"]: t for t in found.tools}
    assert set(tools) == {"get_pet", "delete_pet", "list_pets", "create_pet"}
    assert tools["get_pet"]["executor"] == {
        "type": "http_request",
        "method": "GET",
        "url": "https://pets.example.com/v1/pets/{{petId}}",
    }
    assert tools["list_pets"]["executor"]["url"].endswith("/pets?species={{species}}")
    assert tools["list_pets"]["inputSchema"]["required"] == ["species"]
    assert "limit" not in tools["list_pets"]["inputSchema"]["properties"]
    create = tools["create_pet"]
    assert create["executor"]["body"] == {"name": "{{name}}"}  # the $ref was inlined
    assert create["inputSchema"]["required"] == ["name"]
    assert found.skipped == [  # a template cannot leave out a value not given
        "GET /pets: optional query parameter limit",
        "POST /pets: optional body field price",
    ]


def test_openapi_refs_that_leave_the_document_or_loop_are_refused(tmp_path: Path) -> None:
    doc = {
        "openapi": "3.0.0",
        "servers": [{"url": "https://x.example"}],
        "paths": {
            "/a": {"post": {"operationId": "a", "requestBody": {"$ref": "https://evil.example/x"}}},
            "/b": {"post": {"operationId": "b", "requestBody": {"$ref": "#/components/x"}}},
        },
        "components": {"x": {"$ref": "#/components/x"}},
    }
    path = tmp_path / "api.json"
    path.write_text(json.dumps(doc))
    found = tools_from_openapi(path)
    assert found.tools == []
    assert any("remote $ref" in s for s in found.skipped)
    assert any("too deep or refers to itself" in s for s in found.skipped)


def test_a_file_that_is_not_openapi_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("swagger: '2.0'\n")
    with pytest.raises(UsageError, match="not an OpenAPI 3 document"):
        tools_from_openapi(path)
