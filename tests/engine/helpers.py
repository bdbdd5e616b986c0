"""Helpers for the engine tests: scripted replies, skill variants, stores that count or
crash, a ledger of tool executions, and a driver that takes any job to its end."""

from __future__ import annotations

import asyncio
import shutil
import textwrap
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from skillwire.core.chat import ChatRequest, ChatResponse
from skillwire.core.job import Event, JobRecord, JobStatus, ModelCallRecord, OutcomeClass
from skillwire.core.store import Claim
from skillwire.engine import EngineLimits, JobView, Runtime
from skillwire.skills import Skill, load_skill
from skillwire.store import SQLiteJobStore
from skillwire.testing import ScriptedModel
from skillwire.tools import Executors

ROOT = Path(__file__).resolve().parents[2]
REFUND_DIR = ROOT / "examples" / "refund_support"

ORDER = "ORD-12345"
NEXT_STEPS = "750.00 will be back on your card within 5 business days."
FIELDS = {"order_id": ORDER, "status": "refunded", "next_steps": NEXT_STEPS}
ANSWER = f"Your refund for {ORDER} is done (status: refunded). {NEXT_STEPS}"
POLISHED = f"Good news! Your refund for {ORDER} is done (status: refunded). {NEXT_STEPS}"


# -- scripted replies -----------------------------------------------------------------


def intent(intent_id: str | None = "intent_refund", **entities: Any) -> dict[str, Any]:
    """The intent stage's reply."""
    return {"stage": "intent", "json": {"intent": intent_id, "entities": entities}}


def call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    """A planner reply calling ``name``."""
    return {"stage": "planner", "tool_call": {"name": name, "id": call_id, "arguments": args}}


def final(
    answer: str = ANSWER, fields: Mapping[str, Any] | None = None, call_id: str = "final"
) -> dict[str, Any]:
    """A planner reply calling final_answer."""
    return call(
        "final_answer", call_id, answer=answer, fields=dict(FIELDS if fields is None else fields)
    )


def gate(passed: bool = True, **extra: Any) -> dict[str, Any]:
    """The finalization gate's reply."""
    return {"stage": "gate", "json": {"passed": passed, "reasons": [], **extra}}


def gate_fail(
    code: str = "GOAL_NOT_MET", action: str = "TOOL_CALL", missing: Sequence[str] = ()
) -> dict[str, Any]:
    """A failing gate verdict."""
    return gate(
        False,
        reasons=[{"code": code, "detail": f"{code.lower()} detail"}],
        suggested_action=action,
        missing_fields=list(missing),
    )


def polish(text: str = POLISHED) -> dict[str, Any]:
    """The polisher's reply."""
    return {"stage": "polisher", "text": text}


def approval_script() -> list[dict[str, Any]]:
    """A 750 refund with every entity known: it pauses once, for approval. 7 calls."""
    return [
        intent(order_id=ORDER, amount=750),
        call("verify_identity", "c1", order_id=ORDER),
        call("check_eligibility", "c2", order_id=ORDER, amount=750),
        call("process_refund", "c3", order_id=ORDER, amount=750),
        final(),
        gate(),
        polish(),
    ]


def input_script() -> list[dict[str, Any]]:
    """A 750 refund without the order number: it pauses for input, then for approval."""
    return [
        intent(amount=750),
        call("verify_identity", "c1"),
        call("check_eligibility", "c2", order_id=ORDER, amount=750),
        call("process_refund", "c3", order_id=ORDER, amount=750),
        final(),
        gate(),
        polish(),
    ]


# -- skills ---------------------------------------------------------------------------

