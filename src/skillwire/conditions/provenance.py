"""Where a value came from: the user, the operator, or a tool's output.

A job's gate sees every text the user wrote (the request and the answers to its
questions), the operator's context and every tool result. :class:`Provenance` holds
them as :class:`Source` values and answers, for a value a model proposes as an argument,
which of them it appears in (:meth:`Provenance.origins`) and whether it is *untrusted*
(:meth:`Provenance.untrusted`): found in the output of a tool declared ``trust:
untrusted`` and not in anything the user or operator supplied. Conditions read them as
``origin(args.x)`` and ``untrusted(args.x)``.

This is a heuristic against injected values, not a proof; ``docs/conditions.md``
("Where values came from") states the rule and its limits. In short, texts are
compared after normalisation:

* **compact form**: Unicode NFKC, case folding (``str.casefold`` of the upper case, so
  that ``ß``/``SS`` and ``ı``/``I`` meet), then every character that is not a letter or
  a digit dropped: ``"GB29 nwbk-6016"`` and ``"gb29NWBK6016"`` are one value;
* **e-mail addresses** (``Name <a+tag@Example.com>``, ``mailto:a@example.com``) are
  compared as ``a@example.com``: case folded, display name, ``mailto:`` and ``+tag``
  dropped;
* **URLs** (``https://www.Example.com/pay/?id=1#x``, ``example.com/pay``) are compared
  by host and path: scheme, ``www.``, port, query, fragment and a final ``/`` dropped,
  percent-escapes decoded, case folded.

A value is *identifying* when its compact form has at least :data:`MIN_IDENTIFYING`
characters or it holds an e-mail address or a URL; only identifying values have
origins (a number such as ``120`` appears everywhere). An identifying value is untrusted
when it does not appear in the user's or operator's words and one of its parts does
appear in untrusted output: the whole value, an e-mail address, a URL, a *code* (a run
of words holding digits, ``GB29 NWBK 6016 1331``, of at least
:data:`MIN_IDENTIFYING` characters and 4 digits), a *stretch* of the compact form that
only untrusted output holds (at least :data:`MIN_STRETCH` characters,
:data:`MIN_STRETCH_DIGITS` of them digits), or fragments of at least
:data:`MIN_FRAGMENT` characters, from untrusted output and the user's words, one of
them untrusted output's alone, that together make up the whole value (a value split
across two results, or glued to one the user typed).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from skillwire.conditions._normalise import (
    SEPARATOR,
    Normalised,
    compact,
    email_key,
    fold,
    leaves,
    normalised,
    url_key,
    words,
)

__all__ = [
    "MIN_FRAGMENT",
    "MIN_IDENTIFYING",
    "OPERATOR",
    "PROVENANCE_KEY",
    "USER",
    "Normalised",
    "Provenance",
    "Source",
    "ToolOutputs",
    "Trace",
    "compact",
    "email_key",
    "fold",
    "normalised",
    "tool_origin",
    "url_key",
]

PROVENANCE_KEY: Final = "$provenance"
"""The key under which a condition's variables hold the job's :class:`Provenance`
(not a name a condition can write)."""

MIN_IDENTIFYING: Final = 8
"""Letters and digits a value needs (in compact form) to have origins."""

MIN_FRAGMENT: Final = 6
"""The shortest fragment that counts when a value is put together from several places."""

MAX_COVERED: Final = 512
"""Longest value (compact form) checked for stretches and fragments."""

MIN_STRETCH: Final = 10
"""The shortest untrusted stretch inside a longer value that makes it untrusted ..."""

MIN_STRETCH_DIGITS: Final = 6
"""... when this many of its characters are digits (an account, a phone number)."""

USER: Final = "user"
OPERATOR: Final = "operator"
_MIN_CODE_DIGITS = 4


def tool_origin(tool: str) -> str:
    """The origin of a value found in ``tool``'s output: ``tool:<name>``."""
    return f"tool:{tool}"


@dataclass(frozen=True, slots=True)
class Source:
    """Something the job saw: ``origin`` is ``user``, ``operator`` or ``tool:<name>``;
    ``value`` is a text or any JSON value (a tool's result)."""

    origin: str
    value: Any
    untrusted: bool = False
    """True for the output of a tool declared ``trust: untrusted``."""
    form: Normalised | None = None
    """``value`` normalised, when the caller has it already (else computed once)."""

    def normalised(self) -> Normalised:
        """:attr:`form`, or the value normalised now."""
        return self.form if self.form is not None else normalised(self.value)


