"""``resume --input k=v`` and ``run --context k=v`` are typed by the field's schema: a
string field keeps ``12345``; a value that does not fit is exit 2 naming the field and
what it expects, and the job is left as it was (issue 17, item 1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import call, final, gate, intent, polish, skill_from
from tests.test_cli import cli, ok, user_error

from skillwire.cli_values import Pair, context_schemas, split_pairs, typed_value
from skillwire.core.errors import UsageError

SHOP = """
    id: shop
    name: Shop
    problem: {statement: "Place orders"}
    role: {name: "Clerk"}
    intents:
      supported:
        - id: intent_order
          description: "Place an order"
          examples: ["place an order"]
          entities:
            - {name: weight, type: number}
    tools:
      - name: placeOrder
        description: "Place an order"
        inputs:
          - {name: order_id, type: string, required: true}
          - {name: quantity, type: integer, required: true}
          - {name: gift, type: boolean, required: true}
          - {name: speed, type: string, enum: [slow, fast], required: true}
          - {name: tags, type: array, required: true}
          - {name: address, type: object}
        idempotent: true
        executor:
          type: simulate
          result: {placed: true}
    required_inputs:
      - {path: customer.age, type: integer, prompt: "How old are you?"}
"""


@pytest.fixture
def shop(tmp_path: Path) -> dict[str, Path]:
    """The shop skill, a script that calls ``placeOrder`` with no argument (the job
    pauses for every required one) and then ends, and a job database."""
    skill_from(tmp_path / "shop", SHOP)
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                intent("intent_order"),
                call("placeOrder", "c1", address={"city": "Oslo"}),
                final("Placed.", {}),
                gate(),
                polish("Placed."),
            ]
        )
    )
    return {"skill": tmp_path / "shop" / "domain.yaml", "script": script, "db": tmp_path / "j.db"}


def run(shop: dict[str, Path], *context: str) -> Any:
    args = [a for pair in context for a in ("--context", pair)]
    return cli(
        "run",
        shop["skill"],
        "-m",
        "place an order",
        *args,
        "--model",
        f"scripted:{shop['script']}",
        "--db",
        shop["db"],
        "--json",
    )


def resume(shop: dict[str, Path], job_id: str, *inputs: str) -> Any:
    args = [a for pair in inputs for a in ("--input", pair)]
    return cli(
        "resume",
        job_id,
        *args,
        "--model",
        f"scripted:{shop['script']}",
        "--db",
        shop["db"],
        "--json",
    )


def paused(shop: dict[str, Path]) -> dict[str, Any]:
    job: dict[str, Any] = ok(run(shop, "customer.age=40"))
    assert job["status"] == "paused", job
    assert set(job["waiting"]["requested_fields"]) >= {"order_id", "quantity", "gift", "speed"}
    return job


GOOD = [
    "order_id=12345",
    "quantity=3",
    "gift=TRUE",
    "speed=fast",
    'tags=["a", "b"]',
    "customer.age=40",
]


def test_each_value_is_typed_by_its_field(shop: dict[str, Path]) -> None:
    job = paused(shop)
    done = ok(resume(shop, job["id"], *GOOD))
    given = [e for e in done["events"] if e["kind"] == "input_received"]
    inputs = given[0]["data"]["inputs"]
    assert inputs["order_id"] == "12345"  # text: the "not of type 'string'"
    assert inputs["quantity"] == 3 and inputs["gift"] is True
    assert inputs["speed"] == "fast" and inputs["tags"] == ["a", "b"]
    assert done["status"] == "completed", done


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ("quantity=three", "--input quantity=three: expected an integer"),
        ("quantity=2.5", "expected an integer"),
        ("quantity=1e999", "expected an integer"),
        ("quantity=NaN", "expected an integer"),
        ("quantity=", "expected an integer"),
        ("gift=yes", "--input gift=yes: expected true or false"),
        ("speed=medium", '--input speed=medium: expected one of "slow", "fast"'),
        ("speed=Fast", "expected one of"),
        ("tags=a,b", "--input tags=a,b: expected a JSON array"),
        ('tags={"a": 1}', "expected a JSON array"),
        ("order_id:=12345", "--input order_id:=12345: expected text"),
        ("order_id:=nope", "--input order_id:=nope: not JSON"),
    ],
)
def test_a_value_that_does_not_fit_is_a_usage_error(
    shop: dict[str, Path], bad: str, expected: str
) -> None:
    job = paused(shop)
    others = [g for g in GOOD if g.partition("=")[0] != bad.partition("=")[0].rstrip(":")]
    user_error(resume(shop, job["id"], *others, bad), expected)
    shown = ok(cli("show", job["id"], "--db", shop["db"], "--json"))
    assert shown["status"] == "paused" and shown["version"] == job["version"]  # untouched


def test_context_is_typed_by_the_skills_fields_else_text(shop: dict[str, Path]) -> None:
    job = ok(
        run(
            shop,
            "order_id=12345",
            "quantity=3",
            "weight=2.5",
            "customer.age=40",
            "age=41",
            "tier=7",
            "user_id=12345",
            "limit:=5",
            'roles=["admin"]',
            "note=[prod, staging]",
        )
    )
    created = next(e for e in job["events"] if e["kind"] == "created")
    assert created["data"]["context"] == {
        "order_id": "12345",
        "quantity": 3,
        "weight": 2.5,
        "customer.age": 40,
        "age": 41,  # required_inputs customer.age, by its last part
        "tier": "7",  # no field of the skill types it: text
        "user_id": "12345",  # the owner: text
        "limit": 5,
        "roles": ["admin"],  # a JSON array
        "note": "[prod, staging]",  # not JSON: text
    }
    assert job["owner"] == "12345"


def test_a_context_value_that_does_not_fit_is_a_usage_error(shop: dict[str, Path]) -> None:
    user_error(run(shop, "quantity=many"), "--context quantity=many: expected an integer")
    user_error(run(shop, "user_id:=5"), "--context user_id:=5: expected text")
    user_error(run(shop, "quantity"), "--context expects key=value")
    assert not shop["db"].exists() or ok(cli("jobs", "--db", shop["db"], "--json")) == []


def test_split_pairs_reads_both_forms() -> None:
    assert split_pairs(["a=1", "b:=2", "c==", "d:=:="], "--input") == [
        Pair("a", "1"),
        Pair("b", "2", as_json=True),
        Pair("c", "="),
        Pair("d", ":=", as_json=True),
    ]
    for bad in ("a", "=1", ":=1"):
        with pytest.raises(UsageError, match="expects key=value"):
            split_pairs([bad], "--input")


def test_typed_value_edges() -> None:
    def typed(raw: str, *schemas: dict[str, Any]) -> Any:
        return typed_value(Pair("f", raw), schemas, "--input")

    assert typed("12345", {"type": "string"}) == "12345"
    assert typed("12345", {"type": ["integer", "null"]}) == 12345
    assert typed("null", {"type": ["integer", "null"]}) is None
    three = typed("3.0", {"type": "integer"})
    assert three == 3 and isinstance(three, int)
    assert typed("3", {"type": "number"}) == 3
    assert typed("true", {"type": "number"}, {"type": "boolean"}) is True  # either schema
    assert typed("1", {"enum": [1, True]}) == 1 and typed("true", {"enum": [1, True]}) is True
    assert typed("12345", {"description": "untyped"}) == "12345"
    assert typed('{"a": 1}', {}) == {"a": 1}
    assert typed("true", {}) == "true"  # untyped: JSON only for an object or array
    with pytest.raises(UsageError, match="expected a number or true or false"):
        typed("x", {"type": "number"}, {"type": "boolean"})


def test_context_schemas_name_every_source(tmp_path: Path) -> None:
    skill = skill_from(tmp_path / "shop", SHOP)
    schemas = context_schemas(skill)
    assert schemas["user_id"] == [{"type": "string"}]
    assert schemas["quantity"][0]["type"] == "integer"
    assert schemas["weight"] == [{"type": "number"}]
    assert schemas["customer.age"] == schemas["age"] == [{"type": "integer"}]
