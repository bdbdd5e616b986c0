"""Tools from an OpenAPI 3 document: one ``http_request`` tool per operation.

Path and required query parameters become the URL template (``{{field}}``), a JSON
request body's required properties the ``body`` template; all of them the tool's
``inputSchema``. Optional query parameters and body fields are left out, and said: a
template cannot leave out a value the model did not give. Local
``$ref`` s (``#/components/...``) are inlined; any other reference is refused, since
skillwire never fetches a schema. Nothing is sent anywhere.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from skillwire.builder.python_tools import ImportedTools
from skillwire.builder.tool_effects import identifier_words
from skillwire.core.errors import UsageError

__all__ = ["tools_from_openapi"]

_METHODS = ("get", "post", "put", "patch", "delete")
_MAX_REF_DEPTH = 20


def _read(file: Path) -> dict[str, Any]:
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {file}: {exc}") from None
    try:
        data = json.loads(text) if file.suffix.lower() == ".json" else YAML(typ="safe").load(text)
    except (ValueError, YAMLError) as exc:
        raise UsageError(f"{file} is not JSON or YAML: {exc}") from None
    if not isinstance(data, dict) or not str(data.get("openapi", "")).startswith("3"):
        raise UsageError(f"{file} is not an OpenAPI 3 document (no `openapi: 3.x`)")
    return data


def _resolve(doc: dict[str, Any], node: Any, depth: int = 0) -> Any:
    """``node`` with local ``$ref`` s inlined (a cycle or a deep chain is an error)."""
    if depth > _MAX_REF_DEPTH:
        raise ValueError("a $ref chain is too deep or refers to itself")
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            if not ref.startswith("#/"):
                raise ValueError(f"remote $ref {ref!r}: skillwire never fetches schemas")
            target: Any = doc
            for raw in ref[2:].split("/"):
                part = raw.replace("~1", "/").replace("~0", "~")
                if not isinstance(target, dict) or part not in target:
                    raise ValueError(f"$ref {ref!r} points nowhere")
                target = target[part]
            return _resolve(doc, target, depth + 1)
        return {k: _resolve(doc, v, depth + 1) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve(doc, v, depth + 1) for v in node]
    return node


def _tool_name(operation: dict[str, Any], method: str, path: str) -> str:
    raw = operation.get("operationId") or f"{method} {path}"
    return "_".join(identifier_words(str(raw))) or method


def _operation_tool(
    doc: dict[str, Any],
    base: str,
    path: str,
    method: str,
    operation: dict[str, Any],
    shared: list[Any],
    left_out: list[str],
) -> dict[str, Any]:
    """The tool of one operation. An optional query parameter or body field is left out
    (said in ``left_out``): a template cannot leave out a value the model did not give,
    so only values every call has are templated."""
    where_said = f"{method.upper()} {path}"
    properties: dict[str, Any] = {}
    required: list[str] = []
    query: list[str] = []
    url_path = path
    for declared in [*shared, *(operation.get("parameters") or [])]:
        param = _resolve(doc, declared)
        where, name = param.get("in"), param.get("name")
        if where not in ("path", "query") or not isinstance(name, str):
            continue  # headers and cookies are the operator's (credentials), not the model's
        if where == "query" and not param.get("required"):
            left_out.append(f"{where_said}: optional query parameter {name}")
            continue
        schema = dict(param.get("schema") or {"type": "string"})
        if param.get("description"):
            schema.setdefault("description", param["description"])
        properties[name] = schema
        required.append(name)
        if where == "path":
            url_path = url_path.replace("{" + name + "}", "{{" + name + "}}")
        else:
            query.append(name)
    body_fields: list[str] = []
    content = _resolve(doc, operation.get("requestBody") or {}).get("content") or {}
    body_schema = (content.get("application/json") or {}).get("schema")
    if isinstance(body_schema, dict):
        needed = set(body_schema.get("required") or [])
        for name, schema in (body_schema.get("properties") or {}).items():
            if name not in needed:
                left_out.append(f"{where_said}: optional body field {name}")
                continue
            properties[name] = schema
            body_fields.append(name)
            required.append(name)
    url = base.rstrip("/") + url_path
    if query:
        url += "?" + "&".join(f"{q}={{{{{q}}}}}" for q in query)
    executor: dict[str, Any] = {"type": "http_request", "method": method.upper(), "url": url}
    if body_fields:
        executor["body"] = {name: "{{" + name + "}}" for name in body_fields}
    arguments: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        arguments["required"] = sorted(set(required), key=required.index)
    description = operation.get("summary") or operation.get("description") or where_said
    return {
        "name": _tool_name(operation, method, path),
        "description": " ".join(str(description).split()),
        "inputSchema": arguments,
        "executor": executor,
    }


def tools_from_openapi(file: Path) -> ImportedTools:
    """One ``http_request`` tool per operation of the document in ``file``."""
    doc = _read(file)
    servers = doc.get("servers") or [{}]
    base = str(servers[0].get("url", "")) if isinstance(servers[0], dict) else ""
    result = ImportedTools()
    if not base.startswith(("http://", "https://")):
        result.skipped.append(
            "the document names no absolute server URL: the tools' URLs start with "
            "https://api.example.invalid, change them"
        )
        base = "https://api.example.invalid" + base
    for path, item in (doc.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        shared = item.get("parameters") or []
        for method in _METHODS:
            operation = item.get(method)
            if not isinstance(operation, dict):
                continue
            try:
                result.tools.append(
                    _operation_tool(doc, base, str(path), method, operation, shared, result.skipped)
                )
            except ValueError as exc:
                result.skipped.append(f"{method.upper()} {path}: {exc}")
    return result
