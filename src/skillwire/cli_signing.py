"""``skillwire signing-key new``, ``sign`` and ``verify``: signed skill folders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["sign_command", "signing_app", "verify_command"]

signing_app = typer.Typer(
    help="Keys that sign skills (skillwire sign, skillwire verify).",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@signing_app.command("new")
def new_key(
    file: Annotated[
        Path, typer.Argument(help="Where to write the private key (FILE.pub: public).")
    ],
) -> None:
    """Make an Ed25519 key pair: the private key in FILE (readable by you only), the
    public key in FILE.pub. Never overwrites a file."""
    import os

    from skillwire.cli_jobs import guard
    from skillwire.core.errors import UsageError
    from skillwire.skills.signing import key_id, load_public_key, new_key_pair

    def body() -> None:
        public_file = file.with_name(file.name + ".pub")
        for path in (file, public_file):
            if path.exists() or path.is_symlink():
                raise UsageError(f"{path} exists: not overwritten")
        private, public = new_key_pair()
        try:
            handle = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            raise UsageError(f"cannot write {file}: {exc.strerror}") from None
        with os.fdopen(handle, "wb") as out:
            out.write(private)
        public_file.write_bytes(public)
        typer.echo(f"private key: {file} (keep it secret)")
        typer.echo(f"public key:  {public_file} (key {key_id(load_public_key(public))})")

    guard(body)


def _skill_folder(path: Path) -> tuple[Path, str]:
    """The folder of the one skill at ``path`` and its id (UsageError otherwise)."""
    from skillwire.core.errors import UsageError
    from skillwire.skills import discover, load_paths

    found = [(kind, p) for kind, p in discover([path]) if kind in ("package", "single")]
    if len(found) != 1:
        raise UsageError(f"{path}: expected one skill, found {len(found)}")
    kind, where = found[0]
    folder = where if kind == "package" else where.parent
    others = [p for k, p in discover([folder]) if k in ("package", "single")]
    if len(others) != 1:
        raise UsageError(
            f"{folder} holds {len(others)} skills: a signature covers a whole folder, "
            "so sign a folder of one skill"
        )
    result = load_paths([where])
    if len(result.skills) != 1:
        errors = [str(i) for rep in result.report.skills for i in rep.errors]
        raise UsageError(f"{where} does not load:\n" + "\n".join(errors))
    return folder, next(iter(result.skills))


def sign_command(
    path: Annotated[Path, typer.Argument(help="The skill: a package folder or a skill file.")],
    key: Annotated[Path, typer.Option("--key", help="The private key file.")],
) -> None:
    """Sign a skill's folder: every file's SHA-256 and the skill's id, signed with
    Ed25519, written to SKILLWIRE-SIGNATURE.json in the folder."""
    from skillwire.cli_jobs import guard
    from skillwire.core.errors import UsageError
    from skillwire.skills.signing import sign_folder

    def body() -> None:
        folder, skill_id = _skill_folder(path)
        try:
            private = key.read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read the key {key}: {exc.strerror}") from None
        written = sign_folder(folder, private, skill_id)
        typer.echo(f"signed {skill_id}: {written}")

    guard(body)


def verify_command(
    path: Annotated[Path, typer.Argument(help="The skill: a package folder or a skill file.")],
    trust: Annotated[
        list[Path] | None,
        typer.Option(
            "--trust",
            help="A trusted public key (repeatable); default the keys of [trust] in "
            "skillwire.toml, else any key (integrity only).",
        ),
    ] = None,
) -> None:
    """Check a skill's signature: exit 1 when it is unsigned, changed since it was
    signed (a file changed, added, removed or renamed, the manifest edited, another
    skill's signature), or signed by a key that is not trusted."""
    from skillwire.cli_jobs import guard
    from skillwire.cli_output import console, styled
    from skillwire.config import load_config
    from skillwire.skills.signing import trusted_keys, verify_folder

    def body() -> None:
        folder, skill_id = _skill_folder(path)
        config = load_config()
        keys: list[bytes] | None = None
        if trust:
            keys = trusted_keys(trust)
        elif config.trust.keys:
            base = Path(config.source).parent if config.source else Path.cwd()
            keys = trusted_keys(base / k for k in config.trust.keys)
        verdict = verify_folder(folder, skill_id=skill_id, trusted=keys)
        out = console(soft_wrap=True)
        if verdict.ok:
            note = "" if keys is not None else " (no trusted key given: integrity only)"
            out.print(styled(("ok", "green"), f" {verdict.reason}{note}"))
            raise typer.Exit(0)
        out.print(styled((verdict.status, "bold red"), f" {verdict.reason}"))
        for problem in verdict.problems[5:]:
            out.print(f"  {problem}")
        raise typer.Exit(1)

    guard(body)
