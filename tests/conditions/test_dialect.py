"""The scanner and the rewrite of the spoken dialect to plain CEL."""

from __future__ import annotations

import pytest

from skillwire.conditions.dialect import MAX_DEPTH, MAX_TOKENS, rewrite, tokenize
from skillwire.core.errors import ConditionSyntaxError


def kinds(source: str) -> list[tuple[str, str]]:
    return [(token.kind, token.text) for token in tokenize(source)[:-1]]


def expression(source: str) -> str:
    return rewrite(source).expression


def syntax_error(source: str) -> ConditionSyntaxError:
    with pytest.raises(ConditionSyntaxError) as caught:
        rewrite(source)
    return caught.value


# scanner ---------------------------------------------------------------------------


def test_scanner_reads_literals_of_every_kind() -> None:
    assert kinds("12 0x1F 7u 1.5 .5 1e3 2.5E-2 true null") == [
        ("int", "12"),
        ("int", "0x1F"),
        ("uint", "7u"),
        ("float", "1.5"),
        ("float", ".5"),
        ("float", "1e3"),
        ("float", "2.5E-2"),
        ("name", "true"),
        ("name", "null"),
    ]


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        ("'and or not'", "string"),
        ('"contains \\" quote"', "string"),
        ("'''starts with\nends with'''", "string"),
        ('"""it\'s"""', "string"),
        ("r'C:\\temp\\new'", "string"),
        ("R'\\d+'", "string"),
        ("b'bytes'", "bytes"),
        ("br'\\x'", "bytes"),
        ("'\\x41\\u00e9\\U0001F600\\101'", "string"),
    ],
)
def test_scanner_reads_each_string_as_one_token(source: str, kind: str) -> None:
    assert kinds(source) == [(kind, source)]


def test_scanner_records_offsets_and_spacing() -> None:
    tokens = tokenize("a  >=b // and or\n")
    assert [(t.text, t.start, t.end, t.space) for t in tokens] == [
        ("a", 0, 1, False),
        (">=", 3, 5, True),
        ("b", 5, 6, False),
        ("", 17, 17, True),
    ]
    assert tokens[-1].kind == "end"


def test_scanner_treats_any_unicode_space_as_whitespace() -> None:
    assert kinds("a\u00a0==\tb") == [("name", "a"), ("op", "=="), ("name", "b")]


@pytest.mark.parametrize(
    ("source", "column", "hint_part"),
    [
        ("amount >> 500", 8, "`>=`"),
        ("amount << 5", 8, "`<=`"),
        ("a => b", 3, "`>=`"),
        ("a =< b", 3, "`<=`"),
        ("a <> b", 3, "`!=`"),
        ("a === b", 3, "`==`"),
        ("a !== b", 3, "`!=`"),
        ("a & b", 3, "`&&`"),
        ("a | b", 3, "`||`"),
        ("a ** 2", 3, "multiply"),
        ("a == 'open", 6, "'"),
        ("a == '''open", 6, "'''"),
        ("a == 'two\nlines'", 6, "same line"),
        ("p == 'C:\\q'", 9, "raw string"),
        ("a == ‘x’", 6, "straight quotes"),
        ("$amount > 5", 1, "bare"),
        ("a > 5 # note", 7, "//"),
        ("a; b", 2, "`and`"),
        ("prénom == 'x'", 3, "ASCII"),
        ("total € > 5", 7, "remove"),
    ],
)
def test_scanner_names_the_mistake_and_the_fix(source: str, column: int, hint_part: str) -> None:
    error = syntax_error(source)
    assert error.column == column
    assert hint_part in error.hint


def test_scanner_reads_only_ascii_digits_as_numbers() -> None:
    error = syntax_error("amount > \u0663")
    assert error.column == 10
    assert "unexpected character" in error.message


def test_scanner_accepts_a_misspelling_look_alike_that_is_valid() -> None:
    assert kinds("a&&b||c") == [
        ("name", "a"),
        ("op", "&&"),
        ("name", "b"),
        ("op", "||"),
        ("name", "c"),
    ]


