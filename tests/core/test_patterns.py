"""The skill pattern engine: ECMA-262 anchoring, RE2 syntax, linear time, clear refusals."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillwire.core.patterns import (
    MAX_LENGTH,
    Pattern,
    PatternError,
    cache_info,
    compile_pattern,
    schema_pattern_problem,
    strip_anchors,
)


def found(pattern: str, value: str) -> bool:
    return compile_pattern(pattern).search(value) is not None


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("^ORD-[0-9]{5}$", "ORD-12345", True),
        ("^ORD-[0-9]{5}$", "ORD-12345\n", False),  # `$` is the end of the value
        ("^ORD-[0-9]{5}$", "x\nORD-12345", False),  # `^` is its start, not a line's
        ("[0-9]+", "a1", True),  # searched, as JSON Schema's `pattern` is
        ("(?m)^b$", "a\nb\nc", True),  # multi-line only when the pattern asks
        ("a$", "a\n", False),
        ("a\\z", "a", True),
        ("[$]", "$", True),
        ("\\$", "cost $", True),
        ("^[$^]+$", "$^", True),
        ("^\\d+$", "123", True),
        ("^\\d+$", "١٢٣", False),  # ASCII digits, as ECMA-262 reads `\d`
        ("^\\w$", "é", False),
        ("^\\pL$", "é", True),
        ("^.$", "😀", True),  # one character, not two
        ("^\\u00e9$", "é", True),
        ("^\\uD83D\\uDE00$", "😀", True),  # a surrogate pair written as two escapes
        ("^[\\u0041-\\u005A]+$", "ABC", True),
        ("[]a]", "]", True),
        ("[[:digit:]]", "5", True),
        ("\\Qa.b\\E", "a.b", True),
        ("\\Qa.b\\E", "axb", False),
        ("(?i)ord", "ORD", True),
        ("^(a+)+$", "a" * 40 + "!", False),  # linear: answers at once
        ("(x+x+)+y", "x" * 10_000, False),
    ],
)
def test_what_a_pattern_matches(pattern: str, value: str, expected: bool) -> None:
    assert found(pattern, value) is expected


@pytest.mark.parametrize(
    ("pattern", "reason", "offset"),
    [
        ("(?<=#)[0-9]+", "look-behind", 0),
        ("a(?<!b)", "look-behind", 1),
        ("a(?=b)", "look-ahead", 1),
        ("a(?!b)", "look-ahead", 1),
        ("(a)\\1", "backreference", 3),
        ("(?<n>a)\\k<n>", "backreference", 7),
        ("(?P<n>a)(?P=n)", "backreference", 8),
        ("\\C", "one byte", 0),
        ("a\ud800", "lone surrogate", 1),
        ("\\ud800", "surrogate pair", 0),
        ("\\u12", "four hexadecimal", 0),
        ("[", "missing ]", None),
        ("a{1001}", "1000", 1),
        ("a{99999999999}", "1000", 1),  # RE2 alone would read it as text
        ("((a{100}){100}){100}", "1000", None),
        ("a\\Z", "\\Z", None),
    ],
)
def test_what_the_engine_refuses_and_why(pattern: str, reason: str, offset: int | None) -> None:
    with pytest.raises(PatternError) as caught:
        compile_pattern(pattern)
    assert reason in caught.value.reason
    assert caught.value.offset == offset
    assert caught.value.source == pattern
    assert isinstance(caught.value, ValueError)


def test_look_around_inside_a_class_is_just_characters() -> None:
    assert found("^[(?<=]+$", "(?<=")
    with pytest.raises(PatternError, match="not a valid"):  # RE2's word, not a backreference
        compile_pattern("[\\1]")


def test_a_value_with_a_lone_surrogate() -> None:
    order = compile_pattern("^ORD-[0-9]{5}")
    assert not order.accepts("ORD-12345\ud800")  # not text: never valid
    assert order.search("ORD-12345\ud800") == (0, 9)  # but searched without a crash
    assert compile_pattern("rm -rf").search("\udc00rm -rf /") == (1, 7)
    assert not compile_pattern("^[a-z]*$").accepts("ab\udfff")
    assert not compile_pattern(".").accepts("\ud800")


def test_spans_count_characters() -> None:
    pattern = compile_pattern("(b+)(c)?")
    assert pattern.search("éé😀bbb") == (3, 6)
    assert pattern.search("éé😀bbb", group=1) == (3, 6)
    assert pattern.search("éé😀bbb", group=2) is None
    assert pattern.search("éé😀bbb", group=9) is None
    assert pattern.search("bébb", 1) == (2, 4)
    assert pattern.search("b", 5) is None


def test_compiled_once_and_shared() -> None:
    first = compile_pattern("^shared-[0-9]+$")
    assert compile_pattern("^shared-[0-9]+$") is first
    assert isinstance(first, Pattern) and first.source == "^shared-[0-9]+$"
    assert compile_pattern("^\\u00e9$").expression == "^\\x{E9}$"


@pytest.mark.parametrize(
    ("pattern", "stripped"),
    [
        ("^ORD-[0-9]{5}$", "ORD-[0-9]{5}"),
        ("^a$|^b$", "a|b"),
        ("\\Aa\\z", "a"),
        ("^\\$[$^]$", "\\$[$^]"),
        ("^\\u00e9$", "\\x{E9}"),
    ],
)
def test_anchors_stripped_for_finding_a_value_in_text(pattern: str, stripped: str) -> None:
    assert strip_anchors(pattern) == stripped


ANCHORED = st.sampled_from(
    ["[0-9]{1,5}", "[A-Z]+", ".*", ".+", "\\d*", "\\w+", "[a-z0-9_-]*", "(?:ab|cd)+", "\\S*"]
)


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(ANCHORED, min_size=1, max_size=3),
    alternative=st.booleans(),
    value=st.text(max_size=12),
    ending=st.sampled_from(["\n", "\r\n", "\n\n"]),
)
def test_no_value_with_a_trailing_newline_passes_an_anchored_pattern(
    parts: list[str], alternative: bool, value: str, ending: str
) -> None:
    body = "|".join(parts) if alternative else "".join(parts)
    pattern = compile_pattern(f"^(?:{body})$")
    assert not pattern.accepts(value + ending)
    if pattern.accepts(value):
        assert pattern.search(value) == (0, len(value))


def test_a_refusal_is_remembered_and_raised_afresh() -> None:
    with pytest.raises(PatternError):
        compile_pattern("remembered(?<=x)")
    misses = cache_info().misses
    for _ in range(3):
        with pytest.raises(PatternError) as caught:
            compile_pattern("remembered(?<=x)")
        assert caught.value.reason.startswith("a look-behind")
    assert cache_info().misses == misses


def test_a_pattern_too_long_to_compile_quickly_is_refused() -> None:
    compile_pattern("a" * MAX_LENGTH)
    with pytest.raises(PatternError, match="at most 4096"):
        compile_pattern("a" * (MAX_LENGTH + 1))
    with pytest.raises(PatternError, match="too large"):
        compile_pattern("\\pL{1000}")


def test_a_refusal_survives_pickling() -> None:
    import pickle

    with pytest.raises(PatternError) as caught:
        compile_pattern("(?<=x)y")
    again = pickle.loads(pickle.dumps(caught.value))
    assert (again.source, again.reason, again.offset) == ("(?<=x)y", caught.value.reason, 0)


def test_a_schema_shared_many_times_over_is_walked_once() -> None:
    """YAML aliases can share one part thousands of times over (a billion laughs)."""
    node: dict[str, object] = {"type": "string", "pattern": "^ok$"}
    for _ in range(60):
        node = {"allOf": [node, node], "properties": {"a": node, "b": node}}
    assert schema_pattern_problem(node) is None
    cyclic: dict[str, object] = {"type": "object"}
    cyclic["properties"] = {"self": cyclic}
    assert schema_pattern_problem(cyclic) is None


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ({"properties": {"a": {"pattern": "(?=x)"}}}, ("properties", "a", "pattern")),
        ({"patternProperties": {"(?<=x)": {}}}, ("patternProperties", "(?<=x)")),
        ({"items": {"$schema": "http://json-schema.org/draft-07/schema#"}}, ("items", "$schema")),
        (
            {"$defs": {"p": {"patternProperties": {"a": {}}}}, "unevaluatedProperties": False},
            ("unevaluatedProperties",),
        ),
    ],
)
def test_where_a_schema_pattern_would_escape_the_engine(
    schema: dict[str, object], path: tuple[str, ...]
) -> None:
    found = schema_pattern_problem(schema)
    assert found is not None and found[1] == path, found


def test_patterns_in_data_are_not_patterns() -> None:
    schema = {"enum": [{"pattern": "(?<=x)"}], "default": {"pattern": "("}, "examples": ["("]}
    assert schema_pattern_problem(schema) is None
    assert (
        schema_pattern_problem({"$schema": "https://json-schema.org/draft/2020-12/schema"}) is None
    )


@settings(max_examples=300)
@given(
    source=st.sampled_from(["^ORD-[0-9]{5}$", "[0-9]+", "^a|b$", "x*", "^$", "é", "^[^a]$"]),
    value=st.text(max_size=12),
)
def test_accepts_is_a_search_in_utf8_text(source: str, value: str) -> None:
    """``accepts`` (its ASCII path included) says yes exactly when the value is text
    UTF-8 can hold and ``search`` finds the pattern in it."""
    pattern = compile_pattern(source)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        assert not pattern.accepts(value)
    else:
        assert pattern.accepts(value) is (pattern.search(value) is not None)
