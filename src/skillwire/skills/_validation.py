"""Turning a document into a model, with every problem located in the file.

Pydantic reports errors by path; the document knows where each path was written.
After validation, :func:`walk_extras` finds keys the model does not know and blocks
that are read but not enforced (info lines). An unknown key is a warning with a "did
you mean", except inside a policy block (:data:`POLICY_BLOCKS`), where it is an error:
a typo there (``requires_aproval``) would silently weaken a rule.
"""

from __future__ import annotations

import difflib
import functools
import typing
from collections.abc import Iterator
from typing import Annotated, Any, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import FieldPath
from skillwire.skills.model import OutputContract, RequiredInput
from skillwire.skills.model_policy import Policy
from skillwire.skills.model_tests import DryRunTest
from skillwire.skills.model_tools import ToolPolicy
from skillwire.skills.source import Document

__all__ = ["NOT_ENFORCED", "POLICY_BLOCKS", "document_path", "validate_document", "walk_extras"]

POLICY_BLOCKS: tuple[type[BaseModel], ...] = (
    ToolPolicy,
    Policy,
    RequiredInput,
    OutputContract,
    DryRunTest,
)
"""``tools[].policy``, ``policy``, ``required_inputs[]`` and ``output_contract``: inside
these (at any depth) an unknown key is an error, not a warning (FORMATS.md, DESIGN.md).
A dry-run test (``tests[]``) is held to the same rule: a misspelled expectation would
make a test pass that checks nothing."""

M = TypeVar("M", bound=BaseModel)

NOT_ENFORCED: dict[str, str] = {
    "mcp_server": "MCP server settings are read, not used: configure MCP executors per tool",
    "connectors": "connectors are read, not used",
    "triggers": "triggers are read, not enforced",
    "channels": "channels are read, not enforced",
    "meta_tools": "meta tools are read, not used",
    "bootstrap_tools": "bootstrap tools are read, not run",
    "prefetch_tools": "prefetch tools are read, not run",
    "ui_plugins": "UI plugins are read, not used",
    "grant_mappings": "grant mappings are read, not enforced",
    "access_policy": "access policy rules are read, not enforced",
    "response_filters": "response filters are read, not enforced",
    "context_propagation": "context propagation is read, not enforced",
    "handoff_when": "hand-off conditions are read, not enforced",
    "access": "policy.access (required roles) is read, not enforced",
    "security": "security labels are read, not enforced",
    "on_deviation": (
        "on_deviation is read, not enforced: required workflows block out-of-order tools"
    ),
    "internal_error": "engine.internal_error is read, not used",
}
"""Blocks skillwire reads but does not enforce, by field name, with what the report says."""

_INFORMATIONAL = frozenset(
    {
        "phase",
        "created_at",
        "updated_at",
        "scenarios",
        "glossary",
        "validation",
        "conversation",
        "mock",
        "mock_status",
        "source",
        "trigger",
        "stages",
    }
)


def document_path(data: Any, loc: tuple[int | str, ...]) -> FieldPath:
    """Strip pydantic's union and tag markers from ``loc``, keeping real document keys."""
    path: list[str | int] = []
    node = data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, dict) and isinstance(part, str):
            if part in node:
                path.append(part)
                node = node[part]
            elif last or _is_field_name(part):
                path.append(part)
                node = None
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            path.append(part)
            node = node[part]
    return tuple(path)


def _is_field_name(part: str) -> bool:
    """A pydantic loc part that names a field (not a union member like ``str``)."""
    return part.isidentifier() and not part[:1].isupper() and part not in _UNION_TAGS


_UNION_TAGS = frozenset({"str", "int", "float", "bool", "list", "dict", "none", "literal"})


def validate_document(
    model: type[M], data: Any, doc: Document, *, prefix: FieldPath = ()
) -> tuple[M | None, list[SkillIssue]]:
    """Validate ``data`` (found at ``prefix`` in ``doc``) as ``model``; all errors located."""
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        grouped: dict[FieldPath, list[str]] = {}
        for err in exc.errors(include_url=False):
            path = document_path(data, tuple(err["loc"]))
            msg = _message(err)
            bucket = grouped.setdefault(path, [])
            if msg not in bucket:
                bucket.append(msg)
        issues = []
        for path, messages in grouped.items():
            full = prefix + path
            text = messages[0] if len(messages) == 1 else " or ".join(messages[:3])
            issues.append(
                SkillIssue(Severity.ERROR, text, doc.locate(full), full, code="invalid-field")
            )
        return None, issues


def _message(err: Any) -> str:
    kind = err.get("type", "")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field"
    msg = str(err.get("msg", "invalid value"))
    value = err.get("input")
    if kind in {"literal_error", "enum"} or kind.endswith("_type") or kind.endswith("_parsing"):
        shown = repr(value) if not isinstance(value, dict | list) else type(value).__name__
        return f"{msg}, got {shown}"
    return msg


