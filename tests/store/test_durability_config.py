"""``[runtime] durability`` in skillwire.toml reaches the store the program builds."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from skillwire.assembly import ModelChoice, make_runtime
from skillwire.config import load_config
from skillwire.core.errors import UsageError
from skillwire.models.offline import OfflineModel
from skillwire.store import SQLiteJobStore


@pytest.mark.parametrize("level", ["strict", "default", "fast"])
def test_the_configured_level_is_the_store_s(tmp_path: Path, level: str) -> None:
    path = tmp_path / "skillwire.toml"
    path.write_text(f'[runtime]\ndurability = "{level}"\n')
    config = load_config(path)
    assert config.runtime.durability == level
    runtime = make_runtime(
        tmp_path / "jobs.db", ModelChoice(OfflineModel(), OfflineModel(), []), config
    )
    store = runtime.store
    assert isinstance(store, SQLiteJobStore)
    assert store.durability == level
    asyncio.run(store.close())


def test_no_level_is_default_and_an_unknown_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "skillwire.toml"
    path.write_text("[runtime]\n")
    assert load_config(path).runtime.durability == "default"
    path.write_text('[runtime]\ndurability = "none"\n')
    with pytest.raises(UsageError, match="durability"):
        load_config(path)
