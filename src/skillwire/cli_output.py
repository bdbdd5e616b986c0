"""What the command line prints with rich: consoles that never read markup or emoji.

Everything the CLI prints may hold text a user wrote (a skill's conditions and line
numbers, a reply, a tool name), so no console here interprets it: ``[prod, staging]``
stays, ``:100:`` stays. Colour is given with :class:`~rich.text.Text` styles instead
(:func:`styled`), never with markup in a string.
"""

from __future__ import annotations

import shutil

from rich.console import Console
from rich.text import Text

__all__ = ["console", "styled", "terminal_width"]


def terminal_width() -> int:
    """The terminal's width, at least 100 columns; 140 when the output is no terminal."""
    return max(100, shutil.get_terminal_size((140, 40)).columns)


def console(*, stderr: bool = False, width: int | None = None, soft_wrap: bool = False) -> Console:
    """A console that prints text as written: no markup, no emoji codes, no highlighting."""
    return Console(
        stderr=stderr,
        width=width,
        soft_wrap=soft_wrap,
        markup=False,
        emoji=False,
        highlight=False,
    )


def styled(*parts: str | tuple[str, str]) -> Text:
    """Text from plain parts and ``(text, style)`` pairs; no part is read as markup."""
    return Text.assemble(*parts)
