"""The contract of the optional :class:`~skillwire.core.store.SkillVersionStore`, run
against every store that keeps skill versions: SQLite and PostgreSQL (on a throwaway
server: see ``conftest.py``).

The in-memory store of ``skillwire.testing`` keeps no versions (a store without the
protocol is allowed: its jobs resume on the skill as loaded); it is checked to say so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from tests.store.test_contract import Backend

from skillwire.core.errors import NotFoundError
from skillwire.core.store import SkillVersion, SkillVersionStore

BACKENDS = ["sqlite", "postgres"]

BINARY = bytes(range(256)) + b"\x00\xff\xfe"
FILES = {
    "skill.yaml": b"id: refund\nname: Refund\n",
    "donn\u00e9es/r\u00e8gles \u2603.yaml": "tool: r\u00e9sum\u00e9 \U0001f600\n".encode(),
    "assets/blob.bin": BINARY,
    "empty.txt": b"",
}
HOSTILE = 'it\'s "x"; DROP TABLE skill_versions; --%_\\*\x00\u202e'


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Each store that keeps versions in turn, on a new, empty database."""
    if request.param == "sqlite":
        from skillwire.store import SQLiteJobStore

        return Backend("sqlite", lambda: SQLiteJobStore(tmp_path / "jobs.db"))
    from skillwire.store.postgres import PostgresJobStore

    dsn = request.getfixturevalue("pg_dsn")
    return Backend("postgres", lambda: PostgresJobStore(dsn))


def run(
    backend: Backend, body: Callable[[Callable[[], SkillVersionStore]], Awaitable[None]]
) -> None:
    """Run ``body`` with an opener of handles (each a SkillVersionStore), closing every
    handle at the end."""

    async def main() -> None:
        handles = []

        def opener() -> SkillVersionStore:
            handle = backend.open()
            handles.append(handle)
            assert isinstance(handle, SkillVersionStore), backend.name
            return handle

        try:
            await body(opener)
        finally:
            for handle in handles:
                await handle.close()

    asyncio.run(main())


def version(skill_id: str, number: int, files: dict[str, bytes] | None = None) -> SkillVersion:
    return SkillVersion(
        skill_id,
        f"{number:016x}",
        f"/skills/{skill_id}/v{number}",
        "package",
        dict(FILES if files is None else files, **{"n.txt": str(number).encode()}),
    )


def test_the_memory_store_keeps_no_versions() -> None:
    from skillwire.testing import MemoryJobStore

    assert not isinstance(MemoryJobStore(), SkillVersionStore)


def test_put_once_then_false_and_files_read_back_byte_identical(backend: Backend) -> None:
    async def body(open_: Callable[[], SkillVersionStore]) -> None:
        store = open_()
        v1 = version("refund", 1)
        assert await store.put_skill_version(v1) is True
        assert await store.put_skill_version(v1) is False
        # a second put with other files under the same version changes nothing
        assert await store.put_skill_version(version("refund", 1, {"x": b"y"})) is False
        (kept,) = await store.skill_versions("refund")
        assert (kept.skill_id, kept.version, kept.source, kept.format) == (
            "refund",
            v1.version,
            v1.source,
            "package",
        )
        assert dict(kept.files) == dict(v1.files)
        assert all(type(data) is bytes for data in kept.files.values())
        assert kept.files["assets/blob.bin"] == BINARY
        assert kept.created_at and not kept.pinned
        # another handle (another process) sees the same
        assert await open_().skill_versions("refund") == [kept]

    run(backend, body)


def test_versions_read_oldest_first(backend: Backend) -> None:
    async def body(open_: Callable[[], SkillVersionStore]) -> None:
        store = open_()
        # versions are content hashes: kept order, not hash order, decides
        numbers = [9, 3, 7, 1, 5, 2]
        for number in numbers:
            assert await store.put_skill_version(version("refund", number))
        assert await store.put_skill_version(version("refund", 3)) is False
        kept = await store.skill_versions("refund")
        assert [v.version for v in kept] == [f"{n:016x}" for n in numbers]
        assert [v.created_at for v in kept] == sorted(v.created_at for v in kept)
        assert [v.files["n.txt"] for v in kept] == [str(n).encode() for n in numbers]
        assert await store.skill_versions("nothing") == []

    run(backend, body)


