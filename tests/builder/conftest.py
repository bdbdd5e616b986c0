"""Builder tests run in a folder of their own, with no skillwire.toml: the model is the
offline one unless a test names another."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def _own_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("SKILLWIRE_CONFIG", "SKILLWIRE_MODEL", "SKILLWIRE_GATE_MODEL"):
        monkeypatch.delenv(name, raising=False)
