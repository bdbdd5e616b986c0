"""Entity types list, date, date_range and money (issue 20 item 3): declared in the
skill, typed by schema, filled by the offline extractor, bad values rejected (never a
crash, never coerced)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from skillwire.core.errors import SkillError
from skillwire.engine.intent_stage import valid_entities
from skillwire.models.offline.entities import extract_entities
from skillwire.skills import load_skill
from skillwire.skills.entity_types import MAX_LIST_ITEMS
from skillwire.skills.model_fields import Entity, Intent

SKILL = """
id: typed
problem: {statement: "Typed entities"}
intents:
  supported:
    - id: pay
      description: pay people
      entities:
ENTITIES
tools:
  - {name: t, executor: {type: simulate, result: {status: ok}}}
"""


def load(tmp_path: Path, entities: str) -> Any:
    body = textwrap.indent(textwrap.dedent(entities).strip("\n"), " " * 8)
    path = tmp_path / "domain.yaml"
    path.write_text(SKILL.replace("ENTITIES", body))
    return load_skill(path)


def test_the_types_load_with_their_keys(tmp_path: Path) -> None:
    skill = load(
        tmp_path,
        """
        - {name: amount, type: money, currency: [USD, EUR]}
        - {name: to, type: list, items: {type: string, format: email}, maxItems: 3}
        - {name: on, type: date}
        - {name: stay, type: date_range}
        """,
    )
    amount, to, on, stay = skill.intents.supported[0].entities
    assert amount.json_schema() == {"type": "number", "minimum": 0}
    assert to.json_schema()["type"] == "array" and to.json_schema()["maxItems"] == 3
    assert to.json_schema()["items"]["format"] == "email"
    assert on.json_schema()["type"] == "string"
    assert stay.json_schema()["required"] == ["start", "end"]


@pytest.mark.parametrize(
    ("entity", "said"),
    [
        ("{name: a, type: string, currency: USD}", "currency is for a money entity"),
        ("{name: a, type: money, currency: usd}", "not an ISO 4217 code"),
        ("{name: a, type: money, currency: [USD, DOLLARS]}", "not an ISO 4217 code"),
        ("{name: a, type: date, maxItems: 3}", "maxItems is for a list entity"),
        ("{name: a, type: list, maxItems: 0}", "greater than or equal to 1"),
        ("{name: a, type: datetime}", "date_range"),
    ],
)
def test_a_key_of_another_type_is_a_load_error_with_its_line(
    tmp_path: Path, entity: str, said: str
) -> None:
    with pytest.raises(SkillError) as caught:
        load(tmp_path, f"- {entity}")
    issue = caught.value.issues[0]
    assert said in issue.message
    assert issue.location.line == 9  # the entity's line


MONEY = Entity(name="amount", type="money")
DAY = Entity(name="day", type="date")
STAY = Entity(name="stay", type="date_range")
TO = Entity.model_validate(
    {"name": "to", "type": "list", "items": {"type": "string", "format": "email"}}
)
CODES = Entity.model_validate({"name": "codes", "type": "list", "pattern": "^ORD-[0-9]{5}$"})
INTENT = Intent(id="pay", entities=[MONEY, DAY, STAY, TO, CODES])


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("amount", 750),
        ("amount", 1250.5),
        ("amount", 0),
        ("day", "2026-03-14"),
        ("day", "2024-02-29"),
        ("stay", {"start": "2026-03-01", "end": "2026-03-01"}),
        ("to", ["a@b.co", "jo.lee+x@mail.example.org"]),
        ("codes", ["ORD-12345"]),
    ],
)
def test_good_values_are_kept(name: str, value: Any) -> None:
    assert valid_entities([INTENT], {name: value}) == ({name: value}, [])


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("amount", "750"),  # text is not money: never coerced
        ("amount", -5),
        ("amount", 1.005),  # fractions of a cent
        ("amount", True),
        ("amount", {"amount": 5}),
        ("day", "2026-02-30"),
        ("day", "2026-2-3"),
        ("day", "14 March 2026"),
        ("day", "2026-03-14T10:00"),
        ("day", 20260314),
        ("stay", {"start": "2026-03-05", "end": "2026-03-01"}),  # ends before it starts
        ("stay", {"start": "2026-03-01"}),
        ("stay", {"start": "2026-03-01", "end": "2026-13-01"}),
        ("stay", {"start": "2026-03-01", "end": "2026-03-02", "evil": 1}),
        ("stay", ["2026-03-01", "2026-03-02"]),
        ("to", "a@b.co"),  # one address is not a list
        ("to", ["a@b.co", "not an address"]),
        ("to", ["a@b.co", 7]),
        ("to", [f"u{i}@x.org" for i in range(MAX_LIST_ITEMS + 1)]),
        ("codes", ["ORD-1"]),
    ],
)
def test_bad_values_are_rejected_by_name(name: str, value: Any) -> None:
    assert valid_entities([INTENT], {name: value}) == ({}, [name])


def specs(*entities: Entity) -> list[dict[str, Any]]:
    """The entities as the intent catalogue gives them to the offline model."""
    from skillwire.engine.prompts import intent_data
    from skillwire.skills.model import Skill

    skill = Skill.model_validate(
        {
            "id": "s",
            "problem": {"statement": "x"},
            "intents": {"supported": [{"id": "i", "entities": [e.model_dump() for e in entities]}]},
        }
    )
    found: list[dict[str, Any]] = intent_data(skill)["intents"][0]["entities"]
    return found


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Pay $750 please", 750),
        ("pay 1,250.50 to the landlord", 1250.5),
        ("pay 750 USD", 750),
        ("pay 20 dollars", 20),
        ("pay 750 EUR", None),  # another currency: not taken, never converted
        ("pay €20 and then $30", 30),
        ("pay $1.005", None),
        ("pay nothing", None),
    ],
)
def test_the_offline_extractor_reads_money(message: str, expected: Any) -> None:
    usd = Entity.model_validate({"name": "amount", "type": "money", "currency": "USD"})
    assert extract_entities(message, specs(usd)).get("amount") == expected


@pytest.mark.parametrize(
    ("message", "day", "stay"),
    [
        ("from 2026-03-01 to 2026-03-05", None, {"start": "2026-03-01", "end": "2026-03-05"}),
        (
            "between 1 March 2026 and March 5, 2026",
            None,
            {"start": "2026-03-01", "end": "2026-03-05"},
        ),
        ("on 14 Mar 2026", "2026-03-14", None),
        (
            "Sept 3rd, 2026 - 2026-09-10, and back on 2026-09-20",
            "2026-09-20",
            {"start": "2026-09-03", "end": "2026-09-10"},
        ),
        ("from 2026-03-05 to 2026-03-01", "2026-03-05", None),  # reversed: no range
        ("on 2026-02-30 or 30 February 2026", None, None),  # no such day
        ("on 03/04/2026", None, None),  # March or April: not guessed
        ("tomorrow", None, None),  # relative to a clock the extractor has not
    ],
)
def test_the_offline_extractor_reads_dates_and_ranges(message: str, day: Any, stay: Any) -> None:
    found = extract_entities(message, specs(DAY, STAY))
    assert (found.get("day"), found.get("stay")) == (day, stay)


def test_the_offline_extractor_reads_lists() -> None:
    message = (
        "Tell bob@x.com, ann.lee+1@mail.example.org and bob@x.com about ORD-12345 and "
        "ORD-22222, not about ORD-1 or notanaddress@ or @x.com"
    )
    found = extract_entities(message, specs(TO, CODES))
    assert found == {
        "to": ["bob@x.com", "ann.lee+1@mail.example.org"],  # each once, in order
        "codes": ["ORD-12345", "ORD-22222"],
    }
    capped = Entity.model_validate(
        {
            "name": "to",
            "type": "list",
            "items": {"type": "string", "format": "email"},
            "maxItems": 2,
        }
    )
    many = " ".join(f"u{i}@x.org" for i in range(50))
    assert extract_entities(many, specs(capped)) == {"to": ["u0@x.org", "u1@x.org"]}
    assert extract_entities("no address here", specs(TO)) == {}


def test_what_the_extractor_finds_the_engine_keeps() -> None:
    """The extractor never hands the engine a value its schema then rejects."""
    message = "Pay $1,250.50 to a@b.co and c@d.org on 2026-03-14 for 2026-04-01 to 2026-04-03"
    found = extract_entities(message, specs(MONEY, DAY, STAY, TO, CODES))
    kept, rejected = valid_entities([INTENT], found)
    assert rejected == [] and kept == found
    assert found == {
        "amount": 1250.5,
        "day": "2026-03-14",
        "stay": {"start": "2026-04-01", "end": "2026-04-03"},
        "to": ["a@b.co", "c@d.org"],
    }


@pytest.mark.parametrize(
    "message",
    [
        "and " * 20_000,
        "1 " * 20_000,
        "a@" * 20_000,
        ("x" * 60 + "@") * 2_000 + "b.co",
        "2026-03-01 to " * 5_000,
        "March " * 20_000,
        json.dumps(["$" + "9" * 40] * 1_000),
    ],
)
def test_hostile_messages_end_without_error(message: str) -> None:
    found = extract_entities(message, specs(MONEY, DAY, STAY, TO, CODES))
    kept, _ = valid_entities([INTENT], found)
    assert set(kept) <= {"amount", "day", "stay", "to", "codes"}


def test_a_currency_is_said_to_be_checked_offline_only(tmp_path: Path) -> None:
    """Declared means enforced, or said not to be: a model's number has no currency."""
    from skillwire.engine.prompts import intent_system
    from skillwire.skills import load_paths

    skill = load(tmp_path, "- {name: amount, type: money, currency: [USD, EUR]}")
    report = load_paths([tmp_path / "domain.yaml"]).report
    (warning,) = [i for r in report.skills for i in r.warnings]
    assert warning.code == "currency-offline-only" and warning.location.line == 9
    assert "amount: money as a number in USD|EUR" in intent_system(skill)
