"""What a tool does, read from its name, description and HTTP method (or an MCP server's
annotations of it), and the policy the assistant proposes for it: reads run freely;
writes, payments and deletions propose an approval (or a workflow that puts a check
first). The author confirms or picks another.

The words are matched on the identifier's parts (``process_refund`` is ``process`` and
``refund``; ``deleteFile`` is ``delete`` and ``file``), never on substrings, and a tool
whose words say nothing is taken as a write: an unknown tool is proposed an approval,
not a free pass. An MCP server's hints (:class:`ToolHints`) come from the same server as
the tool's name, and weigh as its words do: ``destructiveHint`` makes any tool a
deletion, ``readOnlyHint`` makes a read only of a tool whose words name no change.
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
    "ToolHints",
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


@dataclass(frozen=True, slots=True)
class ToolHints:
    """What an MCP server says of a tool (its ``annotations``). Only a boolean counts;
    an absent hint says nothing (the protocol's defaults are not assumed)."""

    read_only: bool | None = None
    """``readOnlyHint``: the tool changes nothing."""
    destructive: bool | None = None
    """``destructiveHint``: the tool may destroy or overwrite (with ``read_only`` not
    true)."""
    open_world: bool | None = None
    """``openWorldHint``: the tool reaches an open world (the web, others' messages):
    its results can carry text written by others."""

    @classmethod
    def of(cls, annotations: object) -> ToolHints:
        """The hints of an MCP tool's ``annotations`` object (anything else: none)."""
        if not isinstance(annotations, Mapping):
            return cls()

        def flag(key: str) -> bool | None:
            value = annotations.get(key)
            return value if isinstance(value, bool) else None

        return cls(flag("readOnlyHint"), flag("destructiveHint"), flag("openWorldHint"))


def _said(name: str, description: str, method: str | None) -> Effect | None:
    """What the HTTP method, the name, then the description say; None: nothing."""
    by_method = _METHODS.get((method or "").upper())
    if by_method is not None:
        return by_method  # a GET that names a payment stays a read
    named = _first_effect(identifier_words(name))
    if named is not None:
        return named
    described = _first_effect(identifier_words(description))
    if described is not None and not (method and described is Effect.READ):
        return described  # a POST described as "checks" still changes something
    return None


def classify_tool(
    name: str, description: str = "", method: str | None = None, hints: ToolHints | None = None
) -> Effect:
    """What the tool does. The HTTP method decides first, then the name, then the
    description; an MCP server's ``hints`` may make it more consequential (destructive:
    a deletion) and a read of a tool whose words name no change (read-only); nothing
    known is a write."""
    said = _said(name, description, method)
    if hints is not None and hints.destructive is True and hints.read_only is not True:
        return Effect.DELETION
    if hints is not None and hints.read_only is True and said in (None, Effect.READ):
        return Effect.READ
    return said or Effect.WRITE


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
    hints: ToolHints | None = None,
) -> PolicyProposal:
    """The proposal for one tool: a read runs freely; a payment with an amount needs
    approval above ``threshold`` (else always); a deletion or another write needs
    approval every time. ``hints``: what an MCP server says of it (:func:`classify_tool`)."""
    effect = classify_tool(name, description, method, hints)
    if effect is not classify_tool(name, description, method):  # the server's hint decided
        if effect is Effect.READ:
            reason = "the server marks it read-only and its words name no change: runs freely"
            return PolicyProposal(name, effect, PolicyChoice.FREE, None, reason)
        reason = "the server marks it destructive: approval every time (or never let it run)"
        return PolicyProposal(name, effect, PolicyChoice.APPROVAL, None, reason)
    proposal = _by_effect(name, effect, schema, threshold)
    if hints is not None and hints.read_only is True and effect is not Effect.READ:
        reason = f"{proposal.reason}; its words outweigh the server's read-only mark"
        return PolicyProposal(name, effect, proposal.choice, proposal.condition, reason)
    return proposal


def _by_effect(
    name: str, effect: Effect, schema: Mapping[str, Any] | None, threshold: int
) -> PolicyProposal:
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
