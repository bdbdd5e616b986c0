"""Reading guardrail sentences that have a mechanical meaning.

A sentence compiles only when its meaning is unambiguous; everything else stays text
for the planner. The patterns, on words (a tokenizer, not regular expressions):

- ``never use|call|run|invoke <tool>``                      -> tool_deny
- a sentence that speaks of approval (``approval``, ``approve``, ``sign-off``) and names
  a tool or a field, with an optional comparison        -> approval, approver from
  ``<role> approval`` / ``approved by <role>`` / ``approval from <role>``
- ``<field> (>|over|above|more than|...) <number>`` where the field is a numeric input,
  or ``<tool words> over <number>`` where the tool has one numeric input and the word
  after the number (if any) is a unit or names that input   -> threshold (block when
  it holds in a ``never`` rule, when it fails in an ``always`` rule)

A rule that speaks of approval compiles to an approval, never to a block (DESIGN.md).

Every word of a sentence must be accounted for: by the tool it names, the comparison,
the approval and its approver, a negation, or a word that changes nothing (``the``,
``you``, ``tool``). A word left over (``for inactive employees``, ``unless ...``) is a
qualifier the recognizer did not turn into a condition: the meaning then carries it in
``unread``, and the compiler asks for approval instead of enforcing half a sentence.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Literal

from skillwire.skills.model import Skill
from skillwire.skills.model_tools import Tool

__all__ = ["SentenceMeaning", "read_sentence", "rewrite_hint", "tokenize"]

_OPS: list[tuple[tuple[str, ...], str]] = [
    ((">=",), ">="),
    (("<=",), "<="),
    ((">",), ">"),
    (("<",), "<"),
    (("at", "least"), ">="),
    (("at", "most"), "<="),
    (("no", "more", "than"), "<="),
    (("more", "than"), ">"),
    (("greater", "than"), ">"),
    (("higher", "than"), ">"),
    (("larger", "than"), ">"),
    (("in", "excess", "of"), ">"),
    (("over",), ">"),
    (("above",), ">"),
    (("exceeding",), ">"),
    (("exceeds",), ">"),
    (("exceed",), ">"),
    (("less", "than"), "<"),
    (("lower", "than"), "<"),
    (("fewer", "than"), "<"),
    (("under",), "<"),
    (("below",), "<"),
]
_APPROVAL_WORDS = frozenset(
    {
        "approval",
        "approve",
        "approved",
        "approves",
        "sign-off",
        "signoff",
        "authorization",
        "authorisation",
        "authorized",
        "authorised",
    }
)
_DENY_VERBS = frozenset({"use", "call", "run", "invoke", "execute", "trigger"})
_NEGATIONS = (
    ("never",),
    ("do", "not"),
    ("don't",),
    ("must", "not"),
    ("mustn't",),
    ("cannot",),
    ("can't",),
    ("should", "not"),
    ("shouldn't",),
)
_NOT_ROLES = frozenset(
    {
        "a",
        "an",
        "the",
        "without",
        "with",
        "needs",
        "need",
        "requires",
        "require",
        "required",
        "explicit",
        "prior",
        "written",
        "their",
        "his",
        "her",
        "its",
        "any",
        "no",
        "for",
        "and",
        "or",
        "of",
        "to",
        "must",
        "get",
        "getting",
        "have",
        "having",
        "needing",
        "requiring",
        "be",
        "is",
        "are",
        "was",
        "were",
        "been",
        "being",
        "got",
        "gets",
        "has",
        "had",
        "first",
        "until",
        "unless",
    }
)
_NUMERIC = frozenset({"number", "integer"})
_UNITS = frozenset(
    {
        *("", "dollars", "dollar", "usd", "eur", "euro", "euros", "gbp", "pounds", "percent"),
        *("without", "unless", "except", "per", "in", "at", "for", "and", "or", "to", "from"),
        *("with", "on", "before", "after", "by", "must", "should", "need", "needs", "require"),
        *("requires", "is", "are"),
    }
)


_MONEY_UNITS = frozenset(
    {"dollars", "dollar", "usd", "eur", "euro", "euros", "gbp", "pounds", "percent"}
)
_FILLER = frozenset(
    {
        *("a", "an", "the", "you", "we", "i", "agent", "agents", "assistant", "ever"),
        *("tool", "tools", "function", "with", "keep", "please", "always", "never"),
        *_DENY_VERBS,
    }
)
"""Words that change nothing in a sentence the recognizer understood (``You must not
invoke the deleteFile tool``): every other word must be part of the meaning."""
_APPROVAL_FILLER = _FILLER | frozenset(
    {
        *("needs", "need", "requires", "require", "required", "requiring", "must", "be"),
        *("is", "are", "get", "gets", "getting", "have", "has", "having", "without"),
        *("explicit", "prior", "written", "first"),
    }
)
"""Words that change nothing in an approval sentence (``must be approved``, ``needs prior
written sign-off``)."""


@dataclass(frozen=True, slots=True)
class SentenceMeaning:
    """What a sentence compiles to."""

    kind: Literal["tool_deny", "approval", "threshold"]
    tools: tuple[str, ...]
    expression: str | None = None
    approver: str | None = None
    unread: str = ""
    """The words the recognizer could not account for, from the first to the last of them
    as written (``for inactive employees``); empty when the whole sentence is understood."""


def tokenize(text: str) -> list[str]:
    """Lowercase words, numbers (``$1,500.50`` -> ``1500.50``) and comparison operators."""
    tokens: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "<>=":
            op = text[i : i + 2] if text[i : i + 2] in (">=", "<=", "==") else c
            tokens.append(op)
            i += len(op)
        elif c.isdigit() or (c in "$€£" and i + 1 < n and text[i + 1].isdigit()):
            j = i + 1 if not c.isdigit() else i
            k = j
            while k < n and (
                text[k].isdigit() or (text[k] in ",." and k + 1 < n and text[k + 1].isdigit())
            ):
                k += 1
            tokens.append(text[j:k].replace(",", ""))
            i = k
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_-.'"):
                j += 1
            tokens.append(text[i:j].rstrip(".-'"))
            i = j
        else:
            i += 1
    return tokens


def _camel_words(name: str) -> list[str]:
    words: list[str] = []
    current = ""
    for ch in name:
        if ch in "_-.":
            if current:
                words.append(current)
            current = ""
        elif ch.isupper() and current and not current[-1].isupper():
            words.append(current)
            current = ch
        else:
            current += ch
    if current:
        words.append(current)
    return [w.lower() for w in words]


def _stem(word: str) -> str:
    word = word.lower()
    for suffix in ("ies", "es", "s"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _mention(tokens: list[str], tool: Tool) -> set[int]:
    """The positions of the words that name ``tool``: its name (or local name) as one
    token, or its name's words in a row (``process refunds`` names ``process_refund``)."""
    local = tool.name.rsplit(".", 1)[-1]
    names = {local.lower(), tool.name.lower()}
    found = {i for i, t in enumerate(tokens) if t in names}
    words = [_stem(w) for w in _camel_words(local)]
    if len(words) < 2:
        return found
    stems = [_stem(t) for t in tokens]
    for i in range(len(stems) - len(words) + 1):
        if stems[i : i + len(words)] == words:
            found.update(range(i, i + len(words)))
    return found