FILES_SKILL = """
    id: files
    name: Files
    problem:
      statement: "Tidy a user's files"
    role:
      name: "File clerk"
    intents:
      supported:
        - id: intent_tidy
          description: "Tidy files"
          examples: ["tidy my files"]
    tools:
      - name: listFiles
        description: "List files"
        inputs:
          - {name: folder, type: string, required: true}
        idempotent: true
        executor:
          type: simulate
          result: {files: ["a.txt", "b.txt"], folder: "{{folder}}"}
      - name: deleteFile
        description: "Delete a file"
        inputs:
          - {name: path, type: string, required: true}
        executor:
          type: simulate
          result: {deleted: "{{path}}"}
    policy:
      guardrails:
        never:
          - "Never use deleteFile"
    output_contract:
      required_fields: [summary]
    engine:
      finalization_gate:
        enabled: true
"""
"""A skill with a denied tool, no persona and no budget of its own (spec 000 6.2)."""


def skill_from(folder: Path, yaml_text: str, **modules: str) -> Skill:
    """Write ``yaml_text`` (dedented) to ``folder/domain.yaml`` and load it; each keyword
    is a Python module written beside it (``tools_mod=SOURCE``: ``tools_mod.py``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in modules.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(source))
    path = folder / "domain.yaml"
    path.write_text(textwrap.dedent(yaml_text).strip("\n") + "\n")
    return load_skill(path)


def lookup_yaml(skill_id: str, *, timeout_ms: int | None = None, **callables: str) -> str:
    """A skill that looks an order up: the intent ``lookup``, and a tool per keyword (its
    name) running that Python callable (``timeoutMs``: ``timeout_ms``) on ``order_id``;
    the answer must hold ``order_id``, and no finalization gate checks it."""
    limit = f", timeoutMs: {timeout_ms}" if timeout_ms is not None else ""
    tools = "".join(
        f"""
          - name: {name}
            description: Look an order up
            inputs:
              - {{name: order_id, type: string, required: true}}
            idempotent: true
            executor: {{type: python, callable: "{target}"{limit}}}"""
        for name, target in callables.items()
    )
    text = f"""
        id: {skill_id}
        problem: {{statement: "Look up orders"}}
        intents:
          supported:
            - id: lookup
              description: Look up an order
              examples: ["look up my order"]
        tools:{tools}
        output_contract:
          required_fields: [order_id]
        engine:
          finalization_gate: {{enabled: false}}
        """
    return textwrap.dedent(text).lstrip("\n")


def lookup_script(answer: str) -> list[dict[str, Any]]:
    """The replies of a :func:`lookup_yaml` job: look ORDER up (call ``t1``), then answer."""
    return [
        intent("lookup", order_id=ORDER),
        call("lookup_order", "t1", order_id=ORDER),
        call("final_answer", "f1", answer=answer, fields={"order_id": ORDER}),
    ]


def refund_variant(folder: Path, **edits: str) -> Skill:
    """A copy of the refund example in ``folder``; each keyword names a line of
    :data:`EDITS` and gives the text that replaces it in domain.yaml."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(REFUND_DIR / "refund_tools.py", folder / "refund_tools.py")
    text = (REFUND_DIR / "domain.yaml").read_text()
    for key, new in edits.items():
        old = EDITS[key]
        assert old in text, f"{old!r} is no longer in the refund example"
        text = text.replace(old, new)
    (folder / "domain.yaml").write_text(text)
    return load_skill(folder / "domain.yaml")


EDITS = {
    "engine": "  max_iterations: 12\n",
    "gate": "    enabled: true\n    max_retries: 2\n",
    "once_only": (  # both limits on refunding an order twice: in the job and across jobs
        "      once_only:\n        per: order_id\n"
        "      once_per: args.order_id  # one refund per order across all jobs (the job store "
        "keeps it)\n"
    ),
    "persona": '  persona: "Friendly and empathetic customer support specialist"\n',
    "state_changes": "allowed_state_changes: [refund_issued]\n",
}
"""Lines of the refund example that variants replace."""


