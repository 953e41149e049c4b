"""A tool call is the HTTP request it stands for, sent in-process to the same ASGI app.

Going through the real API (not the services directly) means permissions, the hourly write limit,
plan caps, audit and validation apply to an agent exactly as to any other client.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any
from urllib.parse import quote

import httpx
import mcp_types as types

from mailroom.mcp.tools import (
    BODY_ARGUMENT,
    FILE_BASE64,
    FILE_NAME,
    FILE_TEXT,
    Operation,
)


class ArgumentError(Exception):
    """The agent's arguments cannot become a request; answered as a tool error."""


def tool_error(message: str) -> types.CallToolResult:
    text = json.dumps({"error": message})
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _form_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def _query_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return [_query_value(v) for v in value]
    return value


def build_request(
    client: httpx.AsyncClient,
    op: Operation,
    arguments: dict[str, Any],
    credentials: dict[str, str],
) -> httpx.Request:
    args = dict(arguments)
    path = op.path
    for name in op.path_params:
        value = args.pop(name, None)
        if value is None or value == "":
            raise ArgumentError(f"Missing required argument: {name}")
        # A path argument fills exactly one segment: a `/` or a dot segment would make the URL
        # another operation's (`id="<contact>/tags/<tag>"` reaching remove_contact_tag).
        if "/" in str(value) or str(value) in (".", ".."):
            raise ArgumentError(f"Invalid {name}: {value} (one path segment, no '/')")
        path = path.replace("{" + name + "}", quote(str(value), safe=""))
    params = {
        name: _query_value(args.pop(name)) for name in op.query_params if args.get(name) is not None
    }
    headers = {**credentials, "user-agent": "mailroom-mcp"}

    file_text = args.pop(FILE_TEXT, None) if op.file_fields else None
    file_b64 = args.pop(FILE_BASE64, None) if op.file_fields else None
    filename = args.pop(FILE_NAME, None) if op.file_fields else None
    if file_text is not None and file_b64 is not None:
        raise ArgumentError(f"Pass either {FILE_TEXT} or {FILE_BASE64}, not both")
    if file_text is not None or file_b64 is not None:
        content = _file_bytes(file_text, file_b64)
        form = {k: _form_value(args.pop(k)) for k in op.form_fields if args.get(k) is not None}
        _refuse_leftovers(args)
        name = str(filename or ("upload.csv" if file_text is not None else "upload.bin"))
        files = {op.file_fields[0]: (name, content, "application/octet-stream")}
        return client.build_request(
            op.method, path, params=params, headers=headers, data=form, files=files
        )
    if op.file_fields and not op.json_body:
        raise ArgumentError(f"Missing required argument: {FILE_TEXT} or {FILE_BASE64}")

    if op.json_body:
        if op.body_flattened and isinstance(args.get(BODY_ARGUMENT), dict):
            # The body as one `body` argument is understood too (older tool shapes).
            body: Any = args.pop(BODY_ARGUMENT)
            _refuse_leftovers(args)
        elif op.body_flattened:
            body = args
        else:
            body = args.pop(BODY_ARGUMENT, None)
            _refuse_leftovers(args)
        if body is None:
            return client.build_request(op.method, path, params=params, headers=headers)
        return client.build_request(op.method, path, params=params, headers=headers, json=body)
    _refuse_leftovers(args)
    return client.build_request(op.method, path, params=params, headers=headers)


def _file_bytes(file_text: Any, file_b64: Any) -> bytes:
    if file_text is not None:
        return str(file_text).encode("utf-8")
    try:
        return base64.b64decode(str(file_b64), validate=True)
    except (binascii.Error, ValueError):
        raise ArgumentError(f"{FILE_BASE64} is not valid base64") from None


def _refuse_leftovers(args: dict[str, Any]) -> None:
    unknown = sorted(k for k, v in args.items() if v is not None)
    if unknown:
        raise ArgumentError(f"Unknown argument(s): {', '.join(unknown)}")


def to_result(response: httpx.Response) -> types.CallToolResult:
    """2xx: the JSON body as structured content (and as text); CSV as text. Else a tool error
    whose text is the API's own `{"error": ...}` body."""
    text = response.text
    if not response.is_success:
        if not text.lstrip().startswith("{"):
            text = json.dumps({"error": text or response.reason_phrase})
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=True
        )
    content_type = response.headers.get("content-type", "")
    if "json" in content_type:
        data = response.json()
        structured = data if isinstance(data, dict) else {"result": data}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=structured,
        )
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def call_tool(
    client: httpx.AsyncClient,
    op: Operation,
    arguments: dict[str, Any] | None,
    credentials: dict[str, str],
) -> types.CallToolResult:
    """`credentials`: the caller's own credential header (`x-api-key` or `authorization`)."""
    try:
        request = build_request(client, op, arguments or {}, credentials)
    except ArgumentError as problem:
        return tool_error(str(problem))
    response = await client.send(request)
    return to_result(response)
