"""What a job's answer may claim, checked mechanically against what its tools did.

Three checks, no model involved:

- :func:`shortfall`: what the request did not get done, from the job's own record: a
  call an approver denied (``DENIED``), a call the gate blocked (``BLOCKED``), a tool
  that failed (``TOOL_FAILED``), each unless the same tool later ran successfully. The
  job then completes with that outcome class, and the reply says, in plain words, what
  was not done and why (the rules' own messages; never a tool's or the engine's error
  text, which stays in the events).
- :func:`unsupported_claims`: an answer that says an action was done ("refunded",
  "deleted") when the tool that does it never ran successfully. The action words of a
  tool come from its name (``process_refund``: "refund"); a claim is such a word in the
  past tense, not negated just before ("has not been refunded" is no claim). It is a
  mechanical floor under the finalization gate's judgment, not a substitute for it.
- :func:`added_values`: numbers and identifiers (any word holding a digit) that a
  polished reply holds and neither the draft nor the evidence does: the polisher may
  rephrase, not add facts.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from skillwire.core.job import OutcomeClass
from skillwire.engine.run import JobRun

__all__ = ["Shortfall", "added_values", "evidence_text", "shortfall", "unsupported_claims"]

_GENERIC = frozenset(
    [
        "process",
        "run",
        "do",
        "execute",
        "perform",
        "handle",
        "make",
        "get",
        "set",
        "check",
        "verify",
        "list",
        "look",
        "lookup",
        "fetch",
        "read",
        "find",
        "search",
        "query",
        "show",
        "call",
        "send",
        "submit",
        "request",
        "tool",
        "api",
    ]
)
"""Words of a tool name that say nothing about what the tool changes."""
_NEGATIONS = frozenset(
    [
        "not",
        "no",
        "never",
        "cannot",
        "unable",
        "without",
        "nor",
        "isn't",
        "wasn't",
        "weren't",
        "hasn't",
        "haven't",
        "hadn't",
        "didn't",
        "couldn't",
        "won't",
        "wouldn't",
        "can't",
    ]
)
"""Words that, just before an action word, make it no claim."""
_WORD = re.compile(r"[A-Za-z][A-Za-z']*")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/]*")
"""A word as values are written (``ORD-12345``, ``750.00``, ``2026-11-24``)."""
_DIGIT = re.compile(r"[0-9]")
_EVIDENCE_JSON = json.JSONEncoder(ensure_ascii=False, default=str)
"""``json.dumps(value, default=str, ensure_ascii=False)``, the encoder made once (it
holds no state between calls)."""


@dataclass(frozen=True)
class Shortfall:
    """What a job did not get done: its outcome class and the reply's explanation."""

    outcome: OutcomeClass
    notice: str
    tools: tuple[str, ...]
    """The tools whose action did not happen."""


def _succeeded(run: JobRun) -> set[str]:
    return {h.tool for h in run.state.history if h.ok}


def shortfall(run: JobRun) -> Shortfall | None:
    """What the job did not get done (denied, then blocked, then failed), or None."""
    state = run.state
    done = _succeeded(run)
    lines: list[str] = []
    outcome: OutcomeClass | None = None
    missed: list[str] = []
    for denial in state.denials:
        if denial.tool not in done and denial.tool not in missed:
            missed.append(denial.tool)
            lines.append(f"{denial.tool} was not done: the {denial.role} denied it.")
            outcome = outcome or OutcomeClass.DENIED
    for block in state.blocks:
        tool = str(block.get("tool", ""))
        if tool not in done and tool not in missed:
            missed.append(tool)
            lines.append(f"{tool} was not done: the rules do not allow it ({block.get('reason')}).")
            outcome = outcome or OutcomeClass.BLOCKED
    for entry in state.history:
        if not entry.ok and entry.tool not in done and entry.tool not in missed:
            missed.append(entry.tool)
            lines.append(f"{entry.tool} failed, so its part of the request was not done.")
            outcome = outcome or OutcomeClass.TOOL_FAILED
    if outcome is None:
        return None
    return Shortfall(outcome, " ".join(lines), tuple(missed))


