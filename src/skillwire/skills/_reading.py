"""Reading a skill's files as untrusted input: inside the skill's folder, regular, bounded.

Every file a loader opens is resolved (links followed) and must lie inside the skill's
folder: a package's folder, or the folder holding a single-file skill. A link that
stays inside is fine; one that leaves (to ``/etc/passwd``, to another project) is
refused, as is a path through a linked folder that leaves. The folder itself may be a
link: it is resolved once and the files are judged against where it really is.

Only regular files are read. A FIFO would block the loader until someone writes to it,
a device may never end: the file is looked at before it is opened, opened without
blocking, and looked at again through the open descriptor (it may have been swapped).
Sizes are capped per file and per package; the loader never reads past the cap.
Issue codes::

    file-read            not found, a directory, or the system refused to read it
    file-outside         the path (or a link on it) leads outside the skill's folder
    file-special         a FIFO, a device or a socket, not a regular file
    file-too-large       more than MAX_FILE_BYTES
    package-too-large    the package's files together hold more than MAX_PACKAGE_BYTES
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import NoReturn

from skillwire.core.errors import SkillError
from skillwire.skills._source_issues import issue

__all__ = ["MAX_FILE_BYTES", "MAX_PACKAGE_BYTES", "SkillFolder", "read_skill_bytes"]

MAX_FILE_BYTES = 4 * 2**20
"""The largest skill file read (4 MiB): real exports carry their authoring conversation."""
MAX_PACKAGE_BYTES = 16 * 2**20
"""The most a package's files may hold together (16 MiB)."""

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in after the check does not block
    | getattr(os, "O_NOFOLLOW", 0)  # nor does a link swapped in after resolving
    | getattr(os, "O_CLOEXEC", 0)
)
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class SkillFolder:
    """The folder a skill's files must stay in (resolved once), and, for a package, what
    its files may still hold together."""

    def __init__(self, path: Path, *, limit: int | None = MAX_PACKAGE_BYTES) -> None:
        self.path = path
        self.limit = limit
        """Bytes the files read through this folder may hold together; None: no limit."""
        self.left = limit
        try:
            self._real: str | None = os.path.realpath(path, strict=True)
        except (OSError, ValueError):  # reported by the first read
            self._real = None

    def read(self, path: Path, display: str) -> bytes:
        """The bytes of ``path``, a regular file inside this folder. Every refusal is a
        :class:`SkillError` naming ``display``."""
        real, mode = self._resolve(path, display)
        _check_kind(mode, display)
        try:
            fd = os.open(real, _OPEN_FLAGS)
        except OSError as exc:
            _fail(display, "file-read", f"cannot read file: {exc.strerror or exc}", "")
        try:
            found = os.fstat(fd)  # what was opened, which may not be what was looked at
            _check_kind(found.st_mode, display)
            if found.st_size > MAX_FILE_BYTES:
                _too_large(display)
            data = _read_up_to(fd, MAX_FILE_BYTES + 1, display)
        finally:
            os.close(fd)
        if len(data) > MAX_FILE_BYTES:
            _too_large(display)
        if self.left is not None:
            self.left -= len(data)
            if self.left < 0:
                self._over_budget(display)
        return data

    def _resolve(self, path: Path, display: str) -> tuple[str, int]:
        """Where ``path`` really is, and its mode (not opened: a FIFO is not waited on)."""
        if self._real is None:
            _fail(display, "file-read", "file not found (its folder cannot be read)", "")
        if path.parent == self.path:
            # The usual case, a plain file in the folder: one lstat, no link to follow.
            try:
                found = os.lstat(path)
            except (OSError, ValueError):
                found = None
            if found is not None and not stat.S_ISLNK(found.st_mode):
                return os.path.join(self._real, path.name), found.st_mode
        try:
            real = os.path.realpath(path, strict=True)
            mode = os.stat(real).st_mode
        except FileNotFoundError:
            if os.path.islink(path):
                _fail(display, "file-read", "is a link to nothing (the file it names is gone)", "")
            _fail(display, "file-read", "file not found", "")
        except (OSError, ValueError) as exc:  # a loop of links, a name too long, a NUL
            reason = getattr(exc, "strerror", None) or exc
            _fail(display, "file-read", f"cannot read file: {reason}", "")
        if real == self._real or os.path.commonpath([self._real, real]) != self._real:
            _fail(
                display,
                "file-outside",
                "leads outside the skill's folder (through a link): skillwire reads no file "
                "outside the folder of the skill that names it",
                "copy the file into the skill's folder, or link only to files inside it",
            )
        return real, mode

    def _over_budget(self, display: str) -> NoReturn:
        _fail(
            display,
            "package-too-large",
            f"the package's files hold more than {_mib(self.limit or 0)} together; "
            "this file is past the limit",
            "split the skill, or move large data out of the package",
        )


def read_skill_bytes(path: Path, root: Path, display: str) -> bytes:
    """The bytes of ``path``, a regular file inside the folder ``root`` (no package limit)."""
    return SkillFolder(root, limit=None).read(path, display)


def _check_kind(mode: int, display: str) -> None:
    if stat.S_ISREG(mode):
        return
    for test, what in _KINDS:
        if test(mode):
            if what == "a directory":
                _fail(display, "file-read", "is a directory, not a file", "")
            _fail(display, "file-special", f"is {what}, not a regular file", "")
    _fail(display, "file-special", "is not a regular file", "")


def _read_up_to(fd: int, limit: int, display: str) -> bytes:
    """At most ``limit`` bytes from ``fd``."""
    chunks: list[bytes] = []
    size = 0
    try:
        while size < limit:
            chunk = os.read(fd, min(limit - size, 2**20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        _fail(display, "file-read", f"cannot read file: {exc.strerror or exc}", "")
    return b"".join(chunks)


def _mib(size: int) -> str:
    return f"{size / 2**20:g} MiB"


def _too_large(display: str) -> NoReturn:
    _fail(
        display,
        "file-too-large",
        f"the file is larger than {_mib(MAX_FILE_BYTES)}, the most a skill file may hold",
        "move large data (conversations, fixtures) out of the skill file",
    )


def _fail(display: str, code: str, message: str, hint: str) -> NoReturn:
    raise SkillError([issue(display, (0, 0), code, message, hint)])
