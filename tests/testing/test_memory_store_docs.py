"""docs/testing.md's example of ``MemoryJobStore`` works as written (the same code)."""

from __future__ import annotations

import asyncio
import os

from tests.conftest import ROOT

from skillwire.engine import Runtime
from skillwire.models.offline import OfflineModel
from skillwire.skills import load_skill
from skillwire.testing import MemoryJobStore
from skillwire.tools import Executors


def test_a_large_refund_waits_for_approval() -> None:
    async def main() -> None:
        store = MemoryJobStore()
        runtime = Runtime(store, OfflineModel(), executors=Executors())
        skill = load_skill("examples/refund_support/domain.yaml")
        job = await runtime.start(skill, "Please refund 750 for order ORD-12345")
        stored = await store.get(job.id)
        assert stored is not None and stored.outcome_class == "APPROVAL_REQUIRED"
        assert (await store.events(job.id))[0].kind == "created"

    here = os.getcwd()
    os.chdir(ROOT)  # the example's paths are relative to the repository
    try:
        asyncio.run(main())
    finally:
        os.chdir(here)


def test_the_example_in_the_docs_is_this_one() -> None:
    doc = (ROOT / "docs" / "testing.md").read_text()
    source = (ROOT / "tests" / "testing" / "test_memory_store_docs.py").read_text()
    start = doc.index("def test_a_large_refund_waits_for_approval")
    body = doc[start : doc.index("asyncio.run(main())", start)]
    assert body in source
