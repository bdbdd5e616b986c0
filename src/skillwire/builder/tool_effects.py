"""What a tool does, read from its name, description and HTTP method, and the policy the
assistant proposes for it: reads run freely; writes, payments and deletions propose an
approval (or a workflow that puts a check first). The author confirms or picks another.

The words are matched on the identifier's parts (``process_refund`` is ``process`` and
``refund``; ``deleteFile`` is ``delete`` and ``file``), never on substrings, and a tool
whose words say nothing is taken as a write: an unknown tool is proposed an approval,
not a free pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = [
    "Effect",
    "PolicyChoice",
    "PolicyProposal",
    "classify_tool",
    "identifier_words",
    "propose_policy",
]


class Effect(StrEnum):
    """What a tool does to the world."""

    READ = "read"
    WRITE = "write"
    PAYMENT = "payment"
    DELETION = "deletion"


class PolicyChoice(StrEnum):
    """The policies the author may pick for a tool."""

    FREE = "free"
    """Runs whenever the planner proposes it (within the skill's other rules)."""
    APPROVAL = "approval"
    """Every call waits for an approver's decision."""
    APPROVAL_WHEN = "approval_when"
    """A call waits for approval when a condition holds."""
    AFTER = "after"
    """Runs only after another tool, in a required workflow."""
    NEVER = "never"
    """Never runs."""


CHOICE_LABELS: Mapping[PolicyChoice, str] = {
    PolicyChoice.FREE: "runs freely",
    PolicyChoice.APPROVAL: "needs approval every time",
    PolicyChoice.APPROVAL_WHEN: "needs approval when a condition holds",
    PolicyChoice.AFTER: "runs only after another tool (a workflow)",
    PolicyChoice.NEVER: "never runs",
}

_DELETION = frozenset(
    [
        "delete",
        "remove",
        "erase",
        "destroy",
        "purge",
        "drop",
        "revoke",
        "cancel",
        "terminate",
        "wipe",
        "unlink",
    ]
)
_PAYMENT = frozenset(
    [
        "refund",
        "pay",
        "payment",
        "payout",
        "charge",
        "transfer",
        "withdraw",
        "withdrawal",
        "purchase",
        "buy",
        "debit",
        "credit",
        "invoice",
        "reimburse",
    ]
)
_WRITE = frozenset(
    [
        "create",
        "update",
        "set",
        "add",
        "send",
        "post",
        "put",
        "patch",
        "submit",
        "write",
        "book",
        "assign",
        "change",
        "modify",
        "upload",
        "approve",
        "close",
        "open",
        "reset",
        "issue",
        "grant",
        "register",
        "insert",
        "save",
        "publish",
        "move",
        "rename",
        "apply",
        "enable",
        "disable",
        "process",
        "execute",
        "run",
        "deploy",
        "notify",
        "email",
    ]
)
_READ = frozenset(
    [
        "get",
        "list",
        "search",
        "find",
        "lookup",
        "look",
        "check",
        "read",
        "fetch",
        "show",
        "view",
        "status",
        "query",
        "describe",
        "track",
        "count",
        "verify",
        "validate",
        "retrieve",
        "load",
        "inspect",
        "estimate",
        "calculate",
        "compute",
        "preview",
        "browse",
    ]
)
_METHODS: Mapping[str, Effect] = {
    "GET": Effect.READ,
    "HEAD": Effect.READ,
    "DELETE": Effect.DELETION,
}


def identifier_words(text: str) -> list[str]:
    """The lower-case words of an identifier or sentence: ``deleteFile`` and
    ``delete-file`` and ``Delete the file`` all give ``delete`` and ``file``."""
    words: list[str] = []
    current: list[str] = []
    previous = ""
    for char in text:
        if char.isalnum():
            if char.isupper() and previous.islower() and current:
                words.append("".join(current))
                current = []
            current.append(char.lower())
        elif current:
            words.append("".join(current))
            current = []
        previous = char
    if current:
        words.append("".join(current))
    return words


def _forms(word: str) -> Iterator[str]:
    """The word and its plain forms: ``looks`` -> ``look``, ``deleted`` -> ``delete``,
    ``deleting`` -> ``delete``."""
    yield word
    for suffix, replacement in (
        ("s", ""),
        ("es", ""),
        ("ed", ""),
        ("d", ""),
        ("ing", ""),
        ("ing", "e"),
    ):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            yield word[: -len(suffix)] + replacement


def _first_effect(words: Iterable[str]) -> Effect | None:
    found: set[Effect] = set()
    for word in (form for w in words for form in _forms(w)):
        if word in _DELETION:
            found.add(Effect.DELETION)
        elif word in _PAYMENT:
            found.add(Effect.PAYMENT)
        elif word in _WRITE:
            found.add(Effect.WRITE)
        elif word in _READ:
            found.add(Effect.READ)
    for effect in (Effect.DELETION, Effect.PAYMENT, Effect.WRITE, Effect.READ):
        if effect in found:  # the most consequential effect named wins
            return effect
    return None


def classify_tool(name: str, description: str = "", method: str | None = None) -> Effect:
    """What the tool does. The name decides first, then the description, then the
    HTTP method; a GET that names a payment stays a read; nothing known is a write."""
    by_method = _METHODS.get((method or "").upper())
    named = _first_effect(identifier_words(name))
    if by_method is Effect.READ:
        return Effect.READ
    if by_method is Effect.DELETION:
        return Effect.DELETION
    if named is not None:
        return named
    described = _first_effect(identifier_words(description))
    if described is not None and not (method and described is Effect.READ):
        return described  # a POST described as "checks" still changes something
    return Effect.WRITE


@dataclass(frozen=True, slots=True)
class PolicyProposal:
    """The policy proposed for one tool, and why."""

    tool: str
    effect: Effect
    choice: PolicyChoice
    """The proposed policy (the default answer)."""
    condition: str | None
    """For ``approval_when``: the proposed condition."""
    reason: str
    """Why, in one sentence shown to the author."""


_AMOUNT_NAMES = ("amount", "total", "price", "value", "sum")


def _amount_field(schema: Mapping[str, Any]) -> str | None:
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return None
    for name, spec in props.items():
        kind = spec.get("type") if isinstance(spec, Mapping) else None
        if kind in ("number", "integer") and any(
            w in _AMOUNT_NAMES for w in identifier_words(name)
        ):
            return str(name)
    return None


def propose_policy(
    name: str,
    description: str = "",
    schema: Mapping[str, Any] | None = None,
    method: str | None = None,
    threshold: int = 500,
) -> PolicyProposal:
    """The proposal for one tool: a read runs freely; a payment with an amount needs
    approval above ``threshold`` (else always); a deletion or another write needs
    approval every time."""
    effect = classify_tool(name, description, method)
    if effect is Effect.READ:
        return PolicyProposal(
            name, effect, PolicyChoice.FREE, None, "it only reads, so it runs freely"
        )
    if effect is Effect.PAYMENT:
        amount = _amount_field(schema or {})
        if amount is not None:
            return PolicyProposal(
                name,
                effect,
                PolicyChoice.APPROVAL_WHEN,
                f"{amount} > {threshold}",
                f"it moves money: approval above {threshold} of its {amount}",
            )
        return PolicyProposal(
            name, effect, PolicyChoice.APPROVAL, None, "it moves money: approval every time"
        )
    if effect is Effect.DELETION:
        return PolicyProposal(
            name,
            effect,
            PolicyChoice.APPROVAL,
            None,
            "it deletes: approval every time (or never let it run)",
        )
    return PolicyProposal(
        name,
        effect,
        PolicyChoice.APPROVAL,
        None,
        "it changes something: approval every time, or a workflow that checks first",
    )
