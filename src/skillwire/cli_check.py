"""Rendering the load report (and, with ``--explain``, the compiled rules) for a terminal."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.table import Table

from skillwire.cli_output import console as plain_console
from skillwire.cli_output import styled, terminal_width
from skillwire.core.issues import Severity
from skillwire.skills import LoadResult
from skillwire.skills.model import Skill
from skillwire.skills.report import LoadReport

__all__ = ["add_rule_findings", "explain_skills", "render_explain", "render_report"]

_STYLE = {"ok": "green", "warnings": "yellow", "errors": "bold red"}


def render_report(report: LoadReport, *, verbose: bool = False, strict: bool = False) -> None:
    """A table per skill and file, then every finding with its location."""
    console = plain_console(width=terminal_width())
    table = Table(title="skill load report", show_lines=False)
    for col in ("skill", "file", "status", "errors", "warnings"):
        table.add_column(col)
    for rep in report.skills:
        for i, (file, found) in enumerate(rep.files.items()):
            status = rep.file_status(file)
            table.add_row(
                (rep.skill_id or "?") if i == 0 else "",
                file,
                styled((status, _STYLE[status])),
                str(sum(1 for x in found if x.severity is Severity.ERROR)),
                str(sum(1 for x in found if x.severity is Severity.WARNING)),
            )
    console.print(table)
    for rep in report.skills:
        for issue in rep.issues:
            if issue.severity is Severity.INFO and not verbose:
                continue
            color = {"error": "red", "warning": "yellow", "info": "cyan"}[str(issue.severity)]
            # An issue quotes the author's text: printed as written, never read as markup.
            console.print(styled((str(issue), color)), soft_wrap=True)
    loaded = sum(1 for r in report.skills if r.loaded)
    verdict = "ok" if report.ok and not (strict and report.warning_count) else "failed"
    console.print(
        f"{loaded} of {len(report.skills)} skills loaded, {report.error_count} errors, "
        f"{report.warning_count} warnings: {verdict}"
    )


def add_rule_findings(result: LoadResult) -> None:
    """Add to each loaded skill's report what compiling its rules found (a guardrail
    sentence understood only in part), so ``check`` shows it and ``--strict`` counts it."""
    from skillwire.policy import compile_policy

    for rep in result.report.skills:
        skill = result.skills.get(rep.skill_id or "") if rep.loaded else None
        if skill is not None:
            for finding in compile_policy(skill).findings:
                rep.add(finding.location.file, [finding])


def explain_skills(skills: Iterable[Skill]) -> list[dict[str, Any]]:
    """Every rule of every skill and how it is enforced (JSON-ready)."""
    from skillwire.policy.explain import explain_skill

    return [explain_skill(skill) for skill in skills]


def render_explain(skills: Iterable[Skill]) -> None:
    """A table per skill: rule, how it is treated, its scope, where it was written; then
    the intents each workflow and required input applies to."""
    from skillwire.policy.explain import EVERY_INTENT

    console = plain_console(width=terminal_width())
    for entry in explain_skills(skills):
        table = Table(title=f"rules of {entry['skill']}", show_lines=True)
        for col in ("rule", "treated as", "applies to", "runs", "source"):
            table.add_column(col, overflow="fold")
        for rule in entry["rules"]:
            kind = rule["kind"] + (f" ({rule['note']})" if rule.get("note") else "")
            intents = rule.get("intents") or []
            scope = "" if intents in ([], [EVERY_INTENT]) else f" (intents: {', '.join(intents)})"
            table.add_row(
                rule["text"],
                kind,
                (", ".join(rule["tools"]) or "-") + scope,
                rule.get("expression") or "-",
                rule["source"],
            )
        console.print(table)
        if entry.get("facts"):
            facts = Table(title=f"facts of {entry['skill']}")
            for col in ("fact", "runs", "read by", "source"):
                facts.add_column(col, overflow="fold")
            for fact in entry["facts"]:
                readers = "\n".join(fact["read_by"]) or "(no rule)"
                facts.add_row(fact["name"], fact["expression"], readers, fact["source"])
            console.print(facts)
        scoped = [
            (f"workflow {w['name']}" + ("" if w["required"] else " (not required)"), w)
            for w in entry.get("workflows") or []
        ]
        scoped += [(f"required input {r['path']}", r) for r in entry.get("required_inputs") or []]
        if scoped:
            scopes = Table(title=f"intent scope of {entry['skill']}")
            for col in ("workflow or input", "applies to intents", "source"):
                scopes.add_column(col, overflow="fold")
            for what, item in scoped:
                scopes.add_row(what, ", ".join(item["intents"]), item["source"])
            console.print(scopes)
        cut = entry.get("text_rules_cut") or 0
        console.print(
            f"planner text: {entry['text_rules']} rules, about {entry['text_tokens']} tokens "
            f"of a budget of {entry['text_token_budget']}"
            + (f"; {cut} text rules cut (finalization gate only)" if cut else "")
        )
        access = entry.get("access") or {}
        for dropped in access.get("dropped") or []:
            console.print(
                styled(("not applied (the base policy does not allow it):", "yellow"), " ", dropped)
            )
