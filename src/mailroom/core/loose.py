"""Request fields that take any JSON value when parsed, while the OpenAPI document states the
truth.

Many fields take `Any` so that the value reaches the service as sent, and the service answers
the spec's exact message for a wrong one (`name is required`, not a generic validation error).
The published document, and so the MCP tool schemas and generated SDKs built from it, must
still say what the service accepts. A field is written

    name: Annotated[Any, Doc(text(60, pattern=NAME_PATTERN))] = None

(parsed as anything, documented as the schema), and the model's `body_config(...)` lists the
fields the body must carry, the unknown-key rule and any rules between fields.

Keep the two in step: a value the schema allows must be one the service accepts (the contract
test in tests/foundation/test_contract.py generates such values and fails on a 400).
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, WithJsonSchema

# The documented schema of a loosely parsed field (or query parameter).
Doc = WithJsonSchema

# A name a person reads must have something besides spaces (names are trimmed and inner runs
# of whitespace folded to one space before their length is checked). Python also counts the
# separators U+001C-U+001F and U+0085 as space. ECMA-262 `pattern` is a search, not anchored.
NAME_PATTERN = r"[^\s\x1c-\x1f\x85]"


def name_field(max_length: int) -> dict[str, Any]:
    """A required display name: up to `max_length` characters once whitespace is folded."""
    return text(max_length, min_length=1, pattern=NAME_PATTERN)


def text(
    max_length: int | None = None,
    *,
    min_length: int | None = None,
    pattern: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The schema of a string with its real bounds."""
    schema: dict[str, Any] = {"type": "string", **extra}
    if min_length is not None:
        schema["minLength"] = min_length
    if max_length is not None:
        schema["maxLength"] = max_length
    if pattern is not None:
        schema["pattern"] = pattern
    return schema


def choice(*values: str) -> dict[str, Any]:
    """The schema of one of fixed strings."""
    return {"type": "string", "enum": list(values)}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema`, or null (sent as null, the field keeps or takes its default)."""
    return {"anyOf": [schema, {"type": "null"}]}


def body_config(
    *required: str,
    forbid_extra: bool = False,
    rules: list[dict[str, Any]] | None = None,
    example: dict[str, Any] | None = None,
) -> ConfigDict:
    """Model config for a request body parsed loosely: `required` names the fields the service
    refuses to go without, `forbid_extra` refuses unknown keys (400 `Unknown field(s): ...`;
    documented as `additionalProperties: false`), `rules` are JSON Schema conditions between
    fields (documented under `allOf`)."""

    def document(schema: dict[str, Any]) -> None:
        if required:
            schema["required"] = list(required)
        if rules:
            schema["allOf"] = rules
        if example is not None:
            schema["example"] = example

    if forbid_extra:
        return ConfigDict(extra="forbid", json_schema_extra=document)
    return ConfigDict(json_schema_extra=document)


# A calendar day (YYYY-MM-DD) as a query filter. Filters ignore any other value (an impossible
# date, an empty one), as the spec says, so the schema is any string with the shape shown by
# example: `format: date` would publish those ignored values as refused.
DAY = {"type": "string", "examples": ["2026-03-15"]}