@dataclass(frozen=True, slots=True)
class Trace:
    """Why a value is untrusted: the part found and the untrusted outputs holding it."""

    part: str
    origins: tuple[str, ...]


@dataclass(slots=True)
class _Index:
    """The normalised texts of one group of sources."""

    texts: dict[str, str] = field(default_factory=dict)
    """Compact texts by origin, each leaf separated by :data:`SEPARATOR`."""
    emails: dict[str, set[str]] = field(default_factory=dict)
    urls: dict[str, set[str]] = field(default_factory=dict)
    _joined: str | None = field(default=None, init=False, repr=False, compare=False)
    _grams: frozenset[str] | None = field(default=None, init=False, repr=False, compare=False)

    def add(self, origin: str, found: Normalised) -> None:
        self._joined = self._grams = None
        self.emails.setdefault(origin, set()).update(found.emails)
        self.urls.setdefault(origin, set()).update(found.urls)
        before = self.texts.get(origin)
        self.texts[origin] = found.text if before is None else before + SEPARATOR + found.text

    def copy_adding(self, origin: str, found: Normalised) -> _Index:
        """A new index: this one with ``found`` added (this one is not changed)."""
        emails = dict(self.emails)
        emails[origin] = set(emails.get(origin, ())) | found.emails
        urls = dict(self.urls)
        urls[origin] = set(urls.get(origin, ())) | found.urls
        texts = dict(self.texts)
        before = texts.get(origin)
        texts[origin] = found.text if before is None else before + SEPARATOR + found.text
        return _Index(texts, emails, urls)

    def joined(self) -> str:
        """Every compact text of the group, separated (joined once)."""
        if self._joined is None:
            self._joined = SEPARATOR.join(self.texts.values())
        return self._joined

    def grams(self) -> frozenset[str]:
        """Every :data:`MIN_FRAGMENT` characters of :meth:`joined` (collected once: an
        index of tool outputs is shared by the checks of one job)."""
        if self._grams is None:
            text = self.joined()
            self._grams = frozenset(
                text[i : i + MIN_FRAGMENT] for i in range(len(text) - MIN_FRAGMENT + 1)
            )
        return self._grams

    def holding(self, kind: str, key: str) -> list[str]:
        """The origins whose texts hold ``key`` (compact text, e-mail or URL)."""
        if kind == "email":
            return [o for o, found in self.emails.items() if key in found]
        if kind == "url":
            return [o for o, found in self.urls.items() if key in found]
        return [o for o, text in self.texts.items() if key in text]


class ToolOutputs:
    """The tool results of a job, indexed (untrusted ones apart): built once for a
    history and extended by one run at a time, so that checks of one job share it.
    Immutable once built."""

    __slots__ = ("plain", "untrusted")

    def __init__(self, sources: Iterable[Source] = ()) -> None:
        self.untrusted = _Index()
        self.plain = _Index()
        for source in sources:
            (self.untrusted if source.untrusted else self.plain).add(
                source.origin, source.normalised()
            )

    def extended(self, source: Source) -> ToolOutputs:
        """A new index: this one with one more tool result."""
        out = ToolOutputs()
        out.untrusted, out.plain = self.untrusted, self.plain
        if source.untrusted:
            out.untrusted = self.untrusted.copy_adding(source.origin, source.normalised())
        else:
            out.plain = self.plain.copy_adding(source.origin, source.normalised())
        return out


_NO_OUTPUTS = ToolOutputs()


_OWN = frozenset({USER, OPERATOR})


@functools.lru_cache(maxsize=256)
def _own_index(forms: tuple[tuple[str, str | Normalised], ...]) -> _Index:
    """The index of what the user and the operator supplied, by their texts or
    normalised values (the same request is indexed once for the checks of a job; the
    index is never changed after)."""
    own = _Index()
    for origin, found in forms:
        own.add(origin, found if isinstance(found, Normalised) else normalised(found))
    return own


