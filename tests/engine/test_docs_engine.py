"""docs/engine.md: its Python runs as written and prints what its comments say."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.conftest import ROOT

DOC = ROOT / "docs" / "engine.md"


def test_the_example_in_docs_engine_md_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)  # the example writes jobs.db where it runs
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 1
    exec(compile(blocks[0], str(DOC), "exec"), {"__name__": "docs_engine"})
    printed = capsys.readouterr().out.splitlines()
    expected = re.findall(r"# (\w+ \w+)\n", blocks[0])
    assert printed == expected == ["paused APPROVAL_REQUIRED", "completed SUCCESS"]
    assert (tmp_path / "jobs.db").exists()
