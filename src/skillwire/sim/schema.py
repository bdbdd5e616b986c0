"""The JSON Schema of ``experiment.yaml``, generated from its model.

``python -m skillwire.sim.schema --write schemas`` writes ``schemas/experiment.schema.json``;
``--check schemas`` fails when the committed file drifts from the model (a test runs it).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from skillwire.sim.experiment_file import ExperimentFile

__all__ = ["SCHEMA_FILE", "generate", "main", "render"]

SCHEMA_FILE = "experiment.schema.json"
BASE_ID = "https://skillwire.dev/schemas/"


def generate() -> dict[str, Any]:
    """The schema of experiment.yaml."""
    schema = ExperimentFile.model_json_schema(by_alias=True)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": BASE_ID + SCHEMA_FILE,
        "title": "A governed simulation experiment (experiment.yaml)",
        **{k: v for k, v in schema.items() if k != "title"},
    }


def render(schema: dict[str, Any]) -> str:
    """The committed text (stable key order, trailing newline)."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write (``--write DIR``) or check (``--check DIR``) the schema file."""
    parser = argparse.ArgumentParser(prog="python -m skillwire.sim.schema")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, metavar="DIR")
    group.add_argument("--check", type=Path, metavar="DIR")
    args = parser.parse_args(argv)
    folder: Path = args.write or args.check
    path = folder / SCHEMA_FILE
    text = render(generate())
    if args.write:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return 0
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        print(f"stale schema (run make schemas): {SCHEMA_FILE}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
