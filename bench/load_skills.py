"""Load benchmark: 1,000 generated JSON skill packages through ``load_paths``.

Run ``python -m bench.load_skills`` (or ``make bench``). The packages are written to a
temporary folder first (not timed); then one ``load_paths([folder])`` call is timed and one
JSON line is printed::

    {"bench": "load_skills", "skills": 1000, "files": 7000, "seconds": 1.23,
     "peak_rss_mb": 180.5, "errors": 0}

The target is under 2 seconds on a 2-core machine. Every generated package is realistic
and valid (a ``skillwire-skill/v1`` manifest with intents, guardrails and a conditional
approval; three to five tools, each with an ``inputSchema`` and a policy condition; a
tool-access plan; credentials; prerequisites; tests), and the packages differ from each
other (names, schemas, credentials ...). Conditions use round thresholds, as authors write
them, so a condition text recurs across skills (under a hundred distinct ones in about
4,900): the loader compiles each distinct condition once. Were every condition distinct,
compiling them would add about a second per 1,000 skills.

The exit status is 1 when any package fails to load.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from skillwire.skills import load_paths

__all__ = ["generate_package", "generate_packages", "main", "peak_rss_mb", "run"]

_VERBS = ("lookup", "update", "cancel", "refund", "archive", "export", "notify", "sync")
_NOUNS = ("order", "invoice", "ticket", "account", "shipment", "report", "payment", "user")
_TOOL_COUNTS = (3, 4, 5)
_LIMITS = (50, 100, 250, 500, 1000, 2500, 5000, 10_000)
"""Thresholds authors write in conditions: round numbers, so conditions repeat across
skills the way they do in real collections (each distinct one is compiled once)."""


def _properties(i: int, j: int) -> tuple[dict[str, Any], list[str], str]:
    """An ``inputSchema``'s properties and required list, and a condition over them."""
    limit = _LIMITS[(i + j) % len(_LIMITS)]
    props: dict[str, Any] = {
        "record_id": {
            "type": "string",
            "pattern": f"^[A-Z]{{{2 + j % 3}}}-[0-9]{{{4 + i % 3}}}$",
            "description": "The record the call acts on",
        },
        "amount": {"type": "number", "minimum": 0, "maximum": 100 * (i + j + 1)},
    }
    required = ["record_id"]
    kind = (i + j) % 3
    if kind == 0:
        props["reason"] = {"type": "string", "maxLength": 200 + j, "description": "Why"}
        condition = f"amount > {limit} or reason contains 'urgent'"
    elif kind == 1:
        props["priority"] = {"type": "integer", "enum": list(range(1, 3 + j % 4))}
        condition = f"amount > {limit} && priority >= {1 + j % 3}"
    else:
        props["tags"] = {"type": "array", "items": {"type": "string"}, "maxItems": 5 + j}
        condition = f"size(tags) > {j % 4} || amount >= {limit}"
        required.append("tags")
    required.append("amount")
    return props, required, condition


def _tools(skill_id: str, i: int) -> list[dict[str, Any]]:
    count = _TOOL_COUNTS[i % len(_TOOL_COUNTS)]
    tools = []
    for j in range(count):
        name = f"{_VERBS[(i + j) % len(_VERBS)]}_{_NOUNS[(i * 3 + j) % len(_NOUNS)]}_{j}"
        props, required, condition = _properties(i, j)
        tool: dict[str, Any] = {
            "name": f"{skill_id}.{name}" if j % 2 == 0 else name,
            "description": f"{name.replace('_', ' ').capitalize()} for skill {i}",
            "selectionHints": {
                "tags": [_NOUNS[(i + j) % len(_NOUNS)]],
                "examples": [f"please {name.replace('_', ' ')}"],
                "priority": j,
            },
            "inputSchema": {"type": "object", "required": required, "properties": props},
            "policy": {
                "conditions": [
                    {
                        "when": condition,
                        "action": "require_approval" if j % 2 == 0 else "deny",
                        "message": f"{name} needs a second look",
                    }
                ]
            },
            "executor": {
                "type": "shell_command",
                "command": f"tool-{j}",
                "argsTemplate": ["--id", "{{record_id}}", "{{#if reason}}--why{{/if}}"],
                "timeoutMs": 5_000 + i,
            },
        }
        if j == 0:
            tool["requiresCredentials"] = ["API_TOKEN"]
        tools.append(tool)
    return tools


