"""Limits across jobs at the gate (issue 20 item 5): ``once_per`` and ``rate_limit``
read through a ClaimLedger, never a store; keys normalised so that a trivially
different spelling is the same key; every way of not knowing fails closed. Loading:
bad values are errors with file and line.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from tests.policy.helpers import REFUND_TOOLS, codes, gate_from, line_of
from tests.skills.test_policy_keys import report_of

from skillwire.core.store import Claim, ClaimCount, ClaimSnapshot, claim_key, claim_parts
from skillwire.policy import Allow, Block, Gate, NeedInput, ReasonCode
from skillwire.policy.crossjob import key_text
from skillwire.policy.explain import explain_skill

REFUND_YAML = Path(__file__).resolve().parents[2] / "examples" / "refund_support" / "domain.yaml"
NOW = datetime.datetime(2026, 11, 25, 3, 0, tzinfo=datetime.UTC)
ARGS = {"order_id": "ORD-12345", "amount": 120}

ONCE = REFUND_TOOLS.replace(
    "      - {name: note, type: string}\n",
    "      - {name: note, type: string}\n    policy:\n      once_per: args.order_id\n",
)


def ledger(
    gate: Gate, args: dict[str, object], held: int, *, user: str | None = "u1"
) -> ClaimSnapshot:
    """A ledger holding ``held`` claims on every key the call would take."""
    claims = gate.claims("process_refund", args, user=user, now=NOW)
    assert claims, "the call takes no claim"
    return ClaimSnapshot(
        {c.key: ClaimCount(c.key, held, ("job-a",) if held else ()) for c in claims}
    )


def check(gate: Gate, args: dict[str, object], snapshot: ClaimSnapshot | None, **kw: object):  # type: ignore[no-untyped-def]
    return gate.check("process_refund", args, now=NOW, ledger=snapshot, user="u1", **kw)  # type: ignore[arg-type]


def test_free_key_is_allowed_and_lists_its_claim(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, ONCE)
    decision = check(gate, ARGS, ledger(gate, ARGS, 0))
    assert isinstance(decision, Allow)
    [claim] = decision.claims
    assert claim.limit == 1 and claim.window is None and claim.key.endswith('"ord-12345"')


def test_a_held_key_is_refused_with_the_holder_and_the_rule(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, ONCE)
    decision = check(gate, ARGS, ledger(gate, ARGS, 1))
    assert isinstance(decision, Block) and codes(decision) == [ReasonCode.ONCE_PER]
    reason = decision.reasons[0]
    assert "job-a" in reason.message and "across all jobs" in reason.rule
    assert reason.source is not None and reason.source.line == line_of(
        tmp_path / "domain.yaml", "once_per"
    )


def test_no_ledger_fails_closed(tmp_path: Path) -> None:
    decision = check(gate_from(tmp_path, ONCE), ARGS, None)
    assert isinstance(decision, Block) and codes(decision) == [ReasonCode.ONCE_PER]
    assert "kept in the job store" in decision.reasons[0].message


def test_a_ledger_not_asked_about_the_key_fails_closed(tmp_path: Path) -> None:
    decision = check(gate_from(tmp_path, ONCE), ARGS, ClaimSnapshot())
    assert isinstance(decision, Block) and codes(decision) == [ReasonCode.ONCE_PER]


@pytest.mark.parametrize(
    "spelling",
    ["ORD-12345", "ORD-12345\n", "ord-12345", "  ORD-12345 ", "ＯＲＤ-12345", "ORD\u200b-12345",
     "Ord-12345\t", "ORD-12345\u00a0"],
)  # fmt: skip
def test_spellings_of_one_id_are_one_key(tmp_path: Path, spelling: str) -> None:
    """An attacker's trailing newline, other case, padding, full-width letters or a
    zero-width space do not make a new order: the key is the same, and a ledger
    holding it refuses the call."""
    gate = gate_from(tmp_path, ONCE)
    taken = gate.claims("process_refund", ARGS, now=NOW)
    variant = {**ARGS, "order_id": spelling}
    assert gate.claims("process_refund", variant, now=NOW) == taken
    assert isinstance(check(gate, variant, ledger(gate, ARGS, 1)), Block)


def test_numbers_key_by_value() -> None:
    assert key_text(12345) == key_text(12345.0) == key_text("12345") == key_text(" 12345\n")
    assert key_text("ORD-1") != key_text("ORD-2")
    assert key_text(["A ", "b"]) == key_text(["a", "B"])


def test_a_key_reading_a_missing_optional_argument_fails_closed(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, ONCE.replace("once_per: args.order_id", "once_per: args.note"))
    decision = check(gate, ARGS, ClaimSnapshot())
    assert isinstance(decision, Block) and codes(decision) == [ReasonCode.CONDITION_UNEVALUABLE]
    assert "fail closed" in decision.reasons[0].message
    assert gate.claims("process_refund", ARGS, now=NOW) == ()


def test_an_empty_key_fails_closed(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, ONCE)
    decision = check(gate, {**ARGS, "order_id": " \u200b\n"}, ClaimSnapshot())
    assert isinstance(decision, Block)
    assert ReasonCode.CONDITION_UNEVALUABLE in codes(decision)


def test_a_missing_required_key_is_asked_for_first(tmp_path: Path) -> None:
    decision = check(gate_from(tmp_path, ONCE), {"amount": 120}, None)
    assert isinstance(decision, NeedInput) and decision.requested_fields == ("order_id",)


RATE = REFUND_TOOLS.replace(
    "      - {name: note, type: string}\n",
    "      - {name: note, type: string}\n    policy:\n"
    "      rate_limit: {max: 3, per: 1h, scope: user}\n",
)


def test_a_rate_limit_counts_per_user_in_its_window(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, RATE)
    [claim] = gate.claims("process_refund", ARGS, user="u1", now=NOW)
    assert (claim.limit, claim.window, claim.at) == (3, 3600.0, NOW.timestamp())
    [other] = gate.claims("process_refund", ARGS, user="u2", now=NOW)
    assert other.key != claim.key  # each user has a count
    assert isinstance(check(gate, ARGS, ledger(gate, ARGS, 2)), Allow)
    refused = check(gate, ARGS, ledger(gate, ARGS, 3))
    assert isinstance(refused, Block) and codes(refused) == [ReasonCode.RATE_LIMITED]
    assert "3 runs in the last 1h for user 'u1' (limit 3)" in refused.reasons[0].message


def test_a_rate_limit_without_clock_or_user_fails_closed(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, RATE)
    snapshot = ledger(gate, ARGS, 0)
    no_clock = gate.check("process_refund", ARGS, ledger=snapshot, user="u1")
    assert isinstance(no_clock, Block) and "clock" in no_clock.reasons[0].message
    no_user = gate.check("process_refund", ARGS, ledger=snapshot, now=NOW)
    assert isinstance(no_user, Block) and "owner" in no_user.reasons[0].message


def test_scope_skill_is_one_count_for_everyone(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, RATE.replace("scope: user", "scope: skill"))
    a = gate.claims("process_refund", ARGS, user="u1", now=NOW)
    b = gate.claims("process_refund", ARGS, user="u2", now=NOW)
    assert a == b


@pytest.mark.parametrize(
    ("spelling", "limit", "window"),
    [("{per_minute: 5}", 5, 60), ("{per_day: 100, scope: skill}", 100, 86400),
     ("{max: 2, per: 90s}", 2, 90), ("{max: 2, per: 600}", 2, 600),
     ("{max: 1, per: 2d}", 1, 172800)],
)  # fmt: skip
def test_rate_limit_spellings(tmp_path: Path, spelling: str, limit: int, window: int) -> None:
    gate = gate_from(tmp_path, RATE.replace("{max: 3, per: 1h, scope: user}", spelling))
    [claim] = gate.claims("process_refund", ARGS, user="u1", now=NOW)
    assert (claim.limit, claim.window) == (limit, window)


@pytest.mark.parametrize(
    ("policy", "says"),
    [
        ("rate_limit: {max: 0, per: 1h}", "greater than or equal to 1"),
        ("rate_limit: {max: 3, per: 1w}", "unknown unit"),
        ("rate_limit: {max: 3, per: 0s}", "between 1s and 366d"),
        ("rate_limit: {max: 3, per: 400d}", "between 1s and 366d"),
        ("rate_limit: {max: 3}", "needs max and per"),
        ("rate_limit: {max: '3', per: 1h}", "valid integer"),
        ("rate_limit: {max: 3, per: 1h, scope: team}", "'user' or 'skill'"),
        ("rate_limit: {per_minute: 5, max: 3, per: 1h}", "not both"),
        ("rate_limit: {per_minute: 5, per_hour: 9}", "not several"),
        ("rate_limit: {max: 3, per: 1h, burst: 2}", "unknown key 'burst'"),
        ("once_per: order_id", "once_per does not compile"),
        ("once_per: args.order_id +", "once_per does not compile"),
        ("once_per: history[0].args.order_id", "once_per does not compile"),
        ("once_per: ''", "at least 1 character"),
    ],
)
def test_bad_limits_are_errors_with_their_line(tmp_path: Path, policy: str, says: str) -> None:
    text = REFUND_TOOLS.replace(
        "      - {name: note, type: string}\n",
        f"      - {{name: note, type: string}}\n    policy:\n      {policy}\n",
    )
    rep = report_of(tmp_path, text)
    assert not rep.loaded
    found = [i for i in rep.errors if says in str(i)]
    assert found, [str(i) for i in rep.errors]
    assert found[0].location.line == line_of(
        tmp_path / "domain.yaml", policy.split(":", maxsplit=1)[0] + ":"
    )


def test_a_real_rate_limit_is_enforced_not_reported(tmp_path: Path) -> None:
    rep = report_of(tmp_path, RATE)
    assert rep.loaded, [str(i) for i in rep.errors]
    assert not [i for i in rep.issues if i.code == "not-enforced" and "rate_limit" in str(i)]


def test_explain_shows_each_rule_and_its_scope(tmp_path: Path) -> None:
    text = ONCE.replace(
        "once_per: args.order_id\n",
        "once_per: args.order_id\n      rate_limit: {max: 3, per: 1h}\n",
    )
    gate = gate_from(tmp_path, text)
    rules = {r["kind"]: r for r in explain_skill(gate.skill)["rules"]}
    once, rate = rules["once_per"], rules["rate_limit"]
    assert once["expression"] == "args.order_id" and once["code"] == "ONCE_PER"
    assert once["text"] == "process_refund runs once per args.order_id across all jobs of the skill"
    assert rate["text"].startswith("process_refund runs at most 3 times per 1h per user")
    assert rate["code"] == "RATE_LIMITED" and rate["tools"] == ["process_refund"]


def test_claims_are_plain_values() -> None:
    claim = Claim("k", 2, 60.0, 1000.0, "job:0")
    assert claim.since == 940.0 and claim.counts(950.0) and not claim.counts(940.0)
    assert claim.refused_by(2) and not claim.refused_by(1)


def test_skillwire_call_refuses_a_tool_limited_across_jobs() -> None:
    """``skillwire call`` runs a tool outside any job, with no store to count in: a
    tool with once_per is blocked there (exit 1) with the reason, never run."""
    import json

    from typer.testing import CliRunner

    from skillwire.cli_app import app

    args = json.dumps({"order_id": "ORD-12345", "amount": 120})
    done = CliRunner().invoke(
        app, ["call", str(REFUND_YAML), "process_refund", "--args", args, "--json"]
    )
    assert done.exit_code == 1, done.output
    data = json.loads(done.stdout)
    assert data["decision"] == "block" and "outcome" not in data
    once = [r for r in data["reasons"] if r["code"] == "ONCE_PER"]
    assert once and "kept in the job store" in once[0]["message"]


def test_claim_keys_read_back_whatever_their_parts_hold() -> None:
    parts = ["a/b", 'q"uote', "", "/", "\u00e9\\"]
    assert claim_parts(claim_key(*parts)) == parts
    assert claim_key("a/", "b") != claim_key("a", "/b")
    assert claim_parts("not a key") == []


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("ORD-12345", "ORD-١٢٣٤٥"),  # Arabic-Indic digits: NFKC keeps them, int() reads them
        ("ORD-12345", "ORD-१२३४५"),  # Devanagari digits
        ("ORD-12345", "ORD-12345\ufe0f"),  # a variation selector (Mn, not Cf)
        ("ORD-12345", "ORD-\u034f12345"),  # the combining grapheme joiner
        ("ORD-12345", "ORD\u3164-12345"),  # the Hangul filler (Lo), invisible
        ("ORD-12345", "ORD-12345\x00"),  # a control character a C backend stops at
        (12345, "012345"),  # leading zeros
        (12345, "+12345"),
        (12345, "12345.0"),
        (12345, "12345.000"),
        (123.5, "123.50"),
        (1e-7, "0.0000001"),
        (0, "-0"),
        (12345, "０１２３４５"),
    ],
)
def test_spellings_beyond_nfkc_are_one_key(one: object, other: str) -> None:
    """Attack: one order id spelled so that NFKC, trimming and case folding leave it a
    different key (digits of another script, an invisible character that is not a
    format character, a control character, a number written as text with leading
    zeros, a sign or a zero fraction): the refund ran twice for one order."""
    assert key_text(one) == key_text(other)


def test_numbers_as_text_keep_distinct_values_apart() -> None:
    assert key_text("12345") != key_text("12346")
    assert key_text("1.5") != key_text("15")
    assert key_text("-5") != key_text("5")
    assert key_text("ORD-0123") != key_text("ORD-123")  # only a whole number is a value
    assert key_text("9" * 5000) == key_text("0" + "9" * 5000)  # no int() of any size


def test_a_key_from_what_the_message_said_is_not_the_calls_and_is_warned(
    tmp_path: Path,
) -> None:
    """Attack: with ``once_per: entities.order_id`` the key is the order the intent
    stage read from the message, not the one the call refunds. A job about ORD-22222
    whose planner calls the refund with ORD-12345 (refunded already, its key held) is
    keyed ORD-22222 and allowed. The gate cannot know the author meant the argument: a
    once_per that reads entities or inputs but no argument is a load warning."""
    text = ONCE.replace("once_per: args.order_id", "once_per: entities.order_id")
    gate = gate_from(tmp_path, text)
    held = ClaimSnapshot(
        {
            c.key: ClaimCount(c.key, 1, ("job-a",))
            for c in gate.claims("process_refund", ARGS, entities={"order_id": ARGS["order_id"]},
                                 now=NOW)
        }
    )  # fmt: skip
    other = {"order_id": "ORD-22222"}
    free = gate.claims("process_refund", ARGS, entities=other, now=NOW)
    snapshot = ClaimSnapshot({**held.counts, **{c.key: ClaimCount(c.key, 0) for c in free}})
    assert isinstance(check(gate, ARGS, snapshot, entities=other), Allow)  # by design
    rep = report_of(tmp_path, text)
    [warning] = [i for i in rep.warnings if i.code == "once-per-not-args"]
    assert warning.location is not None
    assert warning.location.line == line_of(tmp_path / "domain.yaml", "once_per:")
    plain = report_of(tmp_path, ONCE)
    assert not [i for i in plain.warnings if i.code == "once-per-not-args"]
    ctx = report_of(tmp_path, ONCE.replace("args.order_id", "context.account_id"))
    assert not [i for i in ctx.warnings if i.code == "once-per-not-args"]  # the operator's
