"""The interview's phases about what the agent is for: the problem, scenarios, intents
with examples, required inputs, the output contract and the persona."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from ruamel.yaml.comments import CommentedMap

from skillwire.builder import edits
from skillwire.builder.interview import PhaseResult, Question, Session
from skillwire.builder.tool_effects import identifier_words
from skillwire.builder.yaml_text import plain

__all__ = [
    "intents_phase",
    "output_phase",
    "persona_phase",
    "problem_phase",
    "required_inputs_phase",
    "scenarios_phase",
    "sentences",
    "slug",
]

Change = Callable[[CommentedMap], None]


def slug(text: str, limit: int = 4) -> str:
    """``Refund a broken order!`` -> ``refund_a_broken_order`` (at most ``limit`` words)."""
    return "_".join(identifier_words(text)[:limit])


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (split after ``.``, ``!`` or ``?`` and a space)."""
    found: list[str] = []
    current: list[str] = []
    for word in text.split():
        current.append(word)
        if word.endswith((".", "!", "?")):
            found.append(" ".join(current))
            current = []
    if current:
        found.append(" ".join(current))
    return found


def _data(session: Session) -> dict[str, Any]:
    value = plain(session.draft.data)
    return value if isinstance(value, dict) else {}


def _statement_change(answer: str) -> Change:
    if len(answer) < 5:
        raise ValueError("say in one sentence what the agent solves")
    return lambda root: edits.set_problem(root, answer)


def problem_phase(session: Session) -> PhaseResult:
    """The problem statement and goals."""
    problem = _data(session).get("problem") or {}
    if session.only_missing and problem.get("statement"):
        return PhaseResult.DONE
    session.say("1. the problem", "note")
    default = problem.get("statement") or session.description
    taken = session.settle(
        Question("In one sentence, what does this agent solve?", default=default),
        _statement_change,
        "problem statement",
        keep=problem.get("statement"),
    )
    if taken is None:
        return PhaseResult.BACK
    goals = session.ask_list(
        Question("A goal it should reach", note="e.g. Reduce response time"),
        [str(g) for g in problem.get("goals") or []],
    )
    if goals is None:
        return PhaseResult.BACK
    if goals and goals != [str(g) for g in problem.get("goals") or []]:
        statement = str((_data(session).get("problem") or {}).get("statement", default))
        session.apply(lambda root: edits.set_problem(root, statement, goals), "goals")
    return PhaseResult.DONE


def scenarios_phase(session: Session) -> PhaseResult:
    """Situations the agent handles, in the author's words (they seed the intents)."""
    if session.only_missing:  # optional: after a draft, not asked again
        return PhaseResult.DONE
    session.say("2. scenarios: situations the agent handles", "note")
    existing = len(_data(session).get("scenarios") or [])
    items = session.ask_list(
        Question(
            "A situation, in a sentence", note="e.g. A customer wants a refund for a broken item"
        )
    )
    if items is None:
        return PhaseResult.BACK
    for offset, text in enumerate(items, start=existing + 1):
        title = " ".join(text.split()[:6])
        session.apply(
            partial(
                edits.add_scenario, scenario_id=f"scenario_{offset}", title=title, description=text
            ),
            f"scenario {offset}",
        )
    return PhaseResult.DONE


def _intent_defaults(session: Session) -> list[tuple[str, str, list[str]]]:
    """Intents proposed from the scenarios, else from the description."""
    data = _data(session)
    proposed = []
    for item in data.get("scenarios") or []:
        text = str(item.get("description") or item.get("title") or "")
        if text:
            proposed.append((f"intent_{slug(text)}", text, [text]))
    if not proposed and session.description:
        for said in sentences(session.description):  # one intent per thing it is for
            proposed.append((f"intent_{slug(said)}", said, [said]))
    if not proposed:
        proposed.append(("intent_help", "The user asks for help", ["I need help"]))
    return proposed


def intents_phase(session: Session) -> PhaseResult:
    """Intents, each with a description and examples of what users say."""
    intents = (_data(session).get("intents") or {}).get("supported") or []
    if session.only_missing and intents:
        return PhaseResult.DONE
    session.say("3. intents: what users ask for, with examples of how they say it", "note")
    if intents:
        session.say("the draft has: " + ", ".join(str(i.get("id")) for i in intents), "note")
    for proposed in [] if intents else _intent_defaults(session):
        if _intent(session, *proposed) is PhaseResult.BACK:
            return PhaseResult.BACK
    return session.repeat("Add an intent?", False, partial(_intent, session))


def _intent(
    session: Session,
    default_id: str = "",
    default_text: str = "",
    default_examples: Sequence[str] = (),
) -> PhaseResult | None:
    """One intent (a proposed one is offered as the defaults)."""
    intent_id = session.ask(Question("Intent id", default=default_id, note="e.g. intent_refund"))
    if intent_id is None:
        return PhaseResult.BACK
    intent_id = slug(intent_id, 8) or default_id
    text = session.ask(Question("What does the user want, in a sentence?", default=default_text))
    if text is None:
        return PhaseResult.BACK
    examples = session.ask_list(Question("Something a user would write"), default_examples)
    if examples is None:
        return PhaseResult.BACK
    if not examples:
        session.say("an intent needs at least one example: left out", "error")
        return None
    session.apply(
        partial(edits.add_intent, intent_id=intent_id, description=text, examples=examples),
        f"intent {intent_id}",
    )
    return None