LEDGER_TOOLS = """

# -- the ledger: every run written (tool, idempotency key) and fsynced first ----------

import os as _os

_LEDGER = {ledger!r}
_BASE = (verify_identity, check_eligibility, process_refund)


def _log(tool, key):
    fd = _os.open(_LEDGER, _os.O_WRONLY | _os.O_APPEND | _os.O_CREAT, 0o644)
    try:
        _os.write(fd, f"{{tool}} {{key}}\\n".encode())
        _os.fsync(fd)
    finally:
        _os.close(fd)
    if _os.environ.get("SKILLWIRE_LEDGER_ECHO"):
        print(f"tool {{tool}}", flush=True)


def verify_identity(order_id, idempotency_key=""):
    _log("verify_identity", idempotency_key)
    return _BASE[0](order_id)


def check_eligibility(order_id, amount, idempotency_key=""):
    _log("check_eligibility", idempotency_key)
    return _BASE[1](order_id, amount)


def process_refund(order_id, amount, idempotency_key=""):
    _log("process_refund", idempotency_key)
    return _BASE[2](order_id, amount, idempotency_key=idempotency_key)
"""
"""Appended to the refund example's tools: each tool logs its run before it acts."""


def ledger_skill(folder: Path) -> tuple[Path, Path]:
    """The refund skill in ``folder`` with tools that log every run (tool and
    idempotency key, fsynced before the tool returns) to ``folder/ledger.txt``.
    Returns (skill file, ledger file)."""
    folder.mkdir(parents=True, exist_ok=True)
    ledger = folder / "ledger.txt"
    ledger.touch()
    base = (REFUND_DIR / "refund_tools.py").read_text()
    (folder / "ledger_tools.py").write_text(base + LEDGER_TOOLS.format(ledger=str(ledger)))
    text = (REFUND_DIR / "domain.yaml").read_text().replace("refund_tools:", "ledger_tools:")
    # Every job refunds ORD-12345: without the limit across jobs, so that each one can
    # (the limit itself is tested in tests/engine/test_once_per.py).
    once_per = EDITS["once_only"].split("\n", 2)[2]
    assert once_per in text, "the refund example's once_per line moved"
    (folder / "domain.yaml").write_text(text.replace(once_per, ""))
    return folder / "domain.yaml", ledger


def ledger_runs(ledger: Path) -> Counter[tuple[str, str]]:
    """How many times each (tool, idempotency key) ran."""
    lines = ledger.read_text().splitlines()
    return Counter((tool, key) for tool, key in (line.split(" ", 1) for line in lines if line))


# -- stores ---------------------------------------------------------------------------


class Crash(Exception):  # noqa: N818 - a simulated process death
    """Raised by :class:`CrashingStore` in place of the process dying."""


class CountingStore(SQLiteJobStore):
    """The SQLite store, counting writes; optionally crashing at the ``crash_at``-th
    write (1-based, creates included), before it is written or right after."""

    def __init__(self, path: Path, *, crash_at: int = 0, after_write: bool = False) -> None:
        super().__init__(path)
        self.writes = 0
        self.crash_at = crash_at
        self.after_write = after_write

    async def _counted(self, write: Callable[[], Awaitable[JobRecord]]) -> JobRecord:
        self.writes += 1
        if self.writes == self.crash_at and not self.after_write:
            raise Crash(f"crash before write {self.writes}")
        saved = await write()
        if self.writes == self.crash_at:
            raise Crash(f"crash after write {self.writes}")
        return saved

    async def create(self, job: JobRecord, events: Sequence[Event] = ()) -> JobRecord:
        """Count (maybe crash), then create."""
        return await self._counted(lambda: super(CountingStore, self).create(job, events))

    async def save(
        self,
        job: JobRecord,
        *,
        expected_version: int,
        events: Sequence[Event] = (),
        model_calls: Sequence[ModelCallRecord] = (),
        durable: bool = False,
        claims: Sequence[Claim] = (),
        released: Sequence[str] = (),
    ) -> JobRecord:
        """Count (maybe crash), then save."""
        parent = super()
        return await self._counted(
            lambda: parent.save(
                job,
                expected_version=expected_version,
                events=events,
                model_calls=model_calls,
                durable=durable,
                claims=claims,
                released=released,
            )
        )


