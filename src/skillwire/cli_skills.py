"""``skillwire skills history``, ``diff`` and ``pin``: the versions a job store keeps."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

if TYPE_CHECKING:
    from skillwire.core.store import SkillVersionStore
    from skillwire.engine import JobView, Runtime
    from skillwire.skills.model import Skill

__all__ = ["skills_app", "start_on_version"]

T = TypeVar("T")

skills_app = typer.Typer(
    help="Skill versions kept in the job store: history, diff, pin.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

DbOption = Annotated[
    Path | None,
    typer.Option(
        "--db",
        help="SQLite file (default as for skillwire jobs: $SKILLWIRE_DB or runtime.db, "
        "either may be a postgresql:// URL).",
    ),
]


async def start_on_version(
    runtime: Runtime, skill: Skill, message: str, context: dict[str, Any]
) -> JobView:
    """Start a job on ``skill`` as ``skillwire run`` does: its version kept in the store,
    or the operator's pinned version instead (said on standard error)."""
    from skillwire.cli_output import console, styled
    from skillwire.versioning import starting_skill

    chosen, note = await starting_skill(runtime.store, skill)
    if note:
        console(stderr=True, soft_wrap=True).print(styled(("note:", "yellow"), " ", note))
    return await runtime.start(chosen, message, context=context)


def _with_store(db: Path | None, work: Callable[[SkillVersionStore], Awaitable[T]]) -> T:
    """Run ``work`` on the job store of ``db`` (default as for ``skillwire jobs``): a
    SQLite file that must exist, or a ``postgresql://`` URL."""
    from skillwire.assembly import db_exists, db_label, default_db, open_store
    from skillwire.config import load_config
    from skillwire.core.errors import NotFoundError, UsageError
    from skillwire.core.store import SkillVersionStore

    where = db if db is not None else default_db(load_config())
    if not db_exists(where):
        raise NotFoundError(f"no job database at {db_label(where)}")

    async def main() -> T:
        store = open_store(where)
        try:
            if not isinstance(store, SkillVersionStore):
                raise UsageError(f"the job store at {db_label(where)} keeps no skill versions")
            return await work(store)
        finally:
            await store.close()

    return asyncio.run(main())


@skills_app.command("history")
def history(
    name: Annotated[str, typer.Argument(help="The skill's id.")],
    db: DbOption = None,
) -> None:
    """The versions of a skill the store keeps, oldest first, and which is pinned."""
    from rich.table import Table

    from skillwire.cli_jobs import guard
    from skillwire.cli_output import console, terminal_width
    from skillwire.core.errors import NotFoundError

    def body() -> None:
        async def read(store: SkillVersionStore) -> list[Any]:
            return await store.skill_versions(name)

        versions = _with_store(db, read)
        if not versions:
            raise NotFoundError(f"no versions of skill '{name}' in this store")
        table = Table(title=f"versions of {name}")
        for col in ("version", "first seen", "files", "source", "pinned"):
            table.add_column(col, overflow="fold")
        for v in versions:
            table.add_row(
                v.version,
                v.created_at[:19].replace("T", " "),
                str(len(v.files)),
                v.source,
                "pinned" if v.pinned else "",
            )
        console(width=terminal_width()).print(table)

    guard(body)


@skills_app.command("diff")
def diff(
    name: Annotated[str, typer.Argument(help="The skill's id.")],
    old: Annotated[str, typer.Argument(help="The older version (or a unique start of it).")],
    new: Annotated[str, typer.Argument(help="The newer version (or a unique start of it).")],
    db: DbOption = None,
) -> None:
    """What changed between two versions: tools, rules, approvals, workflows, contract."""
    from skillwire.cli_jobs import guard
    from skillwire.cli_output import console
    from skillwire.skills.versions import diff_skills, load_version
    from skillwire.versioning import find_version, version_dir

    def body() -> None:
        async def both(store: SkillVersionStore) -> tuple[Any, Any]:
            return await find_version(store, name, old), await find_version(store, name, new)

        first, second = _with_store(db, both)
        lines = diff_skills(load_version(first, version_dir()), load_version(second, version_dir()))
        out = console(soft_wrap=True)
        out.print(f"{name}: {first.version} -> {second.version}")
        for line in lines or ["no change in rules, tools or policies"]:
            out.print(line)

    guard(body)


@skills_app.command("pin")
def pin(
    name: Annotated[str, typer.Argument(help="The skill's id.")],
    version: Annotated[
        str | None, typer.Argument(help="The version new jobs start on (a unique start).")
    ] = None,
    clear: Annotated[
        bool, typer.Option("--clear", help="Remove the pin: new jobs use the loaded version.")
    ] = False,
    db: DbOption = None,
) -> None:
    """Pin a kept version (a rollback): new jobs start on it, whatever is loaded; jobs
    already started keep theirs. A running server applies it at its next reload."""
    from skillwire.cli_jobs import guard
    from skillwire.core.errors import UsageError
    from skillwire.versioning import find_version

    def body() -> None:
        if clear == (version is not None):
            raise UsageError("give a VERSION to pin, or --clear")

        async def apply(store: SkillVersionStore) -> str:
            if version is None:
                await store.pin_skill(name, None)
                return f"{name}: pin removed"
            found = await find_version(store, name, version)
            await store.pin_skill(name, found.version)
            return f"{name}: new jobs start on version {found.version}"

        typer.echo(_with_store(db, apply))

    guard(body)
