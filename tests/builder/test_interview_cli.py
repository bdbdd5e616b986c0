"""``skillwire new`` and ``skillwire edit`` driven through their prompts by a fake input
stream (never a terminal): the skill written loads with 0 errors and its generated
scenarios pass."""

from __future__ import annotations

from pathlib import Path

from ruamel.yaml import YAML
from typer.testing import CliRunner, Result

from skillwire.cli_app import app
from skillwire.skills import load_paths

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def cli(args: list[str], lines: list[str] | None = None) -> Result:
    """Run the command in process, answering its prompts with ``lines``."""
    stdin = "".join(f"{line}\n" for line in lines or [])
    return CliRunner().invoke(app, args, input=stdin)


def loads_clean(folder: Path) -> None:
    """The folder's skill loads with no error and no warning."""
    report = load_paths([folder]).report
    assert report.error_count == 0, [str(i) for s in report.skills for i in s.issues]
    assert report.warning_count == 0, [str(i) for s in report.skills for i in s.issues]


INTERVIEW = [
    # 1. problem, goals
    "Help customers track orders and get refunds",
    "Reduce response time",
    "",
    # 2. scenarios
    "A customer asks where their order is",
    "A customer wants a refund",
    "",
    # 3. intents, proposed from the scenarios
    "intent_status",
    "Customer asks where an order is",
    "Where is my order?",
    "Track my order",
    "",
    "intent_refund",
    "",  # the scenario as description
    "I want my money back",
    "?",  # the live summary, then the same question again
    "Refund please",
    "",
    "",  # no more intents
    # 4. tools
    "",  # add one: yes (the draft has none)
    "check_status",
    "Look up where an order is",
    "order_id:string",
    "1",  # simulate, by number
    "yes",
    "process_refund",
    "Refund an order",
    "order_id:string, amount:number",
    "simulate",
    "",  # no more tools
    # 5. policies: check_status reads (runs freely), process_refund pays
    "",
    "",  # approval when a condition holds (proposed)
    "amout > 500",  # a typo: refused, with the fix
    "amount > 500",
    # 6. approvals and roles
    "2",  # manager
    # 7. workflows: go back to the roles instead
    "<",
    "supervisor",
    "",  # no workflow
    # 8. required inputs
    "",
    # 9. output contract
    "order_id, status",
    # 10. persona, out of domain
    "Support Agent",
    "",
    "",
    "",
    # write
    "",
]


def test_a_scripted_interview_writes_a_skill_that_loads_and_passes_its_dry_run() -> None:
    result = cli(["new", "desk"], INTERVIEW)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "`amout` is not a name this skill defines" in out
    assert "fix: did you mean `amount`?" in out
    assert "runs: amount > 500" in out  # shown back as check --explain shows it
    assert "loads: not yet" in out and "loads: yes" in out  # the live summary
    assert "+  statement: Help customers track orders and get refunds" in out  # the diff
    assert "dry run: 4 passed, 0 failed" in out
    loads_clean(Path("desk"))
    data = YAML(typ="safe").load(Path("desk/domain.yaml"))
    assert data["policy"]["approvals"] == [
        {
            "tool_id": "process_refund",
            "when": "amount > 500",
            "action": "require_approval",
            "approver": "supervisor",  # going back undid "manager"
        }
    ]
    assert [i["id"] for i in data["intents"]["supported"]] == ["intent_status", "intent_refund"]
    assert data["output_contract"] == {"required_fields": ["order_id", "status"]}
    assert data["role"]["name"] == "Support Agent"
    generated = [
        "intent-intent_status",
        "intent-intent_refund",
        "approval-process_refund-1",
        "out-of-domain",
    ]
    assert [t["id"] for t in data["tests"]] == generated  # the skill's own tests
    assert "+  - id: approval-process_refund-1" in out  # in the diff before the write
    # The dry run is what skillwire test runs later: the same cases, the same verdicts.
    shown = [line.split()[:2] for line in out.splitlines() if line.startswith("  pass ")]
    test = cli(["test", "desk"])
    assert test.exit_code == 0, test.output
    assert "4 passed, 0 failed, 2 manual" in test.output  # the two scenarios[] are prose
    assert "dry run: 4 passed, 0 failed, 2 manual" in out
    assert shown == [["pass", f"{case}:"] for case in generated]