class Provenance:
    """The sources of one job, normalised on first use; answers for values.

    Build one per gate check from what the caller passes (the gate does); it is not
    shared between threads while it builds its indexes.
    """

    __slots__ = ("_given", "_outputs", "_own", "_plain", "_traces", "_untrusted")

    def __init__(self, sources: Iterable[Source], outputs: ToolOutputs | None = None) -> None:
        """``sources`` in any order; ``outputs``: tool results indexed already (then
        ``sources`` holds the rest)."""
        self._given = tuple(sources)
        self._outputs = outputs
        self._own: _Index | None = None
        self._untrusted: _Index | None = None
        self._plain: _Index | None = None
        self._traces: dict[str, Trace | None] = {}

    @property
    def sources(self) -> tuple[Source, ...]:
        """What the job saw, as given."""
        return self._given

    @property
    def has_untrusted(self) -> bool:
        """Whether any source is untrusted (else nothing is untrusted)."""
        if self._outputs is not None and self._outputs.untrusted.texts:
            return True
        return any(source.untrusted for source in self._given)

    def _indexes(self) -> tuple[_Index, _Index, _Index]:
        if self._own is None or self._untrusted is None or self._plain is None:
            mine: list[tuple[str, str | Normalised]] = []
            loose: list[Source] = []
            for source in self._given:
                if source.origin not in _OWN:
                    loose.append(source)
                elif type(source.value) is str and source.form is None:
                    mine.append((source.origin, source.value))  # a text: its hash is kept
                else:
                    mine.append((source.origin, source.normalised()))
            own = _own_index(tuple(mine))
            tools = ToolOutputs(loose) if loose else _NO_OUTPUTS
            untrusted, plain = tools.untrusted, tools.plain
            if self._outputs is not None:
                for origin, text in untrusted.texts.items():  # tool sources given loose
                    found = Normalised(
                        text, frozenset(untrusted.emails[origin]), frozenset(untrusted.urls[origin])
                    )
                    self._outputs = self._outputs.extended(Source(origin, None, True, found))
                for origin, text in plain.texts.items():
                    found = Normalised(
                        text, frozenset(plain.emails[origin]), frozenset(plain.urls[origin])
                    )
                    self._outputs = self._outputs.extended(Source(origin, None, False, found))
                untrusted, plain = self._outputs.untrusted, self._outputs.plain
            self._own, self._untrusted, self._plain = own, untrusted, plain
        return self._own, self._untrusted, self._plain

    def origins(self, value: Any) -> list[str]:
        """Where an identifying value (or any part of it) appears: ``user``,
        ``operator``, ``tool:<name>``, sorted; empty for a value found nowhere or not
        identifying. For a list or map, the union over its texts."""
        found: set[str] = set()
        for leaf in leaves(value):
            found.update(self._leaf_origins(leaf))
        return sorted(found, key=lambda o: (o != USER, o != OPERATOR, o))

    def untrusted(self, value: Any) -> bool:
        """Whether a text of ``value`` is untrusted (see the module's rule)."""
        return self.trace(value) is not None

    def trace(self, value: Any) -> Trace | None:
        """The first untrusted part of ``value`` and where it was found, or None."""
        if not self.has_untrusted:
            return None
        for leaf in leaves(value):
            found = self._leaf_trace(leaf)
            if found is not None:
                return found
        return None

    def _leaf_origins(self, text: str) -> set[str]:
        own, untrusted, plain = self._indexes()
        found: set[str] = set()
        for kind, key in _parts(text):
            for index in (own, untrusted, plain):
                found.update(index.holding(kind, key))
        whole = compact(text)
        if not found and len(whole) >= MIN_IDENTIFYING:
            part = _mixed(whole, untrusted.joined(), own.joined(), untrusted.grams())
            if part is not None:
                found.update(_holders(whole, untrusted))
        return found

    def _leaf_trace(self, text: str) -> Trace | None:
        if text in self._traces:
            return self._traces[text]
        found = self._traced(text)
        self._traces[text] = found
        return found

    def _traced(self, text: str) -> Trace | None:
        whole = compact(text)
        if len(whole) < MIN_IDENTIFYING and "@" not in text and "." not in text:
            return None  # not identifying: no address, no URL, too short
        own, untrusted, _ = self._indexes()
        if whole and own.holding("text", whole):
            return None  # the user's or operator's own words
        if len(whole) >= MIN_IDENTIFYING:
            holders = untrusted.holding("text", whole)
            if holders:
                return Trace(_short(text), tuple(sorted(holders)))
        for kind, key in _parts(text):
            if own.holding(kind, key):
                continue
            holders = untrusted.holding(kind, key)
            if holders:
                return Trace(_shown_part(text, kind, key), tuple(sorted(holders)))
        if len(whole) >= MIN_IDENTIFYING:
            part = _mixed(whole, untrusted.joined(), own.joined(), untrusted.grams())
            if part is not None:
                shown = _short(text) if part == whole else _short(part)
                return Trace(shown, tuple(sorted(_holders(whole, untrusted))))
        return None


