"""How each rule of an experiment is enforced (``skillwire check --explain``)."""

from __future__ import annotations

from typing import Any

from skillwire.sim.definitions import Experiment

__all__ = ["explain_experiment"]


def explain_experiment(experiment: Experiment) -> dict[str, Any]:
    """Every enforced rule: what it is, the skills it applies to, the CEL that runs, and
    where it was written (JSON-ready)."""
    rules: list[dict[str, Any]] = []
    for skill in experiment.skills.values():
        for pre in skill.preconditions:
            rules.append(
                _rule(
                    f"{skill.id} needs {pre.source}",
                    "precondition (feasibility)",
                    [skill.id],
                    pre.condition.expression,
                    str(pre.location),
                )
            )
        for flag, text in (
            ("once_only", "once per agent, over its whole history (institutional)"),
            ("permanent", "after it, the agent never decides again (institutional)"),
            ("annual", "at most once per step (institutional)"),
        ):
            if getattr(skill, flag):
                rules.append(
                    _rule(f"{skill.id}: {flag}", text, [skill.id], "", str(skill.location))
                )
        allowed = ", ".join(sorted(skill.allowed_state_changes)) or "nothing"
        rules.append(
            _rule(
                f"{skill.id} may change {allowed}",
                "effect safety: checked after execution, rolled back otherwise",
                [skill.id],
                "",
                str(skill.location),
            )
        )
        if skill.eligible != ("*",):
            rules.append(
                _rule(
                    f"{skill.id} only for {', '.join(skill.eligible)}",
                    "admissibility",
                    [skill.id],
                    "",
                    str(skill.location),
                )
            )
    for name, spec in experiment.agent_types.items():
        for profile, profile_rules in sorted(spec.governance.items()):
            for rule in profile_rules:
                treated = (
                    "rejects, named in the retry prompt"
                    if rule.level == "ERROR"
                    else "recorded in the audit, never sent to the model"
                )
                rules.append(
                    _rule(
                        f"{name}/{profile}: {rule.id} ({rule.kind}, {rule.level})",
                        f"consistency: {treated}",
                        sorted(rule.blocked_skills),
                        rule.condition.expression,
                        str(rule.location),
                    )
                )
    if experiment.inactive_when is not None:
        rules.append(
            _rule(
                f"an agent stops deciding when {experiment.inactive_when.source}",
                "activity",
                [],
                experiment.inactive_when.expression,
                "experiment.yaml",
            )
        )
    return {
        "experiment": experiment.name,
        "source": experiment.source,
        "governance": experiment.governance,
        "profiles": experiment.profiles,
        "rules": rules,
    }


def _rule(text: str, kind: str, skills: list[str], expression: str, source: str) -> dict[str, Any]:
    return {
        "text": text,
        "kind": kind,
        "skills": skills,
        "expression": expression,
        "source": source,
    }
