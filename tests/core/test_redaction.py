"""``redact``: each shape of secret goes, ordinary error text stays, huge text stays cheap."""

from __future__ import annotations

import pickle
import time

import pytest

from skillwire.core.errors import ModelError, ModelUnavailableError
from skillwire.core.redaction import MIN_SECRET_LENGTH, REDACTED, redact, url_credentials

HEX = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1MSJ9.c2lnbmF0dXJlLXNlY3JldA"


@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ("connect to http://user:s3cret@127.0.0.1:9/v1/ failed", "s3cret", "127.0.0.1:9/v1/"),
        ("http://user:s3cret@host/v1", "user", "http://"),
        ("proxy 'https://me:p@ss:w0rd@proxy.local:8080' refused", "p@ss:w0rd", "proxy.local"),
        ("https://sk-live-0123456789@gateway.example/v1", "sk-live", "gateway.example"),
        ("GET /v1/models?key=AIzaSyD4r7Qx1Lm0Pz9Kb3Vn8Hc2Wj6Ty5Ue4Io", "AIzaSy", "?key="),
        ("/v1/chat?model=m&api_key=abc123&x=1", "abc123", "&x=1"),
        ("<a href='/cb?access_token=tok-123;state=9'>", "tok-123", "state=9"),
        ("/hook?sig=deadbeef&user=u", "deadbeef", "user=u"),
        ("Incorrect API key provided: sk-proj-Zq3xV9mB2nL7kR4tY8wE1aS6dF.", "Zq3xV9", "provided"),
        ("key sk-ant-api03-Xy7Pq2Lm9Nb4Vc8Zx1As6Df3-AbCdEf denied", "Xy7Pq2", "denied"),
        ("sk-ant-admin01-Xy7Pq2Lm9Nb4Vc8Zx1As6Df3", "Xy7Pq2", ""),
        ("Authorization: Bearer abcdefghijklmnop1234 was refused", "abcdefghijklmnop", "Bearer"),
        ("bearer opaque-token-value", "opaque-token", "bearer"),
        ("Authorization: Basic dXNlcjpzM2NyZXQ=", "dXNlcjpzM2NyZXQ", "Basic"),
        (f"token {JWT} expired", "eyJzdWIiOiJ1MSJ9", "expired"),
        (f'{{"api_token": "{HEX}"}}', HEX, '"api_token": "'),
        (f"x-api-key: {HEX}\n", HEX, "x-api-key: "),
        (f"password='{HEX}'", HEX, "password='"),
        (f"client_secret={HEX[:20]}", HEX[:20], "client_secret="),
        ("AIzaSyD4r7Qx1Lm0Pz9Kb3Vn8Hc2Wj6Ty5Ue4Io is invalid", "AIzaSy", "is invalid"),
        ("ghp_0123456789abcdefghijABCDEFGHIJ leaked", "ghp_0123", "leaked"),
        ("hf_0123456789abcdefghijABCDEFGHIJ", "hf_0123", ""),
        ("xoxb-1234567890-abcdefghij", "xoxb-12", ""),
        ("gsk_0123456789abcdefghijABCDEFGHIJ", "gsk_0123", ""),
        ("xai-0123456789abcdefghijABCDEFGHIJ", "xai-0123", ""),
        ("id AKIAIOSFODNN7EXAMPLE denied", "AKIAIOSFODNN7EXAMPLE", "denied"),
    ],
)
def test_each_shape_is_redacted(text: str, secret: str, kept: str) -> None:
    out = redact(text)
    assert secret not in out
    assert REDACTED in out
    assert kept in out


@pytest.mark.parametrize(
    "text",
    [
        "openai:gpt-4o-mini: unknown model 'gpt-4o-mini-2024-07-18' (HTTP 404)",
        "model-call budget of 30 used up; max_tokens: 4096 is too large",
        "KeyError: 'order_id' in a task-force risk-assessment (scikit-learn, sk-learn)",
        "timed out after 60s; could not connect to http://127.0.0.1:11434/v1/",
        "https://api.example.com/v1/models?limit=20&order=desc",
        "the token budget is spent; the key is missing; Basic realm",
        "mailto user@example.com, see https://docs.example.com/@scope/pkg",
        "",
    ],
)
def test_ordinary_error_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_named_secrets_go_exactly_the_longest_first() -> None:
    key = "local-vllm-key"
    text = f"unknown key {key}; again: {key}!; and {key}-suffix"
    out = redact(text, [key, None, "", key + "-suffix"])
    assert key not in out and out.count(REDACTED) == 3
    assert redact("a key 1234", ["12"]) == "a key 1234"
    assert len("abcd") == MIN_SECRET_LENGTH
    assert redact("pw abcd!", ["abcd"]) == f"pw {REDACTED}!"


def test_redact_is_idempotent_and_takes_any_text() -> None:
    text = f"http://u:p@h/?token=x \ud800 Bearer {HEX} sk-proj-0123456789abcdef\n"
    once = redact(text, ["p@h"])
    assert redact(once, ["p@h"]) == once
    assert "\ud800" in once and once.endswith("\n")


@pytest.mark.parametrize(
    ("url", "found"),
    [
        ("http://user:s3cret@127.0.0.1:9/v1", ("s3cret",)),
        ("https://KEY123456@gateway/v1", ("KEY123456",)),
        ("http://u:p%40ss@host/", ("p%40ss", "p@ss")),
        ("http://u:pw@[::1/", ("pw",)),
        ("http://127.0.0.1:11434/v1", ()),
        (None, ()),
        ("", ()),
    ],
)
def test_url_credentials(url: str | None, found: tuple[str, ...]) -> None:
    assert url_credentials(url) == found


@pytest.mark.parametrize(
    "unit",
    ["a", "a-", "a://", "&a", "key ", "key=", "sk-", "bearer ", "a:", " ", "eyJ", "?key", "a@"],
)
def test_huge_hostile_text_costs_linear_time(unit: str) -> None:
    text = unit * (200_000 // len(unit))
    started = time.perf_counter()
    redact(f"http://{text}", ["secret-value"])
    assert time.perf_counter() - started < 3.0  # about 0.2 s here; quadratic is minutes


def test_a_model_error_is_redacted_when_it_is_made() -> None:
    error = ModelUnavailableError(
        "could not connect to http://u:s3cret@h/v1: HTTP 503: key local-key-1",
        secrets=["local-key-1"],
    )
    assert "s3cret" not in str(error) and "local-key-1" not in str(error)
    assert error.args == (str(error),)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is ModelUnavailableError and str(copy) == str(error)
    assert str(ModelError()) == ""


def test_a_subclass_that_skips_the_redacting_init_is_still_redacted_when_shown() -> None:
    class VendorError(ModelError):
        def __init__(self, url: str) -> None:
            Exception.__init__(self, f"cannot reach {url}")

    assert "s3cret" not in str(VendorError("http://u:s3cret@h/v1"))