def _holders(part: str, untrusted: _Index) -> set[str]:
    """The untrusted origins holding ``part`` or, for a value put together, a piece."""
    found = set(untrusted.holding("text", part))
    if not found:
        for origin, text in untrusted.texts.items():
            if any(part[i : i + MIN_FRAGMENT] in text for i in range(len(part) - MIN_FRAGMENT + 1)):
                found.add(origin)
    return found


@functools.lru_cache(maxsize=4096)
def _parts(text: str) -> tuple[tuple[str, str], ...]:
    """The identifying parts of one text: ``(kind, key)`` with kind ``text`` (a compact
    form), ``email`` or ``url``. The whole comes first."""
    found: list[tuple[str, str]] = []
    whole = compact(text)
    if len(whole) >= MIN_IDENTIFYING:
        found.append(("text", whole))
    split = words(text)
    for word in split:
        email = email_key(word)
        if email is not None:
            found.append(("email", email))
            continue
        url = url_key(word)
        if url is not None:
            found.append(("url", url))
    for code in _codes(split):
        if ("text", code) not in found:
            found.append(("text", code))
    return tuple(found)


def _codes(words: Sequence[str]) -> Iterator[str]:
    """Runs of words that look like parts of one code (``GB29 NWBK 6016 1331``): each
    word holds a digit, or is at most 4 capital letters and digits; a run counts with at
    least :data:`MIN_IDENTIFYING` characters, :data:`_MIN_CODE_DIGITS` of them digits."""
    run: list[str] = []
    for word in [*words, ""]:
        letters = "".join(ch for ch in word if ch.isalnum())
        digit = any(ch.isdigit() for ch in letters)
        capital = 0 < len(letters) <= 4 and letters.upper() == letters
        if letters and (digit or capital):
            run.append(letters)
            continue
        if run:
            code = compact("".join(run))
            if len(code) >= MIN_IDENTIFYING and sum(ch.isdigit() for ch in code) >= 4:
                yield code
        run = []


def _mixed(whole: str, untrusted: str, own: str, grams: frozenset[str] | None = None) -> str | None:
    """An untrusted stretch of ``whole`` that the user's and operator's texts (``own``)
    cannot supply: a *stretch* (at least :data:`MIN_STRETCH` letters and digits,
    :data:`MIN_STRETCH_DIGITS` of them digits, found in ``untrusted``), or else the
    whole value when fragments of ``untrusted`` and ``own`` (each at least
    :data:`MIN_FRAGMENT` long, one of them the untrusted one's alone) make it up.
    None when there is neither."""
    size = len(whole)
    if size > MAX_COVERED or not untrusted:
        return None
    if grams is not None and grams.isdisjoint(
        {whole[i : i + MIN_FRAGMENT] for i in range(size - MIN_FRAGMENT + 1)}
    ):
        return None  # no fragment of untrusted output at all: neither a stretch nor a cover
    reach: list[bool | None] = [None] * (size + 1)
    reach[0] = False
    for start in range(size):
        came = reach[start]
        far_untrusted = _longest_at(whole, start, untrusted, grams)
        far_own = _longest_at(whole, start, own) if own else 0
        if far_untrusted > far_own:
            stretch = whole[start : start + far_untrusted]
            digits = sum(ch.isdigit() for ch in stretch)
            if far_untrusted >= MIN_STRETCH and digits >= MIN_STRETCH_DIGITS:
                return stretch
        if came is None:
            continue
        for end in range(start + MIN_FRAGMENT, start + max(far_untrusted, far_own) + 1):
            mark = came or end > start + far_own  # beyond what the user's texts hold
            if reach[end] is None or (mark and not reach[end]):
                reach[end] = mark
    return whole if reach[size] else None


def _longest_at(whole: str, start: int, text: str, grams: frozenset[str] | None = None) -> int:
    """The length of the longest prefix of ``whole[start:]`` found in ``text``
    (``grams``: every :data:`MIN_FRAGMENT` characters of ``text``, when known)."""
    low, high = 0, len(whole) - start
    if high < MIN_FRAGMENT:
        return 0
    if whole[start : start + MIN_FRAGMENT] not in (text if grams is None else grams):
        return 0
    low = MIN_FRAGMENT
    while low < high:
        middle = (low + high + 1) // 2
        if whole[start : start + middle] in text:
            low = middle
        else:
            high = middle - 1
    return low


def _shown_part(text: str, kind: str, key: str) -> str:
    if kind in ("email", "url"):
        return key
    if compact(text) == key:
        return _short(text)
    return _short(key)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
