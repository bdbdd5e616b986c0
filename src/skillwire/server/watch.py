"""``skillwire serve --watch``: reload the skills when their files change.

A change under a skill path (watchfiles batches a burst of writes into one change)
reloads every path, as ``POST /api/skills/reload`` does: a skill whose new files fail
to load keeps its last good version, and the log, the skills page and ``GET
/api/skills`` (for an admin) name the file and line that broke it. Jobs keep the version
they started on (:mod:`skillwire.server.skillbook`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

from skillwire.server.service import JobService
from skillwire.server.skillbook import ReloadOutcome, failures

__all__ = ["log_reload", "watch_skills"]

log = logging.getLogger("skillwire.server")


def log_reload(outcome: ReloadOutcome, why: str) -> None:
    """One line for the reload, and one per error of a skill that kept its old version."""
    log.info(
        "skills reloaded (%s): %s loaded, %s kept, %s removed",
        why,
        len(outcome.loaded),
        len(outcome.kept),
        len(outcome.removed),
    )
    for line in failures(outcome):
        log.error("%s", line)


async def watch_skills(
    service: JobService,
    paths: Sequence[Path],
    stop: asyncio.Event,
    *,
    debounce_ms: int = 300,
    ready: asyncio.Event | None = None,
) -> None:
    """Reload the skills after each change under ``paths`` until ``stop`` is set.
    ``ready`` is set once the watch has started (changes before it are not seen)."""
    from watchfiles import DefaultFilter, awatch

    watched = [p for p in paths if p.exists()]
    if not watched:
        log.warning("--watch: none of the skill paths exists; nothing is watched")
        if ready is not None:
            ready.set()
        return
    changes = awatch(
        *watched,
        stop_event=stop,
        debounce=debounce_ms,
        step=50,
        watch_filter=DefaultFilter(),
        yield_on_timeout=True,
        rust_timeout=100,
    )
    first = True
    async for changed in changes:
        if first and ready is not None:
            ready.set()
        first = False
        if not changed:  # the timeout tick: the watch is running
            continue
        files = sorted({Path(p).name for _, p in changed})
        try:
            outcome = await service.book.reload()
            await service.book.keep_versions(service.store)
        except Exception:  # a watcher that dies would leave the server silently stale
            log.exception("reloading the skills after a change failed")
            continue
        log_reload(outcome, "changed: " + ", ".join(files[:5]))
