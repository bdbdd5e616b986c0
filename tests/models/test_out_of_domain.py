"""A message unrelated to every intent is out of domain on the offline classifier,
whatever its n-gram score; the skill's ``intents.thresholds.reject`` sets the floor."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import EXAMPLES

from skillwire.engine.prompts import intent_request
from skillwire.models.offline import DEFAULT_THRESHOLD, OfflineModel
from skillwire.models.offline.similarity import NgramIndex
from skillwire.skills import load_skill

REFUND = EXAMPLES / "refund_support" / "domain.yaml"
SPEC = Path(__file__).resolve().parent.parent / "fixtures" / "spec_000_domain.yaml"


def classify(text: str, path: Path = REFUND, threshold: float = DEFAULT_THRESHOLD) -> Any:
    request = intent_request(load_skill(path), text)
    return json.loads(asyncio.run(OfflineModel(threshold).complete(request)).text)


def test_shared_short_ngrams_are_no_relation() -> None:
    """``translate`` and ``track`` share ``tra``: the score is not zero, the relation is."""
    index = NgramIndex([("status", "Track my order"), ("refund", "Refund please")])
    assert index.scores("Translate hello into Spanish")["status"] > 0
    assert index.related("Translate hello into Spanish") == set()
    assert index.related("tracking my parcel") == {"status"}  # a stem of four letters
    assert index.related("I was refunded twice") == {"refund"}


@pytest.mark.parametrize(
    "text",
    [
        "Translate hello into Spanish",
        "What's the capital of Australia?",
        "asdf qwerty zxcv",
        "Tell me a joke",
        "",
        "the and of to",  # function words only
    ],
)
@pytest.mark.parametrize("path", [REFUND, SPEC], ids=["refund", "spec"])
def test_unrelated_messages_are_out_of_domain_even_with_no_floor(text: str, path: Path) -> None:
    got = classify(text, path, threshold=0.0)
    assert got["intent"] is None and got["entities"] == {}


def test_related_messages_still_classify() -> None:
    assert classify("I'd like to get refunded")["intent"] == "intent_refund"
    assert classify("tracking info for my order please")["intent"] == "intent_order_status"
    got = classify("Refund please, order 12345", SPEC)
    assert (got["intent"], got["entities"]) == ("intent_refund", {"order_id": "12345"})


def test_the_skills_reject_threshold_is_the_floor(tmp_path: Path) -> None:
    weak = "Can you check where my shipment is?"  # related, with a low score
    assert classify(weak)["intent"] is None  # below the default floor
    lenient = tmp_path / "domain.yaml"
    lenient.write_text(
        REFUND.read_text().replace(
            "  out_of_domain:", "  thresholds:\n    reject: 0.1\n  out_of_domain:", 1
        )
    )
    assert classify(weak, lenient)["intent"] is not None
    # a lower floor never lets an unrelated message in
    assert classify("Translate hello into Spanish", lenient)["intent"] is None