@asynccontextmanager
async def runtime_for(
    db: Path,
    replies: Sequence[Mapping[str, Any]],
    *,
    limits: EngineLimits | None = None,
    store: SQLiteJobStore | None = None,
) -> AsyncIterator[tuple[Runtime, ScriptedModel]]:
    """A runtime on a SQLite file with a scripted model; the store is closed after."""
    store = store or SQLiteJobStore(db)
    model = ScriptedModel(list(replies))
    try:
        yield Runtime(store, model, limits=limits, executors=Executors()), model
    finally:
        await store.close()


def kinds(job: JobView) -> list[str]:
    """The job's event kinds, in order."""
    return [e.kind for e in job.events]


def events_of(job: JobView, kind: str) -> list[Event]:
    """The job's events of one kind."""
    return [e for e in job.events if e.kind == kind]


# -- driving a job to its end ---------------------------------------------------------


class SwitchModel:
    """A model that hands every call to :attr:`current` (one job at a time)."""

    def __init__(self) -> None:
        self.current: ScriptedModel | None = None

    @property
    def name(self) -> str:
        """``switch``."""
        return "switch"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer with the current model."""
        assert self.current is not None
        return await self.current.complete(request)


def fresh_script(model: SwitchModel, replies: Sequence[Mapping[str, Any]]) -> None:
    """Point ``model`` at a new job's script."""
    model.current = ScriptedModel(list(replies))


def continue_script(
    model: SwitchModel, record: JobRecord, replies: Sequence[Mapping[str, Any]]
) -> None:
    """Point ``model`` at the script, past the replies the job already used."""
    scripted = ScriptedModel(list(replies))
    scripted.skip(int(record.state.get("model_calls", 0)))
    model.current = scripted


async def drive(
    runtime: Runtime,
    model: SwitchModel,
    job_id: str,
    replies: Sequence[Mapping[str, Any]],
    ledger: Path,
) -> JobView:
    """Take a job to its end from wherever it is: recover it, approve as supervisor,
    and answer an operator from the ledger (``ran`` if the call's key is in it)."""
    for _ in range(20):
        record = await runtime.store.get(job_id)
        assert record is not None, f"job {job_id} is lost"
        continue_script(model, record, replies)
        if record.status in (JobStatus.QUEUED, JobStatus.RUNNING):
            await runtime.recover(job_id, detail=False)
        elif record.status is JobStatus.PAUSED:
            if record.outcome_class is OutcomeClass.APPROVAL_REQUIRED:
                await decide(runtime, job_id, "approve", role="supervisor", detail=False)
            elif record.outcome_class is OutcomeClass.OPERATOR_ACTION_REQUIRED:
                flight = record.state["in_flight"]
                ran = ledger_runs(ledger)[(flight["tool"], flight["key"])] > 0
                await runtime.resume(
                    job_id, input={"outcome": "ran" if ran else "not_run"}, detail=False
                )
            else:
                await runtime.resume(job_id, input={"order_id": ORDER}, detail=False)
        else:
            return await runtime.view(job_id)
    raise AssertionError(f"job {job_id} did not end")


def run(coro: Any) -> Any:
    """``asyncio.run``, for sync tests."""
    return asyncio.run(coro)


async def decide(
    runtime: Runtime,
    job_id: str,
    approval: str = "approve",
    *,
    role: str | None = "supervisor",
    decided_by: str = "sup",
    **options: Any,
) -> JobView:
    """Approve or deny the call job ``job_id`` waits on, as ``decided_by`` holding
    ``role``, naming the pause it waits under now (unless ``correlation_id`` is given)."""
    if "correlation_id" not in options:
        record = await runtime.store.get(job_id)
        waiting = record.waiting if record is not None else None
        options["correlation_id"] = waiting.correlation_id if waiting is not None else None
    return await runtime.resume(
        job_id,
        approval=approval,  # type: ignore[arg-type]
        role=role,
        decided_by=decided_by,
        **options,
    )
