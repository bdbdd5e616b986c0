"""Limits across jobs: a tool policy's ``once_per`` and ``rate_limit``.

``once_per: args.order_id`` lets the tool run once per value of the expression over
every job of the skill; ``rate_limit: {max: 3, per: 1h, scope: user}`` at most three
times an hour per user (the job's owner), or for everyone (``scope: skill``). Both are
:class:`~skillwire.core.store.Claim` values a call takes when it starts.

The gate imports no store. It reads how many claims are held through a
:class:`~skillwire.core.store.ClaimLedger` that its caller filled beforehand (the engine
asks the job store for the claims :meth:`CrossJobLimits.claims` names), blocks a call
whose limit is reached (``ONCE_PER``, ``RATE_LIMITED``), and lists the claims an
allowed call takes in :attr:`~skillwire.policy.decisions.Allow.claims`. The caller saves
them with the save that marks the call in flight: the store takes them in that
transaction or refuses the whole save, so of two jobs racing for the last claim one
runs and the other is refused. Without a ledger (a caller that keeps no claims) a call
of such a tool is blocked: fail closed.

Keys (:func:`key_text`): a value is compared after Unicode NFKC, with the digits of
any script made ASCII digits (``١٢٣`` is ``123``, as ``int()`` reads it), format
characters (zero-width spaces, joiners, BOM), control characters and the other
invisible ones (variation selectors, the grapheme joiner, Hangul fillers) removed,
white space trimmed and inner runs made one space, and case folded; numbers by value,
a text that is a whole decimal number too (``12345``, ``12345.0``, ``"12345"``,
``"012345"`` and ``"+12345.0"`` are one key). So ``ORD-12345``, ``" ord-12345\\n"`` and
the full-width ``ＯＲＤ-12345`` are one order; two ids that differ only in case, or
``"007"`` and ``"7"``, are one key too (stricter, never looser). Letters of other
scripts that only look alike (a Cyrillic ``О``) stay distinct, as a backend keeps them.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skillwire.conditions import CelExpression, compile_expression
from skillwire.core.errors import ConditionEvaluationError
from skillwire.core.location import FieldPath, SourceLocation
from skillwire.core.store import Claim, ClaimLedger, claim_key
from skillwire.policy.decisions import ReasonCode
from skillwire.policy.rules import CompiledRule, RuleKind
from skillwire.skills.model_tools import ONCE_PER_NAMES, Tool

if TYPE_CHECKING:  # the compiler imports this module, and they import the compiler
    from skillwire.policy.call import GateCall
    from skillwire.policy.tooling import ToolFacts
    from skillwire.policy.validators import Findings

__all__ = ["CrossJobLimits", "cross_job_rules", "key_text", "shown_window"]

_KINDS = (RuleKind.ONCE_PER, RuleKind.RATE_LIMIT)


def cross_job_rules(
    tool: Tool, path: FieldPath, where: Callable[[FieldPath], tuple[SourceLocation, str]]
) -> list[CompiledRule]:
    """The compiled ``once_per`` and ``rate_limit`` rules of ``tool`` (at ``path`` in
    its skill); ``where(path)`` gives a field's source location and origin text."""
    pol, name = tool.policy, tool.name
    rules: list[CompiledRule] = []
    if pol.once_per is not None:
        source, origin = where((*path, "policy", "once_per"))
        rules.append(
            CompiledRule(
                RuleKind.ONCE_PER,
                f"{name} runs once per {pol.once_per} across all jobs of the skill",
                (name,),
                source,
                origin,
                ReasonCode.ONCE_PER,
                per=pol.once_per,
                limit=1,
            )
        )
    if pol.rate_limit is not None:
        limit, window = pol.rate_limit.limit(), pol.rate_limit.window()
        scope = pol.rate_limit.scope
        source, origin = where((*path, "policy", "rate_limit"))
        who = "per user" if scope == "user" else "for all users"
        rules.append(
            CompiledRule(
                RuleKind.RATE_LIMIT,
                f"{name} runs at most {limit} times per {shown_window(window)} {who} "
                "across all jobs of the skill",
                (name,),
                source,
                origin,
                ReasonCode.RATE_LIMITED,
                per=scope,
                limit=limit,
                window=window,
            )
        )
    return rules


