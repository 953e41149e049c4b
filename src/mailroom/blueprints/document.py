"""The blueprint document: `{"mailroom_blueprint": 1, "name", "description"?, "parts": {...}}`.

`check` reads one a client sends (`POST /blueprints/import`): the version, each part's objects
(the fields of the API's create body for that resource, and its name), names unique within a
part, and no dangling names (everything an object refers to by name is in the document): a
refusal is 400 naming the path of the problem, `parts.segments[0].rules.conditions[1].value[0]:
...`. The content itself (a template's syntax, a rule's operators) is the domain services' to
judge when the blueprint is applied (a dry run applies and rolls back, so it says the same).
"""

from __future__ import annotations

import json
from typing import Any

from mailroom.blueprints.parts import PART_NAMES, PARTS, SUPPORTED, match
from mailroom.core.errors import ApiError
from mailroom.named import clean_name

VERSION = 1
MAX_NAME = 100
MAX_DESCRIPTION = 1000
MAX_OBJECTS = 1000  # per part
# Document -> parts -> part -> object -> rules (3 levels of groups) -> value: well within 24.
MAX_DEPTH = 24
FIELDS = {
    "custom_fields": ("key", "label", "type", "options"),
    "tags": ("name", "color"),
    "lists": ("name", "description", "double_opt_in"),
    "segments": ("name", "rules"),
    "templates": ("name", "subject", "preheader", "html_content", "text_content"),
    "automations": ("name", "trigger", "steps", "allow_reentry", "time_zone"),
    "forms": (
        "name",
        "fields",
        "list_ids",
        "double_opt_in",
        "success_message",
        "redirect_url",
        "consent_text",
        "languages",
    ),
    "webhooks": ("url", "description", "event_types", "filters", "enabled", "channel"),
    "sending": ("from_name", "reply_to"),
}
KIND_NOUN = {
    "custom_fields": "custom field",
    "tags": "tag",
    "lists": "list",
    "forms": "form",
    "campaigns": "campaign",
    "domains": "sending domain",
    "templates": "template",
    "webhooks": "webhook endpoint",
    "stores": "store",
}
NOT_YET = "{path}: {part} are not part of blueprints yet (this version holds {supported})"


def describe(value: Any) -> str:
    """The blueprint's description: optional text of at most 1,000 characters."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ApiError(400, "description must be a string")
    if len(value) > MAX_DESCRIPTION:
        raise ApiError(400, f"description must be {MAX_DESCRIPTION} characters or fewer")
    return value.strip()


def not_yet(path: str, part: str) -> ApiError:
    return ApiError(400, NOT_YET.format(path=path, part=part, supported=", ".join(SUPPORTED)))


def check(document: Any) -> dict[str, Any]:
    """The document, checked (400 with the path of the first problem) and normalised."""
    if not isinstance(document, dict):
        raise ApiError(400, "Request body must be a JSON object")
    version = document.get("mailroom_blueprint")
    if version is None:
        raise ApiError(400, "mailroom_blueprint is required (the document's version, 1)")
    if isinstance(version, bool) or version != VERSION:
        shown = json.dumps(version)[:40]
        raise ApiError(
            400, f"mailroom_blueprint: unsupported version {shown} (this Mailroom reads 1)"
        )
    if _depth(document) > MAX_DEPTH:
        raise ApiError(400, f"The document nests too deeply (at most {MAX_DEPTH} levels)")
    for key in document:
        if key not in ("mailroom_blueprint", "name", "description", "parts"):
            raise ApiError(400, f"{key}: unknown field")
    name = clean_name(document.get("name"), MAX_NAME)
    description = describe(document.get("description"))
    parts = document.get("parts")
    if not isinstance(parts, dict):
        raise ApiError(400, "parts must be an object")
    checked: dict[str, list[dict[str, Any]]] = {}
    for part_name in parts:
        if part_name not in PART_NAMES:
            raise ApiError(400, f"parts.{part_name}: unknown part (one of {', '.join(PART_NAMES)})")
        if part_name not in PARTS:
            raise not_yet(f"parts.{part_name}", part_name)
    for part_name in PART_NAMES:
        if part_name in parts:
            checked[part_name] = _objects(part_name, parts[part_name])
    _no_dangling(checked)
    return {
        "mailroom_blueprint": VERSION,
        "name": name,
        "description": description,
        "parts": checked,
    }


def _depth(value: Any) -> int:
    """How deeply arrays and objects nest (iteratively: no recursion on hostile input)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:
                items = node.values() if isinstance(node, dict) else node
                stack.extend((item, level + 1) for item in items)
    return deepest


def _objects(part_name: str, raw: Any) -> list[dict[str, Any]]:
    path = f"parts.{part_name}"
    if not isinstance(raw, list) or not all(isinstance(obj, dict) for obj in raw):
        raise ApiError(400, f"{path} must be an array of objects")
    if len(raw) > MAX_OBJECTS:
        raise ApiError(400, f"{path} may have at most {MAX_OBJECTS} objects")
    if part_name == "sending" and len(raw) > 1:
        raise ApiError(400, f"{path} holds at most one object")
    part = PARTS[part_name]
    seen: dict[str, int] = {}
    for i, obj in enumerate(raw):
        where = f"{path}[{i}]"
        for key in obj:
            if key not in FIELDS[part_name]:
                raise ApiError(400, f"{where}.{key}: unknown field")
        if part.key_field in FIELDS[part_name]:
            value = obj.get(part.key_field)
            if not isinstance(value, str) or not value.strip():
                raise ApiError(400, f"{where}.{part.key_field} is required")
        if part_name == "automations":
            _step_ids(obj.get("steps"), f"{where}.steps")
        key = match(part_name, part.key(obj))
        if key in seen:
            raise ApiError(
                400, f"{where}.{part.key_field}: the same as {path}[{seen[key]}].{part.key_field}"
            )
        seen[key] = i
    return [part.normalise(obj) for obj in raw]


def _step_ids(steps: Any, path: str) -> None:
    """Every step carries its id: runs in progress find their step by it, so an apply must
    not make new ones (400 naming the step without one)."""
    if not isinstance(steps, list):
        return
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            continue
        if not isinstance(step.get("id"), str) or not step["id"]:
            raise ApiError(400, f"{path}[{i}].id is required (a step keeps its id)")
        for branch in ("yes", "no"):
            _step_ids(step.get(branch), f"{path}[{i}].{branch}")


def _no_dangling(parts: dict[str, list[dict[str, Any]]]) -> None:
    held = {
        kind: {match(kind, PARTS[kind].key(o)) for o in parts.get(kind, [])}
        if kind in PARTS
        else set()
        for kind in KIND_NOUN
    }
    for part_name, objects in parts.items():
        part = PARTS[part_name]
        for i, obj in enumerate(objects):
            for path, kind, name in part.references(obj):
                if not isinstance(name, str) or match(kind, name) not in held[kind]:
                    fix = (
                        f"add it to parts.{kind}"
                        if kind in PARTS
                        else "blueprints do not hold them"
                    )
                    raise ApiError(
                        400,
                        f"parts.{part_name}[{i}].{path}: {KIND_NOUN[kind]} {name!r} is not in "
                        f"the blueprint ({fix})",
                    )