def _find_op(tokens: list[str]) -> tuple[int, int, str] | None:
    """(start, end, operator) of the first comparison followed by a number."""
    for i in range(len(tokens)):
        for words, op in _OPS:
            end = i + len(words)
            if tuple(tokens[i:end]) == words and end < len(tokens) and _is_number(tokens[end]):
                return i, end, op
    return None


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _approver(tokens: list[str]) -> tuple[str | None, set[int]]:
    """The approving role a sentence names, and the positions of the words naming it."""
    for i, tok in enumerate(tokens):
        if tok not in _APPROVAL_WORDS:
            continue
        before = tokens[i - 1].removesuffix("'s") if i > 0 else ""
        if before and before not in _NOT_ROLES and before.isalpha():
            return before, {i - 1}
        for j in range(i + 1, min(i + 4, len(tokens))):
            if tokens[j] in ("by", "from"):
                for k in range(j + 1, min(j + 3, len(tokens))):
                    if tokens[k] not in _NOT_ROLES:
                        return tokens[k], {j, k}
    return None, set()


def _numeric_input(tool: Tool, name: str) -> bool:
    return any(f.name == name and f.type in _NUMERIC for f in tool.input_fields())


def _measures(word: str, field: str) -> bool:
    """Whether the word after a number fits the field: a unit of money or percent, a
    word of the field's own name, or no noun at all."""
    if word in _UNITS or not word.isalpha():
        return True
    return _is_unit(word, field)


def _is_unit(word: str, field: str) -> bool:
    """Whether the word after a number is part of the comparison: a unit of money or
    percent, or a word of the field's name (``over 3 cc``)."""
    return word in _MONEY_UNITS or _stem(word) in {_stem(w) for w in _camel_words(field)}


def _negations(tokens: list[str]) -> set[int]:
    """The positions of every negation phrase (``never``, ``do not``, ``mustn't`` ...)."""
    return {
        i + k
        for neg in _NEGATIONS
        for i in range(len(tokens))
        if tuple(tokens[i : i + len(neg)]) == neg
        for k in range(len(neg))
    }