@functools.lru_cache(maxsize=4096)
def _claim_forms(tool: str) -> frozenset[str]:
    """The past forms of the words of ``tool``'s name that name its action
    (``process_refund``: refunded; ``cancelOrder``: cancelled, canceled, ordered)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", tool)
    words = {w.lower() for w in re.split(r"[^A-Za-z]+", spaced) if len(w) >= 4} - _GENERIC
    forms: set[str] = set()
    for word in words:
        forms.add(word + "d" if word.endswith("e") else word + "ed")
        if word.endswith("y"):
            forms.add(word[:-1] + "ied")
        # a doubled last letter: cancelled (after a vowel and l), shipped (a short word)
        if re.search(r"[aeiou]l$", word) or (
            len(word) == 4 and re.search(r"[^aeiou][aeiou][bdgmnprt]$", word)
        ):
            forms.add(word + word[-1] + "ed")
    return frozenset(forms)


def unsupported_claims(run: JobRun, texts: list[str]) -> list[tuple[str, str]]:
    """``(tool, word)`` for each past-tense action word in ``texts`` whose tool exists
    in the skill, is not idempotent, and never ran successfully in this job."""
    done = _succeeded(run)
    forms: dict[str, str] = {}
    for tool in run.skill.tools:
        if tool.idempotent or tool.name in done:
            continue
        for form in _claim_forms(tool.name):
            forms.setdefault(form, tool.name)
    if not forms:
        return []
    found: list[tuple[str, str]] = []
    for text in texts:
        words = _lower_words(text)
        if forms.keys().isdisjoint(words):  # most texts: no action word at all
            continue
        for i, word in enumerate(words):
            tool_name = forms.get(word)
            if tool_name is None or any(w in _NEGATIONS for w in words[max(0, i - 4) : i]):
                continue
            if (tool_name, word) not in found:
                found.append((tool_name, word))
    return found


def _lower_words(text: str) -> list[str]:
    """The words of ``text`` (:data:`_WORD`), each in lower case. An ASCII text is
    lowered first, at once: lowering maps A-Z to a-z only there, so the words are the
    same. Elsewhere each word is lowered after it is found, since lowering the whole
    text could make new ASCII letters (the Kelvin sign becomes ``k``)."""
    if text.isascii():
        return _WORD.findall(text.lower())
    return [w.lower() for w in _WORD.findall(text)]


def evidence_text(run: JobRun) -> str:
    """Everything the job knows as text: the message, context, entities, inputs, and
    the arguments and results of its successful tool runs."""
    state = run.state
    parts: list[Any] = [state.message, state.context, state.entities, state.inputs]
    parts.extend([h.args, h.result] for h in state.history if h.ok)
    return _EVIDENCE_JSON.encode(parts)


def added_values(draft: str, polished: str, evidence: str | Callable[[], str]) -> list[str]:
    """Numbers and identifiers (words holding a digit) in ``polished`` found neither in
    ``draft`` nor in ``evidence`` (a number in any of its usual renderings).

    ``evidence`` may be the function that makes it (:func:`evidence_text`): it is
    called only when a value of ``polished`` is not in ``draft`` as written (a polisher
    that keeps the values as they were, the usual case, needs no evidence)."""
    tokens = _values(polished)
    if all(token in draft for token in tokens):
        return []
    known = draft + "\n" + (evidence if isinstance(evidence, str) else evidence())
    known_numbers: set[float] | None = None
    added: list[str] = []
    for token in tokens:
        if token in known or token in added:
            continue
        number = _number(token)
        if number is not None:
            if known_numbers is None:  # read only when a number is not found as written
                known_numbers = {n for n in map(_number, _values(known)) if n is not None}
            if number in known_numbers:
                continue
        added.append(token)
    return added


def _values(text: str) -> list[str]:
    """The words of ``text`` that hold a digit, without trailing punctuation."""
    return [t.rstrip(".-/") for t in _TOKEN.findall(text) if _DIGIT.search(t)]


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None
