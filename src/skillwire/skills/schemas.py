"""JSON Schemas generated from the skill model, for editors and other tools.

``python -m skillwire.skills.schemas --write schemas`` writes one file per format into
``schemas/``; a test fails when the committed files drift from the model. Unknown
keys are allowed by the schemas (skillwire warns about them instead of failing), except
inside a policy block, where the loader refuses them too: there the schemas allow only
the known keys and keys starting with ``_``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from skillwire.skills._validation import POLICY_BLOCKS
from skillwire.skills.model import DomainFile, SkillManifest
from skillwire.skills.model_package import (
    CredentialsFile,
    GuardrailsFile,
    PrerequisitesFile,
    TestsFile,
    ToolsFile,
)

__all__ = ["SCHEMA_FILES", "generate", "main", "render"]

SCHEMA_FILES: dict[str, tuple[type[BaseModel], str]] = {
    "domain.schema.json": (DomainFile, "A single-file skill definition (domain.yaml)"),
    "skill.schema.json": (SkillManifest, "A skill package's skill.json"),
    "tools.schema.json": (ToolsFile, "A skill package's tools.json"),
    "guardrails.schema.json": (GuardrailsFile, "A skill package's guardrails.json"),
    "credentials.schema.json": (CredentialsFile, "A skill package's credentials.json"),
    "prerequisites.schema.json": (PrerequisitesFile, "A skill package's prerequisites.json"),
    "tests.schema.json": (TestsFile, "A skill package's tests.json"),
}
"""File name -> (model, title) of every generated schema."""

BASE_ID = "https://skillwire.dev/schemas/"


def generate() -> dict[str, dict[str, Any]]:
    """Every schema, by file name."""
    out: dict[str, dict[str, Any]] = {}
    for name, (model, title) in SCHEMA_FILES.items():
        schema = model.model_json_schema(by_alias=True)
        _close_policy_blocks(schema)
        out[name] = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": BASE_ID + name,
            "title": title,
            **{k: v for k, v in schema.items() if k != "title"},
        }
    return out


def _close_policy_blocks(schema: dict[str, Any]) -> None:
    """Forbid unknown keys (but ``_`` ones) in the policy blocks' definitions and in every
    definition they use, as the loader does."""
    defs: dict[str, Any] = schema.get("$defs", {})
    pending = [model.__name__ for model in POLICY_BLOCKS if model.__name__ in defs]
    closed: set[str] = set()
    while pending:
        name = pending.pop()
        if name in closed:
            continue
        closed.add(name)
        definition = defs[name]
        definition["additionalProperties"] = False
        definition["patternProperties"] = {"^_": {}}
        pending.extend(_refs(definition))


def _refs(node: Any) -> list[str]:
    """The ``$defs`` names ``node`` refers to."""
    if isinstance(node, dict):
        found = [] if not isinstance(node.get("$ref"), str) else [node["$ref"].rsplit("/", 1)[-1]]
        return found + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def render(schema: dict[str, Any]) -> str:
    """The committed text of a schema (stable key order, trailing newline)."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the schemas (``--write DIR``) or check them (``--check DIR``)."""
    parser = argparse.ArgumentParser(prog="python -m skillwire.skills.schemas")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, metavar="DIR")
    group.add_argument("--check", type=Path, metavar="DIR")
    args = parser.parse_args(argv)
    folder: Path = args.write or args.check
    stale = []
    for name, schema in generate().items():
        path = folder / name
        text = render(schema)
        if args.write:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        elif not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    if stale:
        print("stale schemas (run make schemas):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