def walk_extras(obj: BaseModel, doc: Document, *, prefix: FieldPath = ()) -> Iterator[SkillIssue]:
    """Unknown keys (errors inside a policy block, warnings elsewhere) and info for blocks
    read but not enforced, recursively. Keys starting with ``_`` are ignored silently."""
    yield from _walk(obj, doc, prefix, strict=False)


class _FieldPlan(NamedTuple):
    """What the walk does with one field of a model class."""

    name: str
    key: str
    """The key as written in the document (the alias, if any)."""
    not_enforced: bool
    """The field is read but not enforced: an info line when present."""
    may_hold_models: bool
    """The field's type can hold a model (walked into), unless it is informational."""


@functools.cache
def _field_plans(model: type[BaseModel]) -> tuple[_FieldPlan, ...]:
    """The fields the walk must look at, in declaration order (computed once per class).

    A field that is neither "not enforced" nor able to hold a model (``str``,
    ``list[str]``, ``Any`` ...) holds no key the walk could report, and is skipped."""
    plans = []
    for name, field in model.model_fields.items():
        plan = _FieldPlan(
            name,
            field.alias or name,
            name in NOT_ENFORCED,
            name not in _INFORMATIONAL and _mentions_model(field.annotation),
        )
        if plan.not_enforced or plan.may_hold_models:
            plans.append(plan)
    return tuple(plans)


def _mentions_model(annotation: Any) -> bool:
    """Whether a field of this type can hold a model (True when unsure)."""
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return False
    if origin is Annotated:
        return _mentions_model(typing.get_args(annotation)[0])
    if origin is not None:
        return any(_mentions_model(arg) for arg in typing.get_args(annotation))
    if annotation is Any or annotation is None or annotation is type(None):
        return False
    if isinstance(annotation, type):
        return issubclass(annotation, BaseModel)
    return True


def _walk(obj: BaseModel, doc: Document, path: FieldPath, *, strict: bool) -> Iterator[SkillIssue]:
    strict = strict or isinstance(obj, POLICY_BLOCKS)
    extra = obj.__pydantic_extra__
    if extra:
        yield from _unknown_keys(type(obj), extra, doc, path, strict=strict)
    values = obj.__dict__
    for plan in _field_plans(type(obj)):
        value = values[plan.name]
        if plan.not_enforced and _present(value) and plan.key in _raw_keys(doc, path):
            yield SkillIssue(
                Severity.INFO,
                f"present, not enforced: {NOT_ENFORCED[plan.name]}",
                doc.locate((*path, plan.key)),
                (*path, plan.key),
                code="not-enforced",
            )
        if plan.may_hold_models:
            yield from _walk_value(value, doc, (*path, plan.key), strict=strict)


def _unknown_keys(
    model: type[BaseModel], extra: dict[str, Any], doc: Document, path: FieldPath, *, strict: bool
) -> Iterator[SkillIssue]:
    """One finding per unknown key of ``model``: an error inside a policy block, else a
    warning; both with the nearest known key, an error with every known key otherwise."""
    fields = model.model_fields
    known = [f.alias or name for name, f in fields.items()]
    known += [name for name, f in fields.items() if f.alias]
    for name in extra:
        if name.startswith("_"):
            continue
        near = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        if near:
            hint = f"did you mean '{near[0]}'?"
        else:
            hint = f"known keys: {', '.join(known[:12])}" if strict else ""
        where = (*path, name)
        if strict:
            yield SkillIssue(
                Severity.ERROR,
                f"unknown key '{name}' in a policy block: a misspelled key here would "
                "weaken a rule, so it is an error",
                doc.locate(where),
                where,
                code="unknown-key",
                hint=hint,
            )
        else:
            yield SkillIssue(
                Severity.WARNING,
                f"unknown key '{name}' is ignored",
                doc.locate(where),
                where,
                code="unknown-key",
                hint=hint,
            )


def _walk_value(
    value: Any, doc: Document, path: FieldPath, *, strict: bool
) -> Iterator[SkillIssue]:
    if isinstance(value, BaseModel):
        yield from _walk(value, doc, path, strict=strict)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, BaseModel):
                yield from _walk(item, doc, (*path, i), strict=strict)
    elif isinstance(value, dict):
        for k, item in value.items():
            if isinstance(item, BaseModel):
                yield from _walk(item, doc, (*path, k), strict=strict)


def _present(value: Any) -> bool:
    return value not in (None, [], {}, "", False)


def _raw_keys(doc: Document, path: FieldPath) -> set[str]:
    node = doc.data
    for part in path:
        if isinstance(node, dict) and isinstance(part, str):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return set()
    return set(node) if isinstance(node, dict) else set()
