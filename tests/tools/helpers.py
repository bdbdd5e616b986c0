"""Packages with real tools, and operator base policies, written into a test's folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from skillwire.policy import BasePolicy, Gate, load_base_policy
from skillwire.skills import Skill, Tool, load_skill

PY = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
"""A python the tools' PATH finds (never the test's virtualenv)."""

SKILL_ID = "tools-demo"


def write_base(tmp_path: Path, data: dict[str, Any], name: str = "base.json") -> Path:
    """An operator base policy file; returns its path."""
    path = tmp_path / name
    path.write_text(json.dumps({"schemaVersion": "skillwire-base-policy/v1", **data}, indent=2))
    return path


def base_of(tmp_path: Path, data: dict[str, Any]) -> BasePolicy:
    """An operator base policy, loaded."""
    return load_base_policy(write_base(tmp_path, data))


def shell_tool(
    name: str,
    command: str,
    template: list[str],
    properties: dict[str, Any] | None = None,
    **executor: Any,
) -> dict[str, Any]:
    """A ``shell_command`` tool entry of ``tools.json``."""
    return {
        "name": name,
        "description": f"runs {command}",
        "inputSchema": {"type": "object", "properties": properties or {}},
        "executor": {
            "type": "shell_command",
            "command": command,
            "argsTemplate": template,
            **executor,
        },
    }


def write_package(
    tmp_path: Path,
    tools: list[dict[str, Any]],
    *,
    guardrails: dict[str, Any] | None = None,
    credentials: dict[str, Any] | None = None,
    folder_name: str = SKILL_ID,
) -> Path:
    """A package folder with ``tools`` (and optional guardrails and credentials)."""
    folder = tmp_path / folder_name
    folder.mkdir(parents=True)
    files: dict[str, Any] = {
        "skill.json": {"schemaVersion": "ayati-skill/v1", "id": SKILL_ID, "version": "1"},
        "tools.json": {"schemaVersion": "ayati-tools/v1", "skillId": SKILL_ID, "tools": tools},
    }
    if guardrails is not None:
        files["guardrails.json"] = {
            "schemaVersion": "ayati-guardrails/v1",
            "skillId": SKILL_ID,
            **guardrails,
        }
    if credentials is not None:
        files["credentials.json"] = {
            "schemaVersion": "ayati-credentials/v1",
            "skillId": SKILL_ID,
            **credentials,
        }
    for name, data in files.items():
        (folder / name).write_text(json.dumps(data, indent=2))
    (folder / "skill.md").write_text("# tools demo\n")
    return folder


def package(tmp_path: Path, tools: list[dict[str, Any]], **kwargs: Any) -> Skill:
    """:func:`write_package`, loaded."""
    return load_skill(write_package(tmp_path, tools, **kwargs))


def gate(skill: Skill, base: BasePolicy | None = None) -> Gate:
    """The skill's gate over ``base``."""
    return Gate.for_skill(skill, base=base)


def tool_of(skill: Skill, name: str) -> Tool:
    """A tool of the skill, by local name."""
    found = skill.tool(name)
    assert found is not None, name
    return found


INTENTS = {
    "supported": [
        {
            "id": "intent_tools",
            "description": "Use the demo tools",
            "examples": ["run the tool", "use the tools"],
        }
    ]
}


def job_package(tmp_path: Path, tools: list[dict[str, Any]], **kwargs: Any) -> Path:
    """:func:`write_package` whose ``skill.json`` declares an intent, so that a job of
    it runs on the scripted model."""
    folder = write_package(tmp_path, tools, **kwargs)
    manifest = {
        "schemaVersion": "skillwire-skill/v1",
        "id": SKILL_ID,
        "version": "1",
        "intents": INTENTS,
    }
    (folder / "skill.json").write_text(json.dumps(manifest, indent=2))
    return folder


def job_script(tool: str, args: dict[str, Any], answer: str = "done") -> list[dict[str, Any]]:
    """Scripted replies: the intent, one call of ``tool`` (local name), the answer."""
    return [
        {"stage": "intent", "json": {"intent": "intent_tools", "entities": {}}},
        {
            "stage": "planner",
            "tool_call": {"name": f"{SKILL_ID}__{tool}", "id": "t1", "arguments": args},
        },
        {
            "stage": "planner",
            "tool_call": {
                "name": "final_answer",
                "id": "f1",
                "arguments": {"answer": answer, "fields": {}},
            },
        },
        {"stage": "gate", "json": {"passed": True, "reasons": []}},
    ]