def generate_package(folder: Path, i: int) -> None:
    """Write package number ``i`` (seven files) into ``folder``."""
    skill_id = f"bench-skill-{i:04d}"
    tools = _tools(skill_id, i)
    local = [t["name"].split(".", 1)[-1] for t in tools]
    manifest: dict[str, Any] = {
        "schemaVersion": "skillwire-skill/v1",
        "id": skill_id,
        "version": f"1.{i % 10}.0",
        "title": f"Bench skill {i}",
        "description": f"Generated skill number {i} for the load benchmark.",
        "owners": ["bench"],
        "tags": ["bench", _NOUNS[i % len(_NOUNS)]],
        "status": {"state": "stable", "enabledByDefault": i % 2 == 0},
        "runtime": {"minAgentVersion": "0.1.0", "requiredAdapters": ["shell_command"]},
        "files": {
            "skillDoc": "skill.md",
            "tools": "tools.json",
            "guardrails": "guardrails.json",
            "credentials": "credentials.json",
            "prerequisites": "prerequisites.json",
            "tests": "tests.json",
        },
        "capabilities": {
            "updatesToolAccessJson": True,
            "requiresCredentials": True,
            "declaresPrerequisites": True,
            "declaresTests": True,
        },
        "intents": {
            "supported": [
                {
                    "id": f"intent_{local[0]}",
                    "description": f"The user wants to {local[0].replace('_', ' ')}",
                    "examples": [f"{local[0]} R-{i}", f"can you {local[0]} for me"],
                    "entities": [
                        {"name": "record_id", "type": "string", "required": True},
                        {"name": "amount", "type": "number"},
                    ],
                },
                {
                    "id": f"intent_{local[1]}",
                    "description": f"The user wants to {local[1].replace('_', ' ')}",
                    "examples": [f"{local[1]} now"],
                    "tools": [local[1]],
                },
            ],
            "out_of_domain": {"action": "redirect", "message": f"Skill {i} cannot help"},
        },
        "policy": {
            "guardrails": {
                "never": [f"Never {local[0].replace('_', ' ')} without a record id"],
                "always": ["Always confirm before making changes"],
            },
            "workflows": [{"name": f"flow-{i}", "steps": local[:2], "required": True}],
            "approvals": [
                {
                    "tool_id": local[0],
                    "when": f"amount > {_LIMITS[i % len(_LIMITS)]}",
                    "approver": "supervisor",
                    "reason": "large amounts need a supervisor",
                }
            ],
        },
        "output_contract": {"required_fields": ["record_id", "status"]},
    }
    guardrails = {
        "schemaVersion": "skillwire-guardrails/v1",
        "skillId": skill_id,
        "mergePolicy": "restrictive",
        "toolAccessPlan": {
            "idempotent": True,
            "operations": [
                {
                    "op": "upsert_tool",
                    "toolName": f"{skill_id}.{local[0]}",
                    "config": {"enabled": True},
                },
                {"op": "add_global_allowlist_tool", "toolName": local[1]},
                {
                    "op": "append_unique_guardrail_list",
                    "path": "guardrails.shell.denyPrefixes",
                    "values": ["rm", f"danger-{i % 5}"],
                },
            ],
        },
        "toolPolicies": {
            f"{skill_id}.{local[0]}": {"requireConfirmationFor": ["write"], "maxCallsPerRun": 3}
        },
        "shell": {"allowedPrefixes": ["tool-0"], "denyOperators": ["&&", "||", ";"]},
    }
    credentials = {
        "schemaVersion": "skillwire-credentials/v1",
        "skillId": skill_id,
        "credentials": [
            {
                "id": "API_TOKEN",
                "type": "env",
                "required": True,
                "secret": True,
                "description": "Token of the backing API",
                "usage": "Passed to the first tool",
                "validation": {"minLength": 8 + i % 8},
                "redaction": {"showPrefix": 2, "showSuffix": 2},
            }
        ],
        "bindings": [
            {
                "tool": f"{skill_id}.{local[0]}",
                "credentialId": "API_TOKEN",
                "injectAs": "env",
                "target": "API_TOKEN",
            }
        ],
        "missingCredentialBehavior": {
            "mode": "fail_fast",
            "messageTemplate": "{{credentialId}} is not set",
        },
    }
    prerequisites = {
        "schemaVersion": "skillwire-prerequisites/v1",
        "skillId": skill_id,
        "lastUpdated": "2026-01-01",
        "mode": "declarative",
        "items": [
            {
                "id": f"binary-{j}",
                "type": "binary",
                "required": True,
                "description": f"tool-{j} is installed",
                "howToCheck": {"kind": "command", "command": f"tool-{j} --version"},
                "expected": "a version number",
                "howToFix": f"install tool-{j}",
            }
            for j in range(2)
        ],
    }
    tests = {
        "schemaVersion": "skillwire-tests/v1",
        "skillId": skill_id,
        "suiteName": f"smoke-{i}",
        "executionMode": "declarative",
        "scenarios": [
            {
                "id": f"smoke-{j}",
                "title": f"Scenario {j}",
                "goal": "The tool answers",
                "type": "command",
                "preconditions": [f"binary-{j}"],
                "steps": [f"run tool-{j}"],
                "commands": [{"program": f"tool-{j}", "args": ["--help"], "allowFailure": False}],
                "expected": ["exit status 0"],
                "passCriteria": "the command succeeds",
            }
            for j in range(2)
        ],
    }
    folder.mkdir(parents=True)
    files: dict[str, Any] = {
        "skill.json": manifest,
        "tools.json": {"schemaVersion": "skillwire-tools/v1", "skillId": skill_id, "tools": tools},
        "guardrails.json": guardrails,
        "credentials.json": credentials,
        "prerequisites.json": prerequisites,
        "tests.json": tests,
    }
    for name, data in files.items():
        (folder / name).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (folder / "skill.md").write_text(
        f"# Bench skill {i}\n\nYou help with {', '.join(local)}. Ask for the record id "
        "when it is missing, and confirm before making changes.\n",
        encoding="utf-8",
    )