def shown_window(seconds: int) -> str:
    """``1h``, ``15m``, ``90s``, ``2d``: a window as an author writes it."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def key_text(value: Any) -> str:
    """The text a ``once_per`` value is keyed by (see the module): NFKC, digits of any
    script as ASCII digits, no format, control or other invisible (default-ignorable)
    characters, trimmed, inner white space one space, case folded; a number, or a text
    that is a whole decimal number, by value; a list or map as JSON of its parts so
    keyed."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        if not isinstance(value, float):
            return str(value)
        if not math.isfinite(value):
            return repr(value)
        if value.is_integer():
            return str(int(value))
        return _number_text(*_digits(format(decimal.Decimal(repr(value)), "f")))
    if isinstance(value, str):
        text = unicodedata.normalize("NFKC", value)
        if not (text.isascii() and text.isprintable()):
            text = "".join(map(_kept, text))
        text = " ".join(text.split()).casefold()
        number = _NUMBER.fullmatch(text)
        return _number_text(*number.groups()) if number else text  # "007" is 7
    if isinstance(value, Mapping):
        return json.dumps({key_text(k): key_text(v) for k, v in value.items()}, sort_keys=True)
    if isinstance(value, list | tuple):
        return json.dumps([key_text(v) for v in value])
    return json.dumps(str(value))


_NUMBER = re.compile(r"([+-]?)([0-9]+)(?:\.([0-9]*))?")
"""A whole text that is a number in decimal (keyed by its value)."""
_IGNORABLE = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f\u3164\uffa0"
    + "".join(map(chr, range(0xFE00, 0xFE10)))
)
"""Default-ignorable characters that are not format characters (``Cf``): the
combining grapheme joiner, Hangul fillers, Khmer inherent vowels, variation selectors
(those of plane 14 are in :func:`_kept`'s range)."""


def _kept(c: str) -> str:
    """``c`` as a key keeps it: a digit of any script as its ASCII digit; a format,
    control (but white space) or other default-ignorable character dropped."""
    if c.isascii():
        return c if " " <= c < "\x7f" or c.isspace() else ""
    category = unicodedata.category(c)
    if category == "Nd":
        return str(unicodedata.decimal(c))
    if category == "Cf" or c in _IGNORABLE or "\U000e0000" <= c <= "\U000e0fff":
        return ""
    if category == "Cc" and not c.isspace():
        return ""
    return c


def _digits(text: str) -> tuple[str, str, str | None]:
    found = _NUMBER.fullmatch(text)
    assert found is not None  # a finite float in positional notation
    sign, whole, fraction = found.groups()
    return sign, whole, fraction


def _number_text(sign: str, whole: str, fraction: str | None) -> str:
    """A decimal number's text keyed by value, as :func:`key_text` keys a number: no
    leading zeros, no ``+``, no zero fraction, no trailing zeros, ``-0`` is ``0``
    (without int(): a text of any length)."""
    whole = whole.lstrip("0") or "0"
    fraction = (fraction or "").rstrip("0")
    text = f"{whole}.{fraction}" if fraction else whole
    return text if sign != "-" or text == "0" else f"-{text}"


@dataclass(frozen=True, slots=True)
class _Limit:
    rule: CompiledRule
    expression: CelExpression | None
    """A ``once_per`` rule's key expression; None for a rate limit."""