def test_pin_unpin_and_pin_an_unknown_version(backend: Backend) -> None:
    async def body(open_: Callable[[], SkillVersionStore]) -> None:
        store = open_()
        v1, v2 = version("refund", 1), version("refund", 2)
        await store.put_skill_version(v1)
        await store.put_skill_version(v2)

        def pinned(kept: list[SkillVersion]) -> list[str]:
            return [v.version for v in kept if v.pinned]

        await store.pin_skill("refund", v1.version)
        assert pinned(await store.skill_versions("refund")) == [v1.version]
        await store.pin_skill("refund", v2.version)  # a pin replaces the pin
        assert pinned(await open_().skill_versions("refund")) == [v2.version]
        for unknown in ("f" * 16, v1.version[:8], "", "' OR '1'='1", "%"):
            with pytest.raises(NotFoundError):
                await store.pin_skill("refund", unknown)
        with pytest.raises(NotFoundError):  # a version of another skill is not this one's
            await store.pin_skill("other", v1.version)
        assert pinned(await store.skill_versions("refund")) == [v2.version]
        await store.pin_skill("refund", None)
        assert pinned(await store.skill_versions("refund")) == []
        await store.pin_skill("refund", None)  # removing no pin is no error
        assert [v.version for v in await store.skill_versions("refund")] == [
            v1.version,
            v2.version,
        ]

    run(backend, body)


def test_two_skills_are_isolated(backend: Backend) -> None:
    async def body(open_: Callable[[], SkillVersionStore]) -> None:
        store = open_()
        a1, b1 = version("alpha", 1, {"a": b"A"}), version("beta", 1, {"b": b"B"})
        assert await store.put_skill_version(a1)
        assert await store.put_skill_version(b1)  # the same version, another skill
        await store.put_skill_version(version("alpha", 2))
        await store.pin_skill("beta", b1.version)
        alpha = await store.skill_versions("alpha")
        beta = await store.skill_versions("beta")
        assert [v.version for v in alpha] == [a1.version, f"{2:016x}"]
        assert [(v.version, dict(v.files), v.pinned) for v in beta] == [
            (b1.version, {"b": b"B", "n.txt": b"1"}, True)
        ]
        assert not any(v.pinned for v in alpha)
        for near in ("Alpha", "alph", "alpha ", "alp%", "alp_a", "%", "_"):
            assert await store.skill_versions(near) == []

    run(backend, body)


def test_a_hostile_skill_id_is_only_data(backend: Backend) -> None:
    async def body(open_: Callable[[], SkillVersionStore]) -> None:
        store = open_()
        plain = version("it", 1, {"p": b"P"})
        await store.put_skill_version(plain)
        hostile = version(HOSTILE, 1, {"name with ' and \" and %": b"\x00H"})
        assert await store.put_skill_version(hostile) is True
        assert await store.put_skill_version(hostile) is False
        await store.pin_skill(HOSTILE, hostile.version)
        (kept,) = await store.skill_versions(HOSTILE)
        assert dict(kept.files) == dict(hostile.files) and kept.pinned
        # U+0000 is kept by SQLite; PostgreSQL's text holds it as U+FFFD, as job ids
        assert kept.skill_id.replace("\ufffd", "\x00") == HOSTILE
        assert kept.source.replace("\ufffd", "\x00") == hostile.source
        (other,) = await store.skill_versions("it")
        assert dict(other.files) == {"p": b"P", "n.txt": b"1"} and not other.pinned
        assert await store.skill_versions("%") == []
        with pytest.raises(NotFoundError):
            await store.pin_skill(HOSTILE, "' OR 1=1 --")
        # the tables are still there
        assert [v.version for v in await store.skill_versions("it")] == [plain.version]

    run(backend, body)


def test_a_file_name_holding_nul_or_a_lone_surrogate_reads_back(backend: Backend) -> None:
    async def body(open_: Callable[[], SkillVersionStore]) -> None:
        store = open_()
        odd = {"a\x00b": b"nul", "bad\udc80name": b"surrogate", "\u202eevil": b"rtl"}
        assert await store.put_skill_version(version("odd", 1, odd))
        (kept,) = await store.skill_versions("odd")
        assert dict(kept.files) == dict(odd, **{"n.txt": b"1"})

    run(backend, body)
