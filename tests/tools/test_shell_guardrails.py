"""The shell and filesystem guardrails on the rendered argv: each one stops a call that
would otherwise run, and the tricks around them (``..``, symlinks, ``--opt=/path``,
``file://``, options smuggled in a value) are stopped too."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from tests.tools.helpers import base_of, gate, package, shell_tool

from skillwire.policy import ReasonCode

CAT = shell_tool(
    "cat",
    "cat",
    ["--", "{{path}}"],
    {"path": {"type": "string"}},
)
GIT = shell_tool(
    "git",
    "git",
    ["{{action}}", "{{...args}}"],
    {"action": {"type": "string"}, "args": {"type": "array", "items": {"type": "string"}}},
    allowedActions=["log", "status", "push"],
)


def _roots(tmp_path: Path) -> tuple[Path, Path]:
    allowed = tmp_path / "allowed"
    secret = tmp_path / "secret"
    allowed.mkdir()
    secret.mkdir()
    (allowed / "notes.txt").write_text("ok\n")
    (secret / "key.txt").write_text("s3cret\n")
    return allowed, secret


def _cat_gate(tmp_path: Path, **guard: Any) -> Any:
    allowed, _ = _roots(tmp_path)
    skill = package(tmp_path, [CAT], guardrails=guard or None)
    base = base_of(
        tmp_path,
        {"shell": {"allowedPrefixes": ["cat"]}, "filesystem": {"allowedReadRoots": [str(allowed)]}},
    )
    return gate(skill, base)


def test_a_path_inside_the_roots_runs(tmp_path: Path) -> None:
    g = _cat_gate(tmp_path)
    assert g.check("cat", {"path": str(tmp_path / "allowed" / "notes.txt")}).kind == "allow"


@pytest.mark.parametrize(
    "path",
    [
        "{secret}/key.txt",  # plainly outside
        "{allowed}/../secret/key.txt",  # climbs out with ..
        "{allowed}/link/key.txt",  # a symlink inside the root that points outside
        "{allowed}/linkfile",  # a symlinked file
        "/etc/passwd",
        "file://{secret}/key.txt",
        "~/.ssh/id_rsa",
        "../../etc/passwd",  # relative, climbs out of the working folder
        "a/../../x",
        "{allowed}x/key.txt",  # a sibling whose name starts like the root
    ],
)
def test_paths_outside_the_roots_are_refused(tmp_path: Path, path: str) -> None:
    g = _cat_gate(tmp_path)
    allowed, secret = tmp_path / "allowed", tmp_path / "secret"
    (allowed / "link").symlink_to(secret)
    (allowed / "linkfile").symlink_to(secret / "key.txt")
    (tmp_path / "allowedx").mkdir()
    decision = g.check("cat", {"path": path.format(allowed=allowed, secret=secret)})
    assert decision.kind == "block", decision
    assert {r.code for r in decision.reasons} == {ReasonCode.SHELL_NOT_ALLOWED}


@pytest.mark.parametrize(
    "element",
    ["--file={secret}/key.txt", "-o{secret}/x", "@{secret}/key.txt", "HEAD:{secret}/x"],
)
def test_paths_hidden_in_options_are_found(tmp_path: Path, element: str) -> None:
    allowed, secret = _roots(tmp_path)
    skill = package(tmp_path, [GIT])
    base = base_of(
        tmp_path,
        {"shell": {"allowedPrefixes": ["git"]}, "filesystem": {"allowedReadRoots": [str(allowed)]}},
    )
    args = {"action": "log", "args": [element.format(secret=secret)]}
    decision = gate(skill, base).check("git", args)
    assert decision.kind == "block"
    assert "outside the allowed roots" in decision.reasons[0].message
    ok = {"action": "log", "args": [f"--file={allowed}/notes.txt", "https://example.com/x"]}
    assert gate(skill, base).check("git", ok).kind == "allow"


def test_prefixes_are_matched_token_by_token_as_written(tmp_path: Path) -> None:
    skill = package(tmp_path, [GIT])
    base = base_of(tmp_path, {"shell": {"allowedPrefixes": ["git log", "git status"]}})
    g = gate(skill, base)
    assert g.check("git", {"action": "log", "args": ["-n", "3"]}).kind == "allow"
    pushed = g.check("git", {"action": "push"})
    assert pushed.kind == "block"
    assert "allowed shell prefixes (git log, git status)" in pushed.reasons[0].message
    # the skill's own list only narrows the operator's
    narrowed = package(
        tmp_path / "n", [GIT], guardrails={"shell": {"allowedPrefixes": ["git log"]}}
    )
    assert gate(narrowed, base).check("git", {"action": "status"}).kind == "block"


def test_a_program_by_path_needs_its_own_prefix(tmp_path: Path) -> None:
    tool = shell_tool("ls", "/tmp/ls", ["{{...args}}"], {"args": {"type": "array"}})
    skill = package(tmp_path, [tool])
    base = base_of(tmp_path, {"shell": {"allowedPrefixes": ["ls"]}})
    assert gate(skill, base).check("ls", {}).kind == "block"


def test_denied_prefixes_match_the_base_name_too(tmp_path: Path) -> None:
    tool = shell_tool("rm", "/bin/rm", ["{{...args}}"], {"args": {"type": "array"}})
    skill = package(tmp_path, [tool])
    base = base_of(tmp_path, {"shell": {"allowedPrefixes": ["/bin/rm"], "denyPrefixes": ["rm"]}})
    decision = gate(skill, base).check("rm", {"args": ["x"]})
    assert decision.kind == "block"
    assert "denied shell prefix 'rm'" in decision.reasons[0].message


def test_every_fallback_is_checked(tmp_path: Path) -> None:
    tool = shell_tool(
        "lister",
        "exa",
        [],
        commandFallbacks=[{"command": "ls", "fixedArgs": ["-la"]}],
    )
    skill = package(tmp_path, [tool])
    only_exa = base_of(tmp_path, {"shell": {"allowedPrefixes": ["exa"]}})
    assert gate(skill, only_exa).check("lister", {}).kind == "block"
    both = base_of(tmp_path / "..", {"shell": {"allowedPrefixes": ["exa", "ls -la"]}})
    assert gate(skill, both).check("lister", {}).kind == "allow"


def test_deny_operators_and_patterns_see_the_rendered_line(tmp_path: Path) -> None:
    tool = shell_tool(
        "run",
        "python3",
        ["-c", "print(1)", "{{...args}}"],
        {"args": {"type": "array"}},
    )
    skill = package(
        tmp_path,
        [tool],
        guardrails={"shell": {"denyOperators": ["&&"], "denyPatterns": ["rm -rf"]}},
    )
    base = base_of(tmp_path, {"shell": {"allowedPrefixes": ["python3 -c"]}})
    g = gate(skill, base)
    assert g.check("run", {"args": ["a"]}).kind == "allow"
    assert g.check("run", {"args": ["a&&b"]}).kind == "block"
    # the pattern spans two elements: only the joined line shows it
    spanning = g.check("run", {"args": ["rm", "-rf"]})
    assert spanning.kind == "block"
    assert "denied pattern 'rm -rf'" in spanning.reasons[0].message


def test_allowed_actions_and_option_smuggling(tmp_path: Path) -> None:
    skill = package(tmp_path, [GIT, CAT])
    base = base_of(tmp_path, {"shell": {"allowedPrefixes": ["git", "cat"]}})
    g = gate(skill, base)
    assert g.check("git", {"action": "rebase"}).kind == "block"
    assert g.check("git", {"action": ["log"]}).kind == "block"
    smuggled = g.check("git", {"action": "--exec-path=/tmp"})
    assert smuggled.kind == "block"
    smuggled = g.check("cat", {"path": "--version"})
    assert smuggled.kind == "block"  # a value never starts an element with "-"
    assert "starts with '-'" in smuggled.reasons[0].message
    assert g.check("cat", {"path": "a\x00b"}).kind == "block"


def test_require_confirmation_for_asks_for_approval(tmp_path: Path) -> None:
    skill = package(
        tmp_path,
        [GIT],
        guardrails={
            "toolPolicies": {"tools-demo.git": {"requireConfirmationFor": ["push"]}},
            "filesystem": {"requireConfirmationFor": ["status"]},
        },
    )
    base = base_of(tmp_path, {"shell": {"allowedPrefixes": ["git"]}})
    g = gate(skill, base)
    assert g.check("git", {"action": "log"}).kind == "allow"
    for action in ("push", "status"):
        decision = g.check("git", {"action": action})
        assert decision.kind == "need_approval", decision
    assert "needs confirmation" in g.check("git", {"action": "push"}).reasons[0].message


def test_no_roots_means_no_absolute_paths(tmp_path: Path) -> None:
    skill = package(tmp_path, [CAT])
    base = base_of(tmp_path, {"shell": {"allowedPrefixes": ["cat"]}})
    decision = gate(skill, base).check("cat", {"path": os.path.abspath(__file__)})
    assert decision.kind == "block"
    assert "none allowed" in decision.reasons[0].message
    assert gate(skill, base).check("cat", {"path": "local.txt"}).kind == "allow"