def test_input_that_ends_early_writes_nothing() -> None:
    result = cli(["new", "desk"], INTERVIEW[:10])
    assert result.exit_code == 2
    assert "the input ended before the interview did: nothing written" in result.output
    assert not Path("desk/domain.yaml").exists()
    assert "Traceback" not in result.output


def test_declining_the_write_writes_nothing() -> None:
    result = cli(["new", "desk", "--no-dry-run"], [*INTERVIEW[:-1], "no"])
    assert result.exit_code == 1
    assert "nothing written" in result.output
    assert not Path("desk/domain.yaml").exists()


def test_an_interview_left_midway_copies_no_module_either() -> None:
    args = ["new", "shop", "--describe", "Refunds.", "--from-python"]
    result = cli([*args, str(FIXTURES / "shop_tools.py"), "--no-dry-run"], [""] * 5)
    assert result.exit_code == 2, result.output
    assert not Path("shop").exists() or not any(Path("shop").iterdir())


def test_yes_without_a_description_leaves_out_what_it_cannot_guess_and_writes_nothing() -> None:
    result = cli(["new", "blank", "--yes", "--no-dry-run"])
    assert result.exit_code == 1, result.output
    assert "left out after 5 refused answers" in result.output
    assert "the draft does not load yet, nothing written" in result.output
    assert "problem statement" in result.output
    assert not Path("blank/domain.yaml").exists()


def test_yes_with_a_description_writes_a_skill_that_loads_and_passes() -> None:
    result = cli(
        ["new", "shop", "--describe", "Help shoppers track orders. Refund items.", "--yes"]
    )
    assert result.exit_code == 0, result.output
    loads_clean(Path("shop"))
    data = YAML(typ="safe").load(Path("shop/domain.yaml"))
    assert data["problem"]["statement"] == "Help shoppers track orders. Refund items."
    assert len(data["intents"]["supported"]) == 2  # one per sentence
    assert data["tools"][0]["executor"]["type"] == "simulate"
    assert "dry run: 3 passed, 0 failed" in result.output


def test_yes_with_python_and_openapi_tools() -> None:
    result = cli(
        [
            "new",
            "shop",
            "--describe",
            "Track orders and refund them.",
            "--from-python",
            str(FIXTURES / "shop_tools.py"),
            "--from-openapi",
            str(FIXTURES / "petstore.yaml"),
            "--yes",
        ]
    )
    assert result.exit_code == 0, result.output
    assert "left out: untyped: parameter 'value' has no type hint" in result.output
    report = load_paths([Path("shop")]).report
    assert report.error_count == 0
    data = YAML(typ="safe").load(Path("shop/domain.yaml"))
    approvals = {(a["tool_id"], a["when"]) for a in data["policy"]["approvals"]}
    assert approvals == {
        ("process_refund", "amount > 500"),
        ("delete_account", "always"),
        ("delete_pet", "always"),
        ("create_pet", "always"),
    }
    assert Path("shop/shop_tools.py").is_file()  # python tools call a module of the folder
    assert "dry run: 6 passed, 0 failed" in result.output


def test_new_refuses_an_existing_skill_and_edit_a_missing_one() -> None:
    Path("s").mkdir()
    Path("s/domain.yaml").write_text("id: s\n")
    assert "use skillwire edit" in cli(["new", "s", "--yes"]).output
    assert cli(["new", "s", "--yes"]).exit_code == 2
    result = cli(["edit", "t", "--yes"])
    assert result.exit_code == 2 and "use skillwire new" in result.output


def test_text_the_author_types_is_never_read_as_markup() -> None:
    result = cli(["new", "m", "--describe", "Answer [bold red]questions[/] :smile: fast.", "--yes"])
    assert result.exit_code == 0, result.output
    assert "[bold red]questions[/] :smile:" in result.output
