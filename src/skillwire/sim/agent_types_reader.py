"""``agent_types.yaml`` as the reference framework writes it.

Enforced: ``global_config.memory.window_size``, ``global_config.llm.temperature`` and
``num_predict`` (sent with each model call), ``global_config.governance.max_retries``
and ``max_reports_per_retry``, ``shared.rating_scale`` and ``shared.response_format``
(the prompt's format section, the delimiters, required fields and numeric ranges), and
per agent type the prompt template, ``parsing`` (decision keywords, default skill,
smart repair, the numeric skill maps, construct keywords), ``actions`` (aliases and
descriptions) and every ``governance`` profile's ``thinking_rules`` and
``identity_rules`` (compiled to CEL). Everything else is reported as read, not
enforced, one warning per block.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillwire.core.issues import SkillIssue
from skillwire.sim.definitions import (
    ActionSpec,
    AgentTypeSpec,
    ConstructSpec,
    ResponseField,
)
from skillwire.sim.governance_reader import read_governance
from skillwire.sim.sources import Document

__all__ = ["GlobalSettings", "read_agent_types"]

_PARSING_ENFORCED = frozenset(
    {"decision_keywords", "default_skill", "preprocessor", "skill_map", "constructs"}
)
_TYPE_ENFORCED = frozenset(
    {
        "description",
        "prompt_template_file",
        "prompt_template",
        "parsing",
        "actions",
        "governance",
        "llm_params",
        "memory",
        "log_fields",
        "multi_skill",
    }
)
_TEXT_PATTERN = ".*"


@dataclass
class GlobalSettings:
    """What the global and shared blocks say."""

    memory_window: int | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    max_retries: int = 2
    max_reports_per_retry: int = 3
    rating_scale: str = ""
    delimiters: tuple[str, str] = ("<<<DECISION_START>>>", "<<<DECISION_END>>>")
    fields: tuple[ResponseField, ...] = ()


def _not_enforced(
    doc: Document, path: tuple[Any, ...], keys: Collection[str], issues: list[SkillIssue]
) -> None:
    if keys:
        issues.append(
            doc.issue(
                path,
                f"read, not enforced: {', '.join(sorted(keys))}",
                warning=True,
                code="not-enforced",
            )
        )


def read_agent_types(
    doc: Document,
    root: Path,
    known_names: Collection[str] | None,
    issues: list[SkillIssue],
    files: dict[str, str],
) -> tuple[GlobalSettings, dict[str, AgentTypeSpec]]:
    """The global settings and every agent type; problems go to ``issues``; prompt
    template files read are added to ``files`` (name -> text)."""
    data = doc.data
    settings = GlobalSettings()
    if not isinstance(data, dict):
        issues.append(doc.issue((), "agent types must be a mapping"))
        return settings, {}
    _global(doc, data.get("global_config"), settings, issues)
    _shared(doc, data.get("shared"), settings, issues)
    types: dict[str, AgentTypeSpec] = {}
    for name, block in data.items():
        if name in ("global_config", "shared", "metadata"):
            continue
        if not isinstance(block, dict):
            issues.append(doc.issue((name,), f"agent type '{name}' must be a mapping"))
            continue
        spec = _agent_type(doc, name, block, settings, root, known_names, issues, files)
        if spec is not None:
            types[name] = spec
    if not types:
        issues.append(doc.issue((), "no agent type is defined"))
    return settings, types


def _global(doc: Document, block: Any, settings: GlobalSettings, issues: list[SkillIssue]) -> None:
    if block is None:
        return
    if not isinstance(block, dict):
        issues.append(doc.issue(("global_config",), "expected a mapping"))
        return
    memory = block.get("memory") or {}
    if isinstance(memory, dict):
        settings.memory_window = _int(
            doc, ("global_config", "memory", "window_size"), memory.get("window_size"), issues
        )
        _not_enforced(
            doc, ("global_config", "memory"), [k for k in memory if k != "window_size"], issues
        )
    llm = block.get("llm") or {}
    if isinstance(llm, dict):
        temperature = llm.get("temperature")
        if isinstance(temperature, int | float) and not isinstance(temperature, bool):
            settings.temperature = float(temperature)
        settings.max_tokens = _int(
            doc, ("global_config", "llm", "num_predict"), llm.get("num_predict"), issues
        )
        _not_enforced(
            doc,
            ("global_config", "llm"),
            [k for k in llm if k not in ("temperature", "num_predict", "model")],
            issues,
        )
    governance = block.get("governance") or {}
    if isinstance(governance, dict):
        retries = _int(
            doc,
            ("global_config", "governance", "max_retries"),
            governance.get("max_retries"),
            issues,
        )
        reports = _int(
            doc,
            ("global_config", "governance", "max_reports_per_retry"),
            governance.get("max_reports_per_retry"),
            issues,
        )
        settings.max_retries = settings.max_retries if retries is None else retries
        settings.max_reports_per_retry = (
            settings.max_reports_per_retry if reports is None else max(1, reports)
        )
    _not_enforced(
        doc,
        ("global_config",),
        [k for k in block if k not in ("memory", "llm", "governance")],
        issues,
    )


def _int(doc: Document, path: tuple[Any, ...], value: Any, issues: list[SkillIssue]) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        issues.append(doc.issue(path, "expected a whole number >= 0"))
        return None
    return value


def _shared(doc: Document, block: Any, settings: GlobalSettings, issues: list[SkillIssue]) -> None:
    if not isinstance(block, dict):
        return
    scale = block.get("rating_scale")
    settings.rating_scale = scale.strip() if isinstance(scale, str) else ""
    fmt = block.get("response_format")
    if not isinstance(fmt, dict):
        return
    start, end = fmt.get("delimiter_start"), fmt.get("delimiter_end")
    if isinstance(start, str) and isinstance(end, str) and start and end:
        settings.delimiters = (start, end)
    fields: list[ResponseField] = []
    for index, item in enumerate(fmt.get("fields") or []):
        path = ("shared", "response_format", "fields", index)
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            issues.append(doc.issue(path, "a field needs a 'key'"))
            continue
        low, high = item.get("min"), item.get("max")
        fields.append(
            ResponseField(
                item["key"],
                str(item.get("type", "text")),
                item.get("required") is True,
                str(item.get("description") or item.get("reason_hint") or ""),
                str(item.get("construct") or ""),
                float(low) if isinstance(low, int | float) and not isinstance(low, bool) else None,
                float(high)
                if isinstance(high, int | float) and not isinstance(high, bool)
                else None,
            )
        )
    settings.fields = tuple(fields)


def _agent_type(
    doc: Document,
    name: str,
    block: dict[str, Any],
    settings: GlobalSettings,
    root: Path,
    known_names: Collection[str] | None,
    issues: list[SkillIssue],
    files: dict[str, str],
) -> AgentTypeSpec | None:
    _not_enforced(doc, (name,), [k for k in block if k not in _TYPE_ENFORCED], issues)
    template = _template(doc, name, block, root, issues, files)
    parsing = block.get("parsing") or {}
    if not isinstance(parsing, dict):
        issues.append(doc.issue((name, "parsing"), "expected a mapping"))
        parsing = {}
    _not_enforced(
        doc,
        (name, "parsing"),
        [k for k in parsing if k not in _PARSING_ENFORCED and not k.startswith("skill_map_")],
        issues,
    )
    keywords = parsing.get("decision_keywords") or ["decision"]
    default = parsing.get("default_skill")
    maps = _skill_maps(doc, name, parsing, issues)
    quote = _quote_values(parsing)
    constructs = _constructs(doc, name, parsing.get("constructs") or {}, quote, issues)
    actions = _actions(doc, name, block.get("actions") or [], issues)
    names = set(known_names) | {c.name for c in constructs} if known_names is not None else None
    governance = read_governance(doc, name, block.get("governance") or {}, names, issues)
    llm = block.get("llm_params") or {}
    temperature = llm.get("temperature") if isinstance(llm, dict) else None
    memory = block.get("memory") or {}
    if isinstance(memory, dict):
        window = _int(doc, (name, "memory", "window_size"), memory.get("window_size"), issues)
        if window is not None:
            settings.memory_window = window
        _not_enforced(doc, (name, "memory"), [k for k in memory if k != "window_size"], issues)
    multi = block.get("multi_skill") or {}
    if isinstance(multi, dict) and multi.get("enabled") is True:
        issues.append(
            doc.issue(
                (name, "multi_skill", "enabled"),
                "multi-skill decisions are not supported: only the main decision is executed",
                warning=True,
                code="not-enforced",
            )
        )
    return AgentTypeSpec(
        name,
        template,
        tuple(str(k) for k in keywords if isinstance(k, str)),
        default if isinstance(default, str) else "",
        maps,
        quote,
        constructs,
        actions,
        governance,
        float(temperature)
        if isinstance(temperature, int | float) and not isinstance(temperature, bool)
        else settings.temperature,
        settings.max_tokens,
        doc.locate((name,)),
    )


def _template(
    doc: Document,
    name: str,
    block: dict[str, Any],
    root: Path,
    issues: list[SkillIssue],
    files: dict[str, str],
) -> str:
    inline = block.get("prompt_template")
    if isinstance(inline, str) and inline.strip():
        return inline
    ref = block.get("prompt_template_file")
    if not isinstance(ref, str) or not ref:
        issues.append(doc.issue((name,), "give a prompt_template or a prompt_template_file"))
        return ""
    path = (root / ref).resolve()
    if not path.is_relative_to(root.resolve()):
        issues.append(
            doc.issue(
                (name, "prompt_template_file"),
                "the prompt file must lie inside the experiment's folder",
            )
        )
        return ""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        issues.append(doc.issue((name, "prompt_template_file"), f"cannot read {ref}: {exc}"))
        return ""
    files[ref] = text
    return text


def _skill_maps(
    doc: Document, name: str, parsing: dict[str, Any], issues: list[SkillIssue]
) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    out: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    for key in ["skill_map", *sorted(k for k in parsing if k.startswith("skill_map_"))]:
        value = parsing.get(key)
        if value is None:
            continue
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            issues.append(
                doc.issue((name, "parsing", key), "a skill map maps numbers to skill ids")
            )
            continue
        flag = "" if key == "skill_map" else key.removeprefix("skill_map_")
        out.append((flag, tuple((str(k), v) for k, v in value.items())))
    if out and out[0][0] != "":
        out.insert(0, ("", ()))
    return tuple(out)


def _quote_values(parsing: dict[str, Any]) -> tuple[str, ...]:
    pre = parsing.get("preprocessor")
    if isinstance(pre, dict) and isinstance(pre.get("quote_values"), list):
        return tuple(str(v) for v in pre["quote_values"])
    return ()


def _constructs(
    doc: Document, name: str, block: Any, quote: tuple[str, ...], issues: list[SkillIssue]
) -> tuple[ConstructSpec, ...]:
    if not isinstance(block, dict):
        issues.append(doc.issue((name, "parsing", "constructs"), "expected a mapping"))
        return ()
    out: list[ConstructSpec] = []
    regexes: list[str] = []
    for cname, spec in block.items():
        path = (name, "parsing", "constructs", cname)
        if not isinstance(spec, dict) or not cname.isidentifier():
            issues.append(doc.issue(path, "a construct is NAME: {keywords: [...]}"))
            continue
        keywords = tuple(k for k in spec.get("keywords") or [] if isinstance(k, str))
        text_only = spec.get("regex") == _TEXT_PATTERN
        labels = spec.get("labels")
        if isinstance(labels, list):
            found = tuple(str(v) for v in labels)
        else:
            found = () if text_only else quote
        if not text_only and not found:
            issues.append(
                doc.issue(
                    path,
                    "name the construct's labels (labels: [...] or the "
                    "smart_repair preprocessor's quote_values)",
                )
            )
        if "regex" in spec and not text_only:
            regexes.append(cname)
        out.append(ConstructSpec(cname, keywords, found))
    if regexes:
        issues.append(
            doc.issue(
                (name, "parsing", "constructs"),
                f"regex of {', '.join(regexes)} is read, not run: a label is taken as a "
                "whole word among the labels",
                warning=True,
                code="not-enforced",
            )
        )
    return tuple(out)


def _actions(
    doc: Document, name: str, block: Any, issues: list[SkillIssue]
) -> tuple[ActionSpec, ...]:
    out: list[ActionSpec] = []
    if not isinstance(block, list):
        issues.append(doc.issue((name, "actions"), "expected a list"))
        return ()
    for index, item in enumerate(block):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            issues.append(doc.issue((name, "actions", index), "an action needs an 'id'"))
            continue
        aliases = tuple(a for a in item.get("aliases") or [] if isinstance(a, str))
        out.append(ActionSpec(item["id"], aliases, str(item.get("description") or "")))
    return tuple(out)
