"""Tools generated from the app's own OpenAPI document: one per key-callable `/api/v1` operation.

Nothing here is hand-listed, so a new route is a new tool without touching this package. A tool's
arguments are the operation's path and query parameters plus the fields of its JSON body (flat,
as an agent would write them); a body that cannot be flattened (not an object, or a field named
like a parameter) is one `body` argument instead. Multipart operations take `file` as text (CSV)
or `file_base64` (images and other binary files), plus their other form fields.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

API_PREFIX = "/api/v1"
REF_PREFIX = "#/components/schemas/"
HTTP_METHODS = ("get", "post", "put", "patch", "delete")
BODY_ARGUMENT = "body"
FILE_TEXT = "file"
FILE_BASE64 = "file_base64"
FILE_NAME = "filename"


@dataclass
class Operation:
    """How to turn a tool call back into the HTTP request it stands for."""

    name: str
    method: str
    path: str
    path_params: list[str] = field(default_factory=list)
    query_params: list[str] = field(default_factory=list)
    json_body: bool = False
    body_flattened: bool = False
    body_fields: set[str] = field(default_factory=set)
    form_fields: list[str] = field(default_factory=list)
    file_fields: list[str] = field(default_factory=list)
    tool: types.Tool | None = None


def key_callable(path: str, operation: dict[str, Any]) -> bool:
    """Every API operation (under /api/v1): each is called with the caller's own credential
    (the one that needs none, a grant's exchange, ignores it)."""
    return path.startswith(API_PREFIX)


def build_operations(openapi: dict[str, Any]) -> dict[str, Operation]:
    schemas = openapi.get("components", {}).get("schemas", {})
    found: dict[str, Operation] = {}
    for path, item in openapi.get("paths", {}).items():
        for method in HTTP_METHODS:
            spec = item.get(method)
            if spec is None or not key_callable(path, spec):
                continue
            operation = _operation(path, method, spec, schemas)
            found[operation.name] = operation
    return found


def _operation(path: str, method: str, spec: dict[str, Any], schemas: dict[str, Any]) -> Operation:
    op = Operation(name=spec["operationId"], method=method.upper(), path=path)
    properties: dict[str, Any] = {}
    required: list[str] = []
    rules: list[dict[str, Any]] = []
    for param in spec.get("parameters", []):
        if param.get("in") not in ("path", "query"):
            continue
        name = param["name"]
        schema = _describe(_simplify(param.get("schema", {})), param.get("description"))
        properties[name] = schema
        if param["in"] == "path":
            op.path_params.append(name)
            required.append(name)
        else:
            op.query_params.append(name)
            if param.get("required"):
                required.append(name)

    content = spec.get("requestBody", {}).get("content", {})
    body_required = bool(spec.get("requestBody", {}).get("required"))
    if "application/json" in content:
        _add_json_body(
            op,
            content["application/json"]["schema"],
            body_required,
            schemas,
            properties,
            required,
            rules,
        )
    if "multipart/form-data" in content:
        _add_form(op, content["multipart/form-data"]["schema"], schemas, properties)

    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = sorted(set(required), key=required.index)
    if rules:
        input_schema["allOf"] = rules
    defs = _collect_defs(input_schema, schemas)
    if defs:
        input_schema["$defs"] = defs
    op.tool = types.Tool(
        name=op.name,
        title=spec.get("summary"),
        description=_tool_description(spec, op),
        input_schema=_rewrite_refs(input_schema),
        annotations=types.ToolAnnotations(
            title=spec.get("summary"),
            read_only_hint=op.method == "GET",
            destructive_hint=op.method == "DELETE",
            idempotent_hint=op.method in ("GET", "PUT", "DELETE"),
            open_world_hint=False,
        ),
    )
    return op


def _add_json_body(
    op: Operation,
    schema: dict[str, Any],
    body_required: bool,
    schemas: dict[str, Any],
    properties: dict[str, Any],
    required: list[str],
    rules: list[dict[str, Any]],
) -> None:
    op.json_body = True
    resolved = _resolve(schema, schemas)
    fields = resolved.get("properties") if resolved.get("type") == "object" else None
    if fields and not set(fields) & set(properties) and BODY_ARGUMENT not in fields:
        op.body_flattened = True
        op.body_fields = set(fields)
        for name, sub in fields.items():
            properties[name] = _simplify(sub)
        if body_required:
            required.extend(resolved.get("required", []))
        # Rules between fields (`PATCH` needs one of ..., flag combinations) name the same
        # arguments once flattened.
        flat_rules = copy.deepcopy(resolved.get("allOf", []))
        if resolved.get("required"):
            rules.extend(flat_rules)
            return
        # A body without required fields is also understood as one `body` object (the shape
        # such tools had before their fields could be flattened).
        properties[BODY_ARGUMENT] = _describe(
            copy.deepcopy(schema), "Alternatively, the whole JSON request body as one object."
        )
        if flat_rules:
            rules.append({"anyOf": [{"allOf": flat_rules}, {"required": [BODY_ARGUMENT]}]})
        return
    properties[BODY_ARGUMENT] = _describe(copy.deepcopy(schema), "The JSON request body.")
    if body_required:
        required.append(BODY_ARGUMENT)


def _add_form(
    op: Operation,
    schema: dict[str, Any],
    schemas: dict[str, Any],
    properties: dict[str, Any],
) -> None:
    """Form fields as arguments; the file as `file` / `file_base64`, one of which the call must
    carry (not expressible as `required`, so the bridge checks it)."""
    resolved = _resolve(schema, schemas)
    for name, sub in resolved.get("properties", {}).items():
        sub = _resolve(sub, schemas)
        if sub.get("format") == "binary":
            op.file_fields.append(name)
            continue
        op.form_fields.append(name)
        properties.setdefault(name, _simplify(sub))
    if op.file_fields:
        what = resolved["properties"][op.file_fields[0]].get("description", "The file.")
        properties[FILE_TEXT] = {
            "type": "string",
            "description": f"{what} Give text files (CSV) here, as they are.",
        }
        properties[FILE_BASE64] = {
            "type": "string",
            "description": f"{what} Give binary files (images) here, base64-encoded.",
        }
        properties[FILE_NAME] = {
            "type": "string",
            "description": "Optional file name sent with the upload.",
        }


def _tool_description(spec: dict[str, Any], op: Operation) -> str:
    parts = [spec.get("summary", ""), spec.get("description", "")]
    parts.append(f"HTTP: {op.method} {op.path}.")
    if op.file_fields:
        parts.append(f"Upload: pass `{FILE_TEXT}` (text) or `{FILE_BASE64}` (binary), not both.")
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


def _describe(schema: dict[str, Any], description: str | None) -> dict[str, Any]:
    if description and "description" not in schema:
        schema["description"] = description
    return schema


def _simplify(schema: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [X, null]` from optional parameters reads as X to an agent; titles are noise."""
    schema = copy.deepcopy(schema)
    options = schema.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        other = next(o for o in options if o != {"type": "null"})
        schema.pop("anyOf")
        schema = {**other, **schema}
    schema.pop("title", None)
    return schema


def _resolve(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while "$ref" in schema and seen < 20:
        schema = schemas.get(schema["$ref"].removeprefix(REF_PREFIX), {})
        seen += 1
    return schema


def _refs(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF_PREFIX):
            found.add(ref.removeprefix(REF_PREFIX))
        for sub in value.values():
            found |= _refs(sub)
    elif isinstance(value, list):
        for sub in value:
            found |= _refs(sub)
    return found


def _collect_defs(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    """Every component the input schema reaches, followed transitively, as `$defs`."""
    defs: dict[str, Any] = {}
    pending = sorted(_refs(schema))
    while pending:
        name = pending.pop()
        if name in defs or name not in schemas:
            continue
        defs[name] = copy.deepcopy(schemas[name])
        pending.extend(sorted(_refs(defs[name]) - set(defs)))
    return defs


_REF = re.compile(re.escape(REF_PREFIX))


def _rewrite_refs(value: Any) -> Any:
    if isinstance(value, dict):
        rewritten: dict[str, Any] = {}
        for k, v in value.items():
            if k == "$ref" and isinstance(v, str):
                rewritten[k] = _REF.sub("#/$defs/", v)
            elif (
                k == "discriminator" and isinstance(v, dict) and isinstance(v.get("mapping"), dict)
            ):
                # OpenAPI's discriminator names each schema by its reference too.
                mapping = {name: _REF.sub("#/$defs/", ref) for name, ref in v["mapping"].items()}
                rewritten[k] = {**v, "mapping": mapping}
            else:
                rewritten[k] = _rewrite_refs(v)
        return rewritten
    if isinstance(value, list):
        return [_rewrite_refs(v) for v in value]
    return value
