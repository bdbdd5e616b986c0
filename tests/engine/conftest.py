"""Fixtures of the engine tests."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture
def collector() -> Iterator[None]:
    """The collector as the test found it, put back afterwards: its thresholds, and no
    frozen heap (code under test tunes and freezes it, as ``skillwire serve`` does)."""
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)
    gc.unfreeze()
