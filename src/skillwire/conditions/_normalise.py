"""How provenance compares texts: folded, compacted, e-mail addresses and URLs keyed.

The rule is described in :mod:`skillwire.conditions.provenance` (and
``docs/conditions.md``, "Where values came from"); this module holds the normalisation it
relies on, each function cached by its text.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote, urlsplit

__all__ = [
    "SEPARATOR",
    "Normalised",
    "compact",
    "email_key",
    "fold",
    "leaves",
    "normalised",
    "url_key",
    "words",
]

SEPARATOR: Final = "|"
"""Between two texts of a source: not a letter or digit, so no compact value spans two."""
_TRIM = "<>()[]{}\"'`,;:!?*"


def fold(text: str) -> str:
    """``text`` with Unicode compatibility forms and case folded (NFKC, then the case
    folding of the upper case, then NFKC again)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).upper().casefold())


@functools.lru_cache(maxsize=8192)
def compact(text: str) -> str:
    """The folded text with everything but letters and digits dropped."""
    return "".join(ch for ch in fold(text) if ch.isalnum())


@functools.lru_cache(maxsize=8192)
def email_key(token: str) -> str | None:
    """The normalised e-mail address in one word of text (``<A+x@B.com>,`` gives
    ``a@b.com``), or None when it holds none."""
    word = fold(token).strip(_TRIM + ".")
    word = word.removeprefix("mailto:")
    if word.count("@") != 1:
        return None
    local, domain = word.split("@")
    local = local.split("+", 1)[0].strip(_TRIM)
    domain = domain.strip(_TRIM + ".")
    labels = domain.split(".")
    if not local or len(labels) < 2 or not all(_label(part) for part in labels):
        return None
    return f"{local}@{domain}"


@functools.lru_cache(maxsize=8192)
def url_key(token: str) -> str | None:
    """The host and path of the URL in one word of text (``https://www.Ex.com/a/?q=1``
    gives ``ex.com/a``), or None when it holds none. A word without a scheme counts
    when it starts with ``www.`` or its host ends in a label of letters (``ex.com/a``)."""
    word = token.strip(_TRIM + ".")
    if "@" in word and "://" not in word:
        return None  # an e-mail address
    folded = fold(word)
    if "://" in folded:
        scheme = folded.split("://", 1)[0]
        if scheme not in ("http", "https", "ftp"):
            return None
    else:
        if "." not in folded.split("/", 1)[0]:
            return None
        folded = "http://" + folded
    try:
        parts = urlsplit(folded)
        host = parts.hostname or ""
    except ValueError:
        return None
    host = host.removeprefix("www.").rstrip(".")
    labels = host.split(".")
    if len(labels) < 2 or not all(_label(part) for part in labels):
        return None
    if not labels[-1].isalpha() or len(labels[-1]) < 2:
        return None
    path = fold(unquote(parts.path)).rstrip("/")
    return host + path


def _label(part: str) -> bool:
    return bool(part) and all(ch.isalnum() or ch == "-" for ch in part)


def leaves(value: Any) -> list[str]:
    """The texts in a JSON value: its strings, and its numbers written out (a whole
    float as an integer); booleans, nulls and keys are not texts. In order."""
    if type(value) is str:
        return [value]
    found: list[str] = []
    _collect(value, found)
    return found


def _collect(value: Any, found: list[str]) -> None:
    kind = type(value)
    if kind is str:
        found.append(value)
    elif kind is bool or value is None:
        return
    elif kind is int:
        found.append(str(value))
    elif kind is float:
        found.append(str(int(value)) if value.is_integer() else repr(value))
    elif kind is dict:
        for item in value.values():
            _collect(item, found)
    elif kind is list or kind is tuple or (isinstance(value, Sequence) and kind is not bytes):
        for item in value:
            _collect(item, found)


@dataclass(frozen=True, slots=True)
class Normalised:
    """A value's texts as provenance compares them: the compact texts (separated), and
    the e-mail addresses and URLs found in them."""

    text: str
    emails: frozenset[str]
    urls: frozenset[str]


def normalised(value: Any) -> Normalised:
    """The normalised form of a JSON value (what :class:`Provenance` indexes; a caller
    may compute it once for a value it passes again, such as a tool run's result).
    A text's form is kept (the user's request is normalised once, not per check)."""
    if type(value) is str:
        return _normalised_text(value)
    return _normalised(value)


@functools.lru_cache(maxsize=1024)
def _normalised_text(text: str) -> Normalised:
    return _normalised(text)


def _normalised(value: Any) -> Normalised:
    texts: list[str] = []
    emails: set[str] = set()
    urls: set[str] = set()
    for leaf in leaves(value):
        texts.append(compact(leaf))
        for word in words(leaf):
            found = email_key(word)
            if found is not None:
                emails.add(found)
                continue
            found = url_key(word)
            if found is not None:
                urls.add(found)
    return Normalised(SEPARATOR.join(texts), frozenset(emails), frozenset(urls))


def words(text: str) -> list[str]:
    return text.split()