# rewrite ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "cel"),
    [
        (
            "file_path contains '.env' or file_path contains 'secret'",
            "(type(file_path) == type(\"\") ? file_path.contains('.env') : '.env' in file_path)"
            " || (type(file_path) == type(\"\") ? file_path.contains('secret')"
            " : 'secret' in file_path)",
        ),
        ("file_path ends with '.lock'", "file_path.endsWith('.lock')"),
        ("name starts with 'tmp_'", "name.startsWith('tmp_')"),
        (
            "action == 'delete' and branch_name == 'main'",
            "action == 'delete' && branch_name == 'main'",
        ),
        ("force == true", "force == true"),
        ('amount > 500 && currency == "USD"', 'amount > 500 && currency == "USD"'),
        ("a = 1", "a == 1"),
        ("a or b and c", "a || b && c"),
        ("role in ['admin', 'owner']", "role in ['admin', 'owner']"),
    ],
)
def test_rewrite_of_real_spellings(source: str, cel: str) -> None:
    assert expression(source) == cel


@pytest.mark.parametrize(
    ("source", "cel"),
    [
        ("always", "true"),
        ("  Always\n", "true"),
        ("NEVER", "false"),
        ("never ", "false"),
    ],
)
def test_whole_conditions_always_and_never(source: str, cel: str) -> None:
    rewritten = rewrite(source)
    assert rewritten.expression == cel
    assert rewritten.names == {}


@pytest.mark.parametrize(
    ("source", "cel"),
    [
        ("not force", "!force"),
        ("not a == b and c", "!(a == b) && c"),
        ("not (a or b)", "!(a || b)"),
        ("not not a", "!(!a)"),
        ("a and not b or c", "a && !b || c"),
        ("x not in [1, 2]", "!(x in [1, 2])"),
        ("name not starts with 'tmp'", "!(name.startsWith('tmp'))"),
        ("name not ends with '.md'", "!(name.endsWith('.md'))"),
        (
            "tags not contains 'x'",
            "!((type(tags) == type(\"\") ? tags.contains('x') : 'x' in tags))",
        ),
        ("!a == b", "!a == b"),
    ],
)
def test_not_negates_the_whole_comparison_that_follows(source: str, cel: str) -> None:
    assert expression(source) == cel


@pytest.mark.parametrize(
    ("source", "cel"),
    [
        ("args.path ends with '.lock'", "args.path.endsWith('.lock')"),
        ("history[0].tool starts with 'git_'", "history[0].tool.startsWith('git_')"),
        ("(a + b) ends with c", "(a + b).endsWith(c)"),
        ("a + b ends with c", "(a + b).endsWith(c)"),
        ("first(xs) ends with 'x'", "first(xs).endsWith('x')"),
        ("name ends with prefix + '_tmp'", "name.endsWith(prefix + '_tmp')"),
        ("a ends with b == true", "a.endsWith(b) == true"),
    ],
)
def test_spoken_relations_take_whole_operands(source: str, cel: str) -> None:
    assert expression(source) == cel


@pytest.mark.parametrize(
    "source",
    [
        "note == 'and or not contains starts with ends with always'",
        "x.contains('and')",
        'msg == "it\'s = fine"',
        "r'a and b' == x",
    ],
)
def test_words_inside_strings_and_method_names_are_never_rewritten(source: str) -> None:
    assert expression(source) == source


def test_dialect_words_in_operand_position_are_plain_names() -> None:
    rewritten = rewrite("contains == 'x' and ends == 1")
    assert rewritten.expression == "contains == 'x' && ends == 1"
    assert set(rewritten.names) == {"contains", "ends"}


def test_numbers_stay_as_written_when_nothing_is_computed() -> None:
    rewritten = rewrite("amount > 500 && history[0].ok")
    assert rewritten.expression == "amount > 500 && history[0].ok"
    assert rewritten.arithmetic is False


