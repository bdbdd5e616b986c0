"""Secrets out of error text: :func:`redact` before an error is kept or shown.

A model error quotes what the server or the SDK said, and that may hold a secret: the
password of a ``base_url`` (``http://user:pw@host/v1``), a key an upstream echoes
("Incorrect API key provided: sk-..."), a header it repeats. Every :class:`ModelError` is
redacted when it is made, so no event, model-call record, database row, page or command
output ever holds one. What is replaced by ``[redacted]``:

- the values the caller names (the configured key, the URL's password), exactly;
- the user information of any URL (``scheme://[redacted]@host``);
- query parameters named like a secret (``?key=``, ``api_key=``, ``access_token=``, ...);
- a long token after a word such as ``key``, ``token``, ``secret`` or ``password``;
- the known shapes of keys wherever they stand: ``sk-...`` (OpenAI, Anthropic's
  ``sk-ant-...``), ``Bearer ...`` and ``Basic ...``, Google's ``AIza...``, JSON Web
  Tokens, and the GitHub, Hugging Face, Slack, Groq, xAI and AWS key prefixes.

Every pattern runs in time linear in the text (possessive quantifiers, and lookbehinds
that keep a match from starting inside a word), so a huge error body costs little.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

__all__ = ["MIN_SECRET_LENGTH", "REDACTED", "redact", "url_credentials"]

REDACTED = "[redacted]"
"""What stands where a secret was."""

MIN_SECRET_LENGTH = 4
"""Named secrets shorter than this are not replaced: they would garble ordinary words,
and a key that short protects nothing."""

_URL_USERINFO = re.compile(r"(?<![A-Za-z0-9+.\-])([A-Za-z][A-Za-z0-9+.\-]*+://)(?:[^\s/?#@]*+@)++")
"""``scheme://user:password@`` up to the last ``@`` of the authority."""

_QUERY_SECRET = re.compile(
    r"(?i)([?&;][a-z0-9_.\-]*(?:key|token|secret|passw(?:or)?d|pwd|sig(?:nature)?|auth"
    r"|credentials?)=)[^&;#\s\"'<>]++"
)
"""A query parameter whose name says it holds a secret, and its value."""

_NAMED_SECRET = re.compile(
    r"(?i)((?<![a-z0-9])(?:(?:api|access|auth|secret|private|client)[_\-]?)?"
    r"(?:key|token|secret|passw(?:or)?d|pwd|credentials?|authorization)s?"
    r"(?:\s++(?:provided|is|was|value)\b)?+[\s\"':=]{1,6}+)"
    r"[A-Za-z0-9_\-+/.=~]{16,}+"
)
"""A long token right after a word naming a secret (``"api_token": "9f86..."``)."""

_AUTH_SCHEME = re.compile(r"(?i)\b(bearer|basic)\s++[A-Za-z0-9\-._~+/]{8,}+=*+")
"""An ``Authorization`` value: the scheme is kept, the credentials go."""

_KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"sk-[A-Za-z0-9_\-]{8,}+"  # OpenAI; Anthropic's sk-ant-...
    r"|AIza[0-9A-Za-z_\-]{20,}+"  # Google
    r"|eyJ[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]{8,}+(?:\.[A-Za-z0-9_\-]*+)?+"  # a JWT
    r"|gh[pousr]_[A-Za-z0-9]{20,}+|github_pat_[A-Za-z0-9_]{20,}+"  # GitHub
    r"|hf_[A-Za-z0-9]{20,}+"  # Hugging Face
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}+"  # Slack
    r"|gsk_[A-Za-z0-9]{20,}+"  # Groq
    r"|xai-[A-Za-z0-9]{20,}+"  # xAI
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"  # AWS access key ids
    r")"
)
"""Keys recognisable by their shape alone."""


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every secret it holds replaced by :data:`REDACTED`.

    ``secrets`` are values known to be secret (a configured key, a URL's password): they
    are replaced exactly, wherever they stand, when at least :data:`MIN_SECRET_LENGTH`
    characters long. The patterns of the module docstring are replaced after them.
    """
    named = {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}
    for secret in sorted(named, key=len, reverse=True):  # a longer one may hold a shorter
        text = text.replace(secret, REDACTED)
    text = _URL_USERINFO.sub(rf"\1{REDACTED}@", text)
    text = _QUERY_SECRET.sub(rf"\1{REDACTED}", text)
    text = _AUTH_SCHEME.sub(rf"\1 {REDACTED}", text)
    text = _KEY_SHAPES.sub(REDACTED, text)
    return _NAMED_SECRET.sub(rf"\1{REDACTED}", text)


def url_credentials(url: str | None) -> tuple[str, ...]:
    """The credentials in ``url``, as written and percent-decoded; () if none.

    That is the password, or the user name when there is no password (a key passed as
    ``https://KEY@host``); a user name beside a password is no secret, and replacing a
    short one such as ``user`` everywhere would garble the message. For :func:`redact`'s
    ``secrets``, so that a password stays hidden even where a message quotes it without
    its URL.
    """
    if not url or "@" not in url:
        return ()
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:  # a malformed host: read the authority by hand
        userinfo = url.partition("://")[2].partition("/")[0].rpartition("@")[0]
        user, _, password = userinfo.partition(":")
    found = password or user
    if not found:
        return ()
    return tuple(sorted({found, unquote(found)}))
