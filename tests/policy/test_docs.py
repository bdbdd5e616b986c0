"""docs/gate.md: its Python runs as written; the package exports what the docs use."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.conftest import ROOT

import skillwire.policy

DOC = ROOT / "docs" / "gate.md"


def test_the_examples_in_docs_gate_md_run(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks
    namespace: dict[str, object] = {"__name__": "docs_gate"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)


def test_every_reason_code_is_documented() -> None:
    text = DOC.read_text()
    missing = [c.value for c in skillwire.policy.ReasonCode if f"`{c.value}`" not in text]
    assert missing == []


def test_the_public_api_is_exported() -> None:
    assert sorted(skillwire.policy.__all__) == [
        "AccessPolicy",
        "Allow",
        "ApprovalGrant",
        "BasePolicy",
        "Block",
        "CompiledPolicy",
        "CompiledRule",
        "Decision",
        "Gate",
        "GateInputError",
        "NeedApproval",
        "NeedInput",
        "PreToolGate",
        "Reason",
        "ReasonCode",
        "RuleKind",
        "SubGoal",
        "ToolRun",
        "apply_plan",
        "compile_policy",
        "load_base_policy",
        "schema_validator",
        "workflows_to_subgoals",
    ]
    for name in skillwire.policy.__all__:
        assert getattr(skillwire.policy, name) is not None


def test_the_readme_gate_snippet_prints_what_it_says(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Using the gate on its own", 1)[1]
    (block,) = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], flags=re.S)
    promised = re.search(r"#\s*(\S+ \S+)\s*$", block.strip()).group(1)  # type: ignore[union-attr]
    assert promised == "need_approval APPROVAL_REQUIRED"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        exec(compile(block, "README.md", "exec"), {"__name__": "readme"})
    assert capsys.readouterr().out.strip() == promised
