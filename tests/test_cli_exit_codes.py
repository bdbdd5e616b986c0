"""Exit codes of ``skillwire run`` and ``resume`` (issue 17 item 4), and a model outage
from the command line: a real OpenAI-compatible endpoint that refuses connections
pauses the job, the CLI says why on standard error and exits 1, and ``resume --retry``
on a working model finishes it. ``--retry`` of a job no outage paused is a usage error
that changes nothing."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import approval_script, intent
from typer.testing import CliRunner, Result

from skillwire.cli_app import app
from skillwire.cli_jobs import exit_code, explain_model_failure
from skillwire.core.job import Event, JobRecord, JobStatus, OutcomeClass, Waiting
from skillwire.engine import JobView

ROOT = Path(__file__).resolve().parent.parent
REFUND = ROOT / "examples" / "refund_support" / "domain.yaml"
MESSAGE = "Please refund 750 for order ORD-12345"
PASSWORD = "s3cret-Pa55word"


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A configured model ``down``: the OpenAI backend on a closed port (a password in
    its URL, which no output may show), no retries."""
    config = tmp_path / "skillwire.toml"
    url = f"http://user:{PASSWORD}@127.0.0.1:{closed_port()}/v1"
    config.write_text(
        f'[models.down]\nbackend = "openai"\nmodel = "gpt-test"\nbase_url = "{url}"\n'
        "max_retries = 0\n"
    )
    monkeypatch.setenv("SKILLWIRE_CONFIG", str(config))
    for name in ("SKILLWIRE_MODEL", "SKILLWIRE_GATE_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return "down"


def cli(*args: str | Path) -> Result:
    """Run the command in process."""
    return CliRunner().invoke(app, [str(a) for a in args])


def script(tmp_path: Path, replies: list[dict[str, Any]], name: str = "script.json") -> str:
    """``scripted:FILE`` for ``replies``."""
    path = tmp_path / name
    path.write_text(json.dumps(replies))
    return f"scripted:{path}"


def shown(db: Path, job_id: str) -> dict[str, Any]:
    """``skillwire show JOB --json``."""
    result = cli("show", job_id, "--db", db, "--json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_an_unreachable_model_pauses_the_job_says_why_and_a_retry_finishes_it(
    tmp_path: Path, down: str
) -> None:
    db = tmp_path / "jobs.db"
    result = cli("run", REFUND, "-m", MESSAGE, "--model", down, "--db", db, "--json")
    assert result.exit_code == 1, result.output
    job = json.loads(result.stdout)
    assert (job["status"], job["outcome_class"]) == ("paused", "MODEL_UNAVAILABLE")
    assert job["waiting"]["stage"] == "intent"
    error = result.stderr
    assert error.startswith("error: the model openai:gpt-test could not be reached (intent")
    assert "could not connect to http://[redacted]@127.0.0.1" in error
    assert f"skillwire resume {job['id']} --retry" in error
    assert PASSWORD not in result.output and PASSWORD not in result.stderr
    assert "Traceback" not in result.output + result.stderr

    # still down: paused again, exit 1 again
    again = cli("resume", job["id"], "--retry", "--model", down, "--db", db, "--json")
    assert again.exit_code == 1, again.output
    assert json.loads(again.stdout)["outcome_class"] == "MODEL_UNAVAILABLE"
    assert "could not be reached" in again.stderr

    # back (a working model): the retry runs the intent stage, the job pauses for approval
    working = script(tmp_path, approval_script())
    back = cli("resume", job["id"], "--retry", "--model", working, "--db", db, "--json")
    assert back.exit_code == 0, back.output
    resumed = json.loads(back.stdout)
    assert (resumed["status"], resumed["outcome_class"]) == ("paused", "APPROVAL_REQUIRED")
    assert "could not be reached" not in back.stderr
    done = cli(
        "resume",
        job["id"],
        "--approve",
        "--as",
        "supervisor",
        "--model",
        working,
        "--db",
        db,
        "--json",
    )
    assert done.exit_code == 0, done.output
    final = json.loads(done.stdout)
    assert (final["status"], final["outcome_class"]) == ("completed", "SUCCESS")
    kinds = [e["kind"] for e in final["events"]]
    assert kinds.count("model_unavailable") == 2 and kinds.count("retry_requested") == 2
    asked = [e for e in final["events"] if e["kind"] == "retry_requested"]
    assert all(e["data"]["requested_by"].startswith("cli:") for e in asked)
    assert [e["kind"] for e in final["events"]].count("tool_finished") == 3


def test_retry_of_a_job_no_outage_paused_is_a_usage_error_that_changes_nothing(
    tmp_path: Path, down: str
) -> None:
    db = tmp_path / "jobs.db"
    working = script(tmp_path, approval_script())
    started = cli("run", REFUND, "-m", MESSAGE, "--model", working, "--db", db, "--json")
    assert started.exit_code == 0, started.output
    job_id = json.loads(started.stdout)["id"]
    before = shown(db, job_id)
    assert before["outcome_class"] == "APPROVAL_REQUIRED"
    for extra in ([], ["--model", down]):
        result = cli("resume", job_id, "--retry", *extra, "--db", db)
        assert result.exit_code == 2, result.output
        assert "error: job" in result.stderr and "not by a model outage" in result.stderr
        assert "Traceback" not in result.output + result.stderr
    for mixed in (["--approve", "--as", "supervisor"], ["--input", "order_id=ORD-1"]):
        result = cli("resume", job_id, "--retry", *mixed, "--db", db)
        assert result.exit_code == 2, result.output
        assert "--retry takes no" in result.stderr
    assert shown(db, job_id) == before


def test_a_job_a_model_outage_paused_takes_no_input(tmp_path: Path, down: str) -> None:
    db = tmp_path / "jobs.db"
    result = cli("run", REFUND, "-m", MESSAGE, "--model", down, "--db", db, "--json")
    assert result.exit_code == 1, result.output
    job_id = json.loads(result.stdout)["id"]
    before = shown(db, job_id)
    refused = cli("resume", job_id, "--input", "order_id=ORD-12345", "--db", db)
    assert refused.exit_code == 2, refused.output
    assert "retry it" in refused.stderr
    assert shown(db, job_id) == before


@pytest.mark.parametrize(
    ("replies", "ending", "code"),
    [
        (approval_script(), ("paused", "APPROVAL_REQUIRED"), 0),
        ([intent(None)], ("completed", "OUT_OF_DOMAIN"), 1),
    ],
    ids=["approval-pause", "out-of-domain"],
)
def test_run_exits_by_how_the_job_ended(
    tmp_path: Path, replies: list[dict[str, Any]], ending: tuple[str, str], code: int
) -> None:
    db = tmp_path / "jobs.db"
    model = script(tmp_path, replies)
    result = cli("run", REFUND, "-m", MESSAGE, "--model", model, "--db", db, "--json")
    job = json.loads(result.stdout)
    assert (job["status"], job["outcome_class"]) == ending
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output + result.stderr


def test_a_denied_call_exits_1_and_an_approved_one_0(tmp_path: Path) -> None:
    for decision, ending, code in (
        ("--deny", ("completed", "DENIED"), 1),
        ("--approve", ("completed", "SUCCESS"), 0),
    ):
        db = tmp_path / f"{decision[2:]}.db"
        replies = approval_script() if decision == "--approve" else approval_script()[:4]
        if decision == "--deny":
            replies.append(
                {
                    "stage": "planner",
                    "tool_call": {
                        "name": "final_answer",
                        "id": "f",
                        "arguments": {"answer": "The refund was not approved.", "fields": {}},
                    },
                }
            )
        model = script(tmp_path, replies, f"{decision[2:]}.json")
        started = cli("run", REFUND, "-m", MESSAGE, "--model", model, "--db", db, "--json")
        assert started.exit_code == 0, started.output
        job_id = json.loads(started.stdout)["id"]
        args = ("resume", job_id, decision, "--as", "supervisor", "--model", model)
        result = cli(*args, "--db", db, "--json")
        job = json.loads(result.stdout)
        assert (job["status"], job["outcome_class"]) == ending
        assert result.exit_code == code, result.output


def _view(status: JobStatus, outcome: OutcomeClass | None, **extra: Any) -> JobView:
    record = JobRecord("j1", "s", status, outcome, "", "t", "t", **extra)
    return JobView(record, [], [])


def test_exit_code_is_0_only_for_success_and_pauses_for_input_or_approval() -> None:
    zero = {
        (JobStatus.COMPLETED, OutcomeClass.SUCCESS),
        (JobStatus.PAUSED, OutcomeClass.USER_ACTION_REQUIRED),
        (JobStatus.PAUSED, OutcomeClass.APPROVAL_REQUIRED),
    }
    for status in JobStatus:
        for outcome in [*OutcomeClass, None]:
            expected = 0 if (status, outcome) in zero else 1
            assert exit_code(_view(status, outcome)) == expected, (status, outcome)


def test_a_model_error_that_is_not_an_outage_is_told_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    event = Event(
        "j1",
        3,
        "t",
        "engine",
        "model_error",
        "INTERNAL_ERROR",
        "ModelConfigError: openai:m: the server refused the credentials (HTTP 401) [x]:100:",
        {"error_type": "ModelConfigError", "model": "openai:m", "stage": "planner"},
    )
    view = _view(JobStatus.FAILED, OutcomeClass.INTERNAL_ERROR)
    explain_model_failure(JobView(view.record, [event], []))
    error = capsys.readouterr().err
    assert error.startswith("error: the model openai:m failed (planner stage): ModelConfigError")
    assert "(HTTP 401) [x]:100:" in error  # no markup, no emoji
    assert "not an outage" in error


def test_an_outage_pause_is_told_on_stderr_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    waiting = Waiting(
        "MODEL_UNAVAILABLE",
        [],
        "p",
        "c",
        "t",
        "t",
        reason="HTTP 503: [bold]down[/bold] :100:",
        model="openai:[m]",
        stage="gate",
    )
    view = _view(JobStatus.PAUSED, OutcomeClass.MODEL_UNAVAILABLE, waiting=waiting)
    explain_model_failure(view)
    error = capsys.readouterr().err
    assert "the model openai:[m] could not be reached (gate stage)" in error
    assert "HTTP 503: [bold]down[/bold] :100:" in error
    assert "skillwire resume j1 --retry" in error
