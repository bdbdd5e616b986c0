"""The collector settings of a long-running process (skillwire.engine.heap): what
``skillwire serve`` applies once started, and what the benchmarks apply as it does."""

from __future__ import annotations

import gc

import pytest

from skillwire.engine.heap import COLLECTOR_THRESHOLDS, freeze_startup_heap, tune_collector

pytestmark = pytest.mark.usefixtures("collector")


def test_tune_collector_sets_the_documented_thresholds_and_returns_the_old() -> None:
    gc.set_threshold(700, 10, 10)
    assert tune_collector() == (700, 10, 10)
    assert gc.get_threshold() == COLLECTOR_THRESHOLDS
    assert tune_collector((700, 10, 10)) == COLLECTOR_THRESHOLDS, "what it returns restores"
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("bad", [(0, 10, 10), (700, 0, 10), (700, 10, -1)])
def test_tune_collector_never_turns_the_collector_off(bad: tuple[int, int, int]) -> None:
    gc.set_threshold(700, 10, 10)
    with pytest.raises(ValueError, match="at least 1"):
        tune_collector(bad)
    assert gc.get_threshold() == (700, 10, 10), "a refused setting changes nothing"


def test_a_tuned_collector_still_runs_on_its_own() -> None:
    """Past the young threshold, a collection comes without being asked for."""
    assert gc.isenabled()
    tune_collector()
    young = COLLECTOR_THRESHOLDS[0]
    generations: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            generations.append(info["generation"])

    gc.collect()  # the count starts from zero
    gc.callbacks.append(seen)
    try:
        kept = [[] for _ in range(young // 2)]
        assert generations == [], "no collection before the threshold"
        kept += [[] for _ in range(young)]
    finally:
        gc.callbacks.remove(seen)
    assert len(kept) == young * 3 // 2
    assert generations and generations[0] == 0, "a young collection ran by itself"


def test_freeze_startup_heap_moves_the_live_heap_out_of_collections() -> None:
    frozen = freeze_startup_heap()
    assert frozen == gc.get_freeze_count() > 0
