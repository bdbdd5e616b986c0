"""schemas/experiment.schema.json is generated from the model and kept in sync."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from ruamel.yaml import YAML
from tests.sim.helpers import FLOOD

from skillwire.sim.schema import SCHEMA_FILE, generate, main, render

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def test_the_committed_schema_matches_the_model() -> None:
    assert (SCHEMAS / SCHEMA_FILE).read_text(encoding="utf-8") == render(generate()), (
        "schemas/experiment.schema.json is stale: run `make schemas`"
    )
    assert main(["--check", str(SCHEMAS)]) == 0


def test_check_mode_notices_a_stale_file(tmp_path: Path) -> None:
    (tmp_path / SCHEMA_FILE).write_text("{}\n")
    assert main(["--check", str(tmp_path)]) == 1
    assert main(["--write", str(tmp_path)]) == 0 and main(["--check", str(tmp_path)]) == 0


def test_the_example_is_valid_and_a_typo_is_not() -> None:
    schema = json.loads((SCHEMAS / SCHEMA_FILE).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    data = YAML(typ="safe", pure=True).load((FLOOD / "experiment.yaml").read_text())
    jsonschema.validate(data, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data, "stpes": 3}, schema)
    assert schema["properties"]["steps"]["description"].startswith("Steps")
