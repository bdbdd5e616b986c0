"""The garbage collector of a long-running process: freeze the start-up heap, and
collect the young generation less often.

CPython's garbage collector walks every tracked object in each full collection. A
process running jobs keeps tens of thousands of objects alive for good (modules, skills,
compiled gates and conditions, the SDKs), and jobs that pause and resume leave enough
objects behind to trigger a full collection every few hundred jobs: measured here, each
walked the startup heap for 40 ms of the 100. :func:`freeze_startup_heap` collects once,
then moves what is alive to the permanent generation, which collections skip.

With a thousand jobs in flight, each holds about a hundred objects (its state, its
conversation, its task) while its model works. The default thresholds (700, 10, 10)
collect the young generation every 700 objects allocated and not yet freed: every step
or two of a job, each collection promoting the jobs in flight to the older generations,
which are then walked again and again (a full collection walked them for 20 to 47 ms at
a time). :func:`tune_collector` sets :data:`COLLECTOR_THRESHOLDS`: a young collection
every 50,000 objects, the older ones 20 and 100 times rarer. Objects freed by their
reference count (nearly all of a job's) never count; only reference cycles wait longer
to be collected, so memory grows by at most the cycles made between two collections.

``skillwire serve`` calls both once its skills are loaded; a program embedding the
:class:`~skillwire.engine.Runtime` may call them after its own start-up. What is frozen
is never collected, so call :func:`freeze_startup_heap` once, after start-up, not per
job.
"""

from __future__ import annotations

import gc

__all__ = ["COLLECTOR_THRESHOLDS", "freeze_startup_heap", "tune_collector"]

COLLECTOR_THRESHOLDS: tuple[int, int, int] = (50_000, 20, 100)
"""What :func:`tune_collector` sets (see :func:`gc.set_threshold`)."""


def freeze_startup_heap() -> int:
    """Collect garbage, then freeze every object alive; returns how many are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def tune_collector(
    thresholds: tuple[int, int, int] = COLLECTOR_THRESHOLDS,
) -> tuple[int, int, int]:
    """Set the collector's thresholds; returns the ones they replace (to restore)."""
    young, middle, old = thresholds
    if young < 1 or middle < 1 or old < 1:  # 0 would turn the collector off
        raise ValueError(f"thresholds must be at least 1, not {thresholds}")
    before = gc.get_threshold()
    gc.set_threshold(young, middle, old)
    return before[0], before[1], before[2]