class CrossJobLimits:
    """The cross-job rules of one skill, their key expressions compiled once."""

    def __init__(self, skill_id: str, rules: Sequence[CompiledRule]) -> None:
        self.skill_id = skill_id
        self._by_tool: dict[str, list[_Limit]] = {}
        for rule in rules:
            if rule.kind not in _KINDS:
                continue
            expression = None
            if rule.kind is RuleKind.ONCE_PER:
                assert rule.per is not None  # the compiler sets it
                expression = compile_expression(rule.per, known_names=ONCE_PER_NAMES)
            for tool in rule.tools:
                self._by_tool.setdefault(tool, []).append(_Limit(rule, expression))

    def applies(self, tool: str) -> bool:
        """Whether ``tool`` (a full name) has a cross-job rule."""
        return tool in self._by_tool

    def claims(
        self, call: GateCall, tool: str, user: str | None
    ) -> list[tuple[CompiledRule, Claim | str]]:
        """Each cross-job rule of ``tool`` with the claim ``call`` would take, or why
        none can be made (a text: the key's value is missing, no clock, no user)."""
        found: list[tuple[CompiledRule, Claim | str]] = []
        for limit in self._by_tool.get(tool, ()):
            found.append((limit.rule, self._claim(limit, call, tool, user)))
        return found

    def claims_for(
        self,
        facts: ToolFacts,
        args: Mapping[str, Any] | None,
        *,
        context: Mapping[str, Any] | None,
        entities: Mapping[str, Any] | None,
        inputs: Mapping[str, Any] | None,
        user: str | None,
        now: datetime.datetime | None,
    ) -> tuple[Claim, ...]:
        """The claims a call of the tool ``facts`` describes would take (see
        :meth:`~skillwire.policy.gate.Gate.claims`): none for keys it cannot tell."""
        from skillwire.policy.call import GateCall  # the call module imports the compiler's

        try:
            call = GateCall(
                facts.name,
                dict(args or {}),
                dict(entities or {}),
                dict(context or {}),
                (),
                dict(inputs or {}),
                (),
                defaults=facts.defaults,
                now=now,
            )
            found = self.claims(call, facts.name, user)
        except Exception:  # a call the gate will refuse: nothing to read for it
            return ()
        return tuple(claim for _rule, claim in found if not isinstance(claim, str))

    def _claim(self, limit: _Limit, call: GateCall, tool: str, user: str | None) -> Claim | str:
        rule = limit.rule
        now = call.now
        if limit.expression is None:  # a rate limit
            if now is None:
                return "a rate limit needs the job's clock (now), which was not given"
            if rule.per == "user" and user is None:
                return "a rate limit per user needs the job's owner, which was not given"
            who = f"user:{user}" if rule.per == "user" else "skill"
            key = claim_key(self.skill_id, tool, "rate_limit", who)
            return Claim(key, rule.limit or 0, float(rule.window or 0), now.timestamp())
        try:
            value = limit.expression.evaluate(call.variables)
        except ConditionEvaluationError as exc:
            return f"{exc}"
        except KeyError as exc:  # a default the call's tool does not have
            return f"no value for {exc}"
        text = key_text(value)
        if value is None or text == "":
            return f"{rule.per} has no value"
        at = now.timestamp() if now is not None else 0.0
        return Claim(claim_key(self.skill_id, tool, "once_per", rule.per or "", text), 1, None, at)

    def check(
        self,
        call: GateCall,
        facts: ToolFacts,
        found: Findings,
        ledger: ClaimLedger | None,
        user: str | None,
    ) -> tuple[Claim, ...]:
        """Add a block for each cross-job rule of the call's tool that its claim would
        break (or that cannot be checked: fail closed); the claims the call takes."""
        taken: list[Claim] = []
        for rule, claim in self.claims(call, facts.name, user):
            if isinstance(claim, str) and facts.missing_required(call.args):
                continue  # the input is asked for first; checked again with it
            if isinstance(claim, str):
                found.block(
                    ReasonCode.CONDITION_UNEVALUABLE,
                    f"{rule.text}: cannot tell the key ({claim}); blocked (fail closed)",
                    rule,
                )
                continue
            held = ledger.held(claim) if ledger is not None else None
            if held is None:
                found.block(
                    rule.code,
                    f"{rule.text}: kept in the job store, which this check was not given; "
                    "run the tool in a job (blocked: fail closed)",
                    rule,
                )
                continue
            if claim.refused_by(held.held):
                found.block(rule.code, _refusal(rule, call, held.held, held.holders, user), rule)
                continue
            taken.append(claim)
        return tuple(taken)


def _refusal(
    rule: CompiledRule, call: GateCall, held: int, holders: tuple[str, ...], user: str | None
) -> str:
    jobs = f" (job {', '.join(holders)})" if holders else ""
    if rule.kind is RuleKind.ONCE_PER:
        return f"{rule.text}: it already ran for this {rule.per}{jobs}"
    who = f" for user {user!r}" if rule.per == "user" else ""
    window = shown_window(rule.window or 0)
    return f"{rule.text}: {held} runs in the last {window}{who} (limit {rule.limit})"