@pytest.mark.parametrize(
    ("source", "cel"),
    [
        ("amount * 2 > order_total", "amount * 2.0 > order_total"),
        ("history[0].n + 1 > 0x10", "history[0].n + 1.0 > 16.0"),
        ("int(a) % 2 == 0", "int(a) % 2 == 0.0"),
        ("{1: 'x'}[k] + 'y' == z", "{1: 'x'}[k] + 'y' == z"),
        ("a - 9007199254740993 > 0", "a - 9007199254740993 > 0.0"),
        ("xs[size(xs) - 1] * 2 > 3", "xs[size(xs) - 1] * 2.0 > 3.0"),
        ("a + 1u > 2.5", "a + 1u > 2.5"),
    ],
)
def test_whole_number_literals_become_doubles_when_the_expression_computes(
    source: str, cel: str
) -> None:
    rewritten = rewrite(source)
    assert rewritten.expression == cel
    assert rewritten.arithmetic is True


def test_names_calls_and_bound_variables() -> None:
    rewritten = rewrite("items.exists(i, i.price > limit) and size(items) > 0 and x.y.z")
    assert rewritten.names == {"items": 0, "limit": 26, "x": 57}
    assert rewritten.calls == {"exists": 6, "size": 37}
    assert rewritten.bound == frozenset({"i"})


def test_a_name_bound_in_one_place_is_still_free_elsewhere() -> None:
    rewritten = rewrite("x > 1 && xs.all(x, x > 0)")
    assert set(rewritten.names) == {"x", "xs"}


def test_offsets_map_back_to_the_authors_text() -> None:
    rewritten = rewrite("a and bb == 12")
    cel = rewritten.expression
    assert cel == "a && bb == 12"
    assert rewritten.original_offset(cel.index("bb")) == 6
    assert rewritten.original_offset(cel.index("12") + 1) == 13
    assert rewritten.original_offset(cel.index("&&") + 1) == 2
    assert rewritten.original_offset(len(cel)) == 14


def test_offsets_inside_a_rewritten_relation_point_at_its_word() -> None:
    rewritten = rewrite("p ends with 'x'")
    assert rewritten.original_offset(rewritten.expression.index(".endsWith")) == 2


@pytest.mark.parametrize(
    ("source", "column", "message_part", "hint_part"),
    [
        (" > ", 2, "operand is missing before `>`", "both sides"),
        ("amount >", 9, "operand is missing after `>`", "both sides"),
        ("and a", 1, "missing before `and`", ""),
        ("(a", 1, "`(` is not closed", "`)`"),
        ("[1, 2", 1, "`[` is not closed", "`]`"),
        ("a)", 2, "no matching", ""),
        ("a b", 3, "expected an operator before `b`", "`and`"),
        ("a adn b", 3, "before `adn`", "did you mean `and`?"),
        ("a AND b", 3, "before `AND`", "`and`"),
        ("status is 'open'", 8, "before `is`", "`==`"),
        ("x starts 'a'", 3, "`starts` must be followed by `with`", "starts with"),
        ("a not b", 3, "`not` here", "not amount > 500"),
        ("not", 1, "`not` needs", ""),
        ("a ? b", 3, "`:`", "?"),
        ("if == 1", 1, "reserved", "args.if"),
        ("a.", 3, "name must follow `.`", ""),
        ("f(a,", 5, "missing after `,`", "finish"),
        ("a !b", 3, "`!` cannot follow", "`!=`"),
        ("// only a comment", 1, "empty", ""),
    ],
)
def test_syntax_errors_point_at_the_authors_column(
    source: str, column: int, message_part: str, hint_part: str
) -> None:
    error = syntax_error(source)
    assert message_part in error.message
    assert error.column == column
    assert hint_part in error.hint


@pytest.mark.parametrize("source", ["", "   ", "\n\t"])
def test_empty_conditions_are_errors(source: str) -> None:
    error = syntax_error(source)
    assert "empty" in error.message
    assert error.hint


def test_nesting_and_length_are_bounded() -> None:
    deep = "(" * (MAX_DEPTH + 1) + "a" + ")" * (MAX_DEPTH + 1)
    assert "nested too deeply" in syntax_error(deep).message
    long = " + ".join(["1"] * MAX_TOKENS) + " > 0"
    assert "too long" in syntax_error(long).message
    assert rewrite("(" * 10 + "a" + ")" * 10).expression == "(" * 10 + "a" + ")" * 10
