"""``argsTemplate``: substitution, spreading, ``{{#if}}`` blocks, and the values refused."""

from __future__ import annotations

from typing import Any

import pytest

from skillwire.core import ShellTemplateError
from skillwire.skills.shell_template import render_args, template_fields, template_problems


@pytest.mark.parametrize(
    ("template", "args", "argv"),
    [
        (["log", "{{ref}}"], {"ref": "main"}, ["log", "main"]),
        (["--since={{date}}"], {"date": "2024-01-01"}, ["--since=2024-01-01"]),
        (["-n", "{{n}}"], {"n": 5}, ["-n", "5"]),
        (["-n", "{{n}}"], {"n": -5}, ["-n", "-5"]),  # a number is not an option
        (["{{flag}}"], {"flag": True}, ["true"]),
        (["a", "{{...rest}}", "z"], {"rest": ["b", "c"]}, ["a", "b", "c", "z"]),
        (["a", "{{...rest}}"], {}, ["a"]),
        (["a", "{{...rest}}"], {"rest": ["--force"]}, ["a", "--force"]),
        (["{{#if v}}--verbose{{/if}}", "x"], {"v": True}, ["--verbose", "x"]),
        (["{{#if v}}--verbose{{/if}}", "x"], {"v": False}, ["x"]),
        (["{{#if v}}--verbose{{/if}}", "x"], {}, ["x"]),
        (["{{#if n}}--max-count={{n}}{{/if}}"], {"n": 0}, ["--max-count=0"]),  # 0 is present
        (["{{#if n}}", "-n", "{{n}}", "{{/if}}", "x"], {"n": 3}, ["-n", "3", "x"]),
        (["{{#if n}}", "-n", "{{n}}", "{{/if}}", "x"], {}, ["x"]),
        (["{{#if a}}", "{{#if b}}", "ab", "{{/if}}", "a", "{{/if}}"], {"a": 1}, ["a"]),
        (["{{#if a}}", "{{#if b}}", "ab", "{{/if}}", "{{/if}}"], {"a": 1, "b": 1}, ["ab"]),
        ([""], {}, [""]),  # an explicit empty argument stays
        (["{{ x }}"], {"x": "{{y}}"}, ["{{y}}"]),  # a value is never a template again
        (["x", "{{#if q}}", "{{...items}}", "{{/if}}"], {"q": 1, "items": ["i"]}, ["x", "i"]),
    ],
)
def test_rendering(template: list[str], args: dict[str, Any], argv: list[str]) -> None:
    assert render_args(template, args) == argv


@pytest.mark.parametrize(
    ("template", "args", "message"),
    [
        (["{{ref}}"], {}, "'ref' is missing"),
        (["{{ref}}"], {"ref": "--upload-pack=/tmp/evil"}, "starts with '-'"),
        (["{{#if x}}{{ref}}{{/if}}"], {"x": 1, "ref": "-rf"}, "starts with '-'"),
        (["{{ref}}"], {"ref": "a\x00b"}, "NUL"),
        (["{{...items}}"], {"items": ["a\x00"]}, "NUL"),
        (["{{ref}}"], {"ref": {"a": 1}}, "not text or a number"),
        (["{{...items}}"], {"items": "a b"}, "not an array"),
        (["{{...items}}"], {"items": [["nested"]]}, "not text or a number"),
        (["x{{...items}}"], {"items": []}, "alone in its element"),
        (["{{#if x}}"], {"x": 1}, "without {{/if}}"),
        (["{{/if}}"], {}, "without {{#if}}"),
        (["{{#if}}"], {}, "malformed"),
        (["{{n}}"], {"n": float("nan")}, ""),
    ],
)
def test_refusals(template: list[str], args: dict[str, Any], message: str) -> None:
    with pytest.raises((ShellTemplateError, ValueError), match=message or None):
        render_args(template, args)


def test_fields_and_problems_for_the_load_report() -> None:
    template = ["{{#if n}}", "-n", "{{n}}", "{{/if}}", "{{...paths}}", "{{other}}"]
    assert template_fields(template) == ["n", "paths", "other"]
    assert template_problems(template, {"n", "paths"}) == [
        "the template reads 'other', which is not an input of the tool"
    ]
    assert template_problems(["{{#if a}}", "x"]) == ["{{#if}} without {{/if}} in the template"]