def read_sentence(
    text: str, skill: Skill, *, polarity: Literal["never", "always"]
) -> SentenceMeaning | None:
    """What ``text`` means mechanically for ``skill``, or None to keep it as text.

    Every word is accounted for: a word that no part of the meaning explains (``for
    inactive employees``, ``unless ...``) is returned in :attr:`SentenceMeaning.unread`,
    and the caller must not enforce the meaning as if the sentence said only that."""
    raw = tokenize(text)
    tokens = [t.lower() for t in raw]
    mentions = {t.name: _mention(tokens, t) for t in skill.tools}
    tools = [t for t in skill.tools if mentions[t.name]]
    read = set().union(*mentions.values(), _negations(tokens))
    op = _find_op(tokens)
    approval = [i for i, t in enumerate(tokens) if t in _APPROVAL_WORDS]

    expression: str | None = None
    scope: list[Tool] = tools
    if op is not None:
        start, end, sym = op
        number = tokens[end]
        field = raw[start - 1] if start > 0 else ""
        candidates = [t for t in skill.tools if _numeric_input(t, field)]
        if candidates and (not tools or any(t in tools for t in candidates)):
            scope = [t for t in candidates if not tools or t in tools]
            read.add(start - 1)
        elif len(tools) == 1:
            numeric = [f.name for f in tools[0].input_fields() if f.type in _NUMERIC]
            after = tokens[end + 1] if end + 1 < len(tokens) else ""
            if len(numeric) != 1 or not _measures(after, numeric[0]):
                return None  # "more than 5 people" is not about the tool's one number
            field = numeric[0]
        else:
            return None
        read.update(range(start, end + 1))
        if end + 1 < len(tokens) and _is_unit(tokens[end + 1], field):
            read.add(end + 1)
        expression = f"{field} {sym} {number}"

    if approval:
        if not scope:
            return None
        approver, named = _approver(tokens)
        read.update(approval, named)
        words = _APPROVAL_FILLER
        meaning = SentenceMeaning("approval", tuple(t.name for t in scope), expression, approver)
    elif expression is not None:
        deny_when = (
            expression if (polarity == "never" or _negated(tokens)) else (f"!({expression})")
        )
        words = _FILLER
        meaning = SentenceMeaning("threshold", tuple(t.name for t in scope), deny_when)
    else:
        found = _tool_deny(raw, tokens, skill, polarity)
        if found is None:
            return None
        meaning, named = found
        read.update(named)
        words = _FILLER
    unread = [i for i, t in enumerate(tokens) if i not in read and t not in words]
    if not unread:
        return meaning
    # Not understood in full: the sentence may speak of every tool it names ("never use
    # deleteFile or send_email"), not only of those the understood part applies to.
    others = tuple(t.name for t in tools if t.name not in meaning.tools)
    return replace(
        meaning,
        tools=meaning.tools + others,
        unread=" ".join(raw[unread[0] : unread[-1] + 1]),
    )


def _negated(tokens: list[str]) -> bool:
    return bool(_negations(tokens))


def _tool_deny(
    raw: list[str], tokens: list[str], skill: Skill, polarity: str
) -> tuple[SentenceMeaning, set[int]] | None:
    """``never use <tool>``: the meaning, and the positions of the verb and the name."""
    if not (polarity == "never" or _negated(tokens)):
        return None
    for i, tok in enumerate(tokens[:-1]):
        if tok not in _DENY_VERBS:
            continue
        if not (
            i > 0
            and (
                tokens[i - 1]
                in ("never", "not", "don't", "cannot", "can't", "mustn't", "shouldn't")
            )
        ):
            continue
        at = i + 1
        while at < len(raw) - 1 and tokens[at] in ("the", "a", "an"):
            at += 1  # "never use the deleteFile tool"
        name = raw[at]
        tool = skill.tool(name)
        if tool is not None:
            return SentenceMeaning("tool_deny", (tool.name,)), {i, at}
        if "_" in name or (name[:1].islower() and any(ch.isupper() for ch in name)):
            return SentenceMeaning("tool_deny", (name,)), {i, at}
    return None


def rewrite_hint(text: str, meaning: SentenceMeaning, skill: Skill) -> str:
    """What to write instead of a sentence understood only in part: one structured rule
    per tool it names (YAML flow style), the words not understood left in angle brackets
    for the author to turn into a condition."""
    rules = []
    for name in meaning.tools:
        tool = skill.tool(name)
        inputs = ", ".join(tool.input_names()) if tool is not None else ""
        over = f"a condition over {inputs}" if inputs else "a condition over the job's context"
        when = f"<{meaning.unread}: {over}>"
        if meaning.expression:
            when = f"{meaning.expression} && {when}"
        if meaning.kind == "approval":
            approver = meaning.approver or skill.policy.default_approver
            action = f"action: require_approval, approver: {approver}"
        else:
            action = "action: block"
        rules.append(
            f"{{rule: {json.dumps(text)}, tool: {name}, when: {json.dumps(when)}, {action}}}"
        )
    return "write it as a structured rule in its place: " + " and ".join(rules)
