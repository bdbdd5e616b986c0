"""Fixtures of the simulation tests (helpers live in tests/sim/helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.sim.helpers import copy_example


@pytest.fixture
def flood_copy(tmp_path: Path) -> Path:
    """A writable copy of the flood example."""
    return copy_example(tmp_path)