def generate_packages(root: Path, count: int) -> int:
    """Write ``count`` packages under ``root``; return the number of files written."""
    for i in range(count):
        generate_package(root / f"skill-{i:04d}", i)
    return sum(1 for path in root.rglob("*") if path.is_file())


def peak_rss_mb() -> float:
    """The process's peak resident set size in MiB (``ru_maxrss`` is KiB on Linux, bytes
    on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def run(count: int) -> dict[str, Any]:
    """Generate ``count`` packages in a temporary folder, time their load, return the result."""
    with tempfile.TemporaryDirectory(prefix="skillwire-bench-") as tmp:
        root = Path(tmp)
        files = generate_packages(root, count)
        start = time.perf_counter()
        result = load_paths([root])
        seconds = time.perf_counter() - start
        return {
            "bench": "load_skills",
            "skills": len(result.skills),
            "files": files,
            "seconds": round(seconds, 3),
            "peak_rss_mb": round(peak_rss_mb(), 1),
            "errors": result.report.error_count,
        }


def main(argv: list[str] | None = None) -> int:
    """Print the benchmark's JSON line; exit 1 if any package failed to load."""
    parser = argparse.ArgumentParser(prog="python -m bench.load_skills", description=__doc__)
    parser.add_argument("--skills", type=int, default=1000, help="packages to generate")
    args = parser.parse_args(argv)
    line = run(args.skills)
    print(json.dumps(line))
    return 0 if line["errors"] == 0 and line["skills"] == args.skills else 1


if __name__ == "__main__":
    raise SystemExit(main())
