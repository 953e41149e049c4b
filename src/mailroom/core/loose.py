"""Loosely typed request fields that still document their JSON type.

Some fields take `Any` so the value reaches the service as sent and the service can answer the
spec's exact message for a wrong one (instead of a generic validation error). These aliases keep
the intended type in OpenAPI, and so in the MCP tools built from it.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import WithJsonSchema

LooseString = Annotated[Any, WithJsonSchema({"type": "string"})]
LooseBool = Annotated[Any, WithJsonSchema({"type": "boolean"})]
LooseObject = Annotated[Any, WithJsonSchema({"type": "object"})]
LooseStringList = Annotated[Any, WithJsonSchema({"type": "array", "items": {"type": "string"}})]
