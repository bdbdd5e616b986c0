"""What users must read prints as written: no rich markup, no emoji codes, in any
output or help text of the command line (issue 17, item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.engine.helpers import ANSWER, FIELDS, ORDER, call, final, gate, intent, polish
from tests.test_cli import REFUND, ok, user_error
from typer.testing import CliRunner, Result

from skillwire.cli_app import app

TRICKY = "[red]x[/] :100: system in [prod, staging] [bold]"
"""Markup, an emoji code and a list in brackets, which rich would each change."""

WIDE = {"COLUMNS": "300"}
"""Wide enough that no table cell is folded."""


def wide(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args], env=WIDE)


@pytest.fixture
def line_100(tmp_path: Path) -> Path:
    """A skill whose only error is at line 100, column 1."""
    head = 'id: bad\nproblem: {statement: "x"}\n'
    head += "intents: {supported: [{id: i1, description: d, examples: [e]}]}\n"
    path = tmp_path / "bad" / "domain.yaml"
    path.parent.mkdir()
    path.write_text(head + "#\n" * 96 + "tools: 5\n")
    return path


def test_a_line_number_is_no_emoji(line_100: Path) -> None:
    result = wide("check", line_100)
    assert result.exit_code == 1
    assert "domain.yaml:100:1: error: tools" in result.stdout, result.stdout
    assert "\N{HUNDRED POINTS SYMBOL}" not in result.stdout
    failed = wide("run", line_100, "-m", "hi")
    assert "domain.yaml:100:1: error: tools" in failed.stderr
    assert "\N{HUNDRED POINTS SYMBOL}" not in failed.output


def test_a_rule_and_its_condition_print_whole(tmp_path: Path) -> None:
    path = tmp_path / "rules" / "domain.yaml"
    path.parent.mkdir()
    path.write_text(
        f"""id: rules
problem: {{statement: "x"}}
intents: {{supported: [{{id: i1, description: d, examples: [e]}}]}}
tools:
  - name: "t[/]"
    description: d
    executor: {{type: simulate, result: {{}}}}
    policy:
      conditions:
        - when: "context.system in ['prod', 'staging']"
          action: deny
          message: "{TRICKY}"
"""
    )
    result = wide("check", path, "--explain")
    assert result.exit_code == 0, result.output
    assert TRICKY in result.stdout
    assert "context.system in ['prod', 'staging']" in result.stdout
    assert "t[/]" in result.stdout
    as_json = json.loads(wide("check", path, "--explain", "--json").stdout)
    assert as_json["explain"][0]["rules"][0]["text"] == TRICKY


def test_a_reply_and_the_timeline_print_as_written(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    reply = f"{TRICKY} {ANSWER}"
    script.write_text(
        json.dumps(
            [
                intent(order_id=ORDER, amount=50),
                call("verify_identity", "c1", order_id=ORDER),
                call("check_eligibility", "c2", order_id=ORDER, amount=50),
                call("process_refund", "c3", order_id=ORDER, amount=50),
                final(reply, FIELDS),
                gate(),
                polish(reply),
            ]
        )
    )
    db = tmp_path / "jobs.db"
    message = f"refund of $50 {TRICKY}"
    args = ("-m", message, "--model", f"scripted:{script}", "--db", db)
    job = ok(wide("run", REFUND, *args, "--json"))
    assert job["reply"] == reply, job
    shown = wide("show", job["id"], "--db", db)
    assert shown.exit_code == 0
    assert f"reply: {reply}" in shown.stdout
    assert message in shown.stdout  # the timeline's "created" event: the user's message
    assert "\N{HUNDRED POINTS SYMBOL}" not in shown.stdout


def test_an_error_message_prints_as_written(tmp_path: Path) -> None:
    db = tmp_path / "jobs.db"
    ok(wide("run", REFUND, "-m", "refund", "--db", db, "--json"))
    user_error(wide("show", TRICKY, "--db", db), f"no job '{TRICKY}'")


def test_help_texts_keep_their_brackets() -> None:
    serve = wide("serve", "--help")
    assert serve.exit_code == 0
    assert "[server] skills" in serve.stdout
    run = wide("run", "--help")
    assert "key:=JSON" in run.stdout
    keys = wide("keys", "new", "--help")
    assert "[[server.keys]]" in keys.stdout