def _parse_input(answer: str) -> dict[str, Any]:
    """``order_id`` / ``order_id: ORD-[0-9]{5}`` -> a required input entry."""
    path, _, pattern = answer.partition(" ")
    if not path or any(not part.isidentifier() for part in path.split(".")):
        raise ValueError(f"{path!r} is not a field path (letters, digits, _ and dots)")
    entry: dict[str, Any] = {"path": path}
    return entry | ({"pattern": pattern.strip()} if pattern.strip() else {})


def required_inputs_phase(session: Session) -> PhaseResult:
    """Values asked of the user before the first tool call (spec 001)."""
    if session.only_missing:
        return PhaseResult.DONE
    session.say("8. required inputs: what to ask before any tool runs", "note")
    text = "Ask the user for something before any tool runs?"
    return session.repeat(text, False, partial(_required_input, session))


def _required_input(session: Session) -> PhaseResult | None:
    """One value asked of the user. Raises :class:`ValueError` for a path that is not
    one."""
    path = session.ask(Question("Field path", note="e.g. order_id or identity.email"))
    if path is None:
        return PhaseResult.BACK
    entry = _parse_input(path)  # what is wrong is said, and the question asked again
    prompt = session.ask(Question("What the user is asked", default=f"What is your {path}?"))
    kind = session.ask(Question("Answer type", ("text", "choice"), "text"))
    if prompt is None or kind is None:
        return PhaseResult.BACK
    entry |= {"prompt": prompt, "input_type": kind}
    if kind == "choice":
        options = session.ask_list(Question("An option"))
        if options is None:
            return PhaseResult.BACK
        entry["options"] = options
    session.apply(partial(edits.add_required_input, entry=entry), f"input {path}")
    return None


def _contract_change(answer: str) -> Change:
    fields = _fields(answer)
    bad = [f for f in fields if not f.isidentifier()]
    if bad:
        raise ValueError(f"not field names: {', '.join(bad)}")
    return lambda root: edits.set_output_contract(root, fields)


def output_phase(session: Session) -> PhaseResult:
    """The fields every final answer must carry."""
    contract = (_data(session).get("output_contract") or {}).get("required_fields") or []
    if session.only_missing and contract:
        return PhaseResult.DONE
    session.say("9. output contract: fields every final answer must carry", "note")
    answer = session.ask(
        Question(
            "Fields, separated by commas (empty: none)",
            default=", ".join(map(str, contract)),
            note="checked mechanically before any reply, e.g. order_id, status, next_steps",
        )
    )
    while answer is not None:
        try:
            change = _contract_change(answer)
        except ValueError as exc:
            session.say(str(exc), "error")
            answer = session.ask(Question("Fields, separated by commas (empty: none)"))
            continue
        if _fields(answer) != [str(f) for f in contract]:
            session.apply(change, "output contract")
        return PhaseResult.DONE
    return PhaseResult.BACK


def _fields(answer: str) -> list[str]:
    return [f.strip() for f in answer.replace(",", " ").split() if f.strip()]


TONES = ("warm", "neutral", "formal", "concise", "none")
"""The tones offered for the persona."""


def persona_phase(session: Session) -> PhaseResult:
    """The role name, the persona and the tone the reply polisher applies; and what is
    said to a message outside the skill."""
    data = _data(session)
    role = data.get("role") or {}
    if session.only_missing and role.get("persona"):
        return PhaseResult.DONE
    session.say("10. persona: who answers, and how", "note")
    name = session.ask(Question("The agent's role name", default=role.get("name") or "Assistant"))
    if name is None:
        return PhaseResult.BACK
    persona = session.ask(
        Question(
            "Its persona, in a sentence",
            default=role.get("persona") or "Helpful, precise and honest about what it cannot do",
        )
    )
    if persona is None:
        return PhaseResult.BACK
    style = role.get("communication_style") or {}
    current_tone = str(style.get("tone") or "")
    default_tone = current_tone if current_tone in TONES else "none" if role else "warm"
    tone = session.ask(Question("Tone", TONES, default_tone))
    if tone is None:
        return PhaseResult.BACK
    changed = (
        name != role.get("name"),
        persona != role.get("persona"),
        tone not in ("none", current_tone),
    )
    if any(changed):
        change = partial(
            edits.set_persona,
            name=name if changed[0] else "",
            persona=persona if changed[1] else "",
            tone=tone if changed[2] else "",
        )
        session.apply(change, "persona")
    statement = str((data.get("problem") or {}).get("statement") or "this")
    current = (data.get("intents") or {}).get("out_of_domain") or {}
    message = session.ask(
        Question(
            "The reply to a message this skill does not handle",
            default=current.get("message") or f"I can only help with: {statement}",
        )
    )
    if message is None:
        return PhaseResult.BACK
    if message != current.get("message"):
        action = str(current.get("action") or "redirect")
        change = partial(edits.set_out_of_domain, action=action, message=message)
        session.apply(change, "out of domain")
    return PhaseResult.DONE
