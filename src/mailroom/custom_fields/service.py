"""The custom-field registry: definitions, typing of contact values, usage, violations, scan."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select, text

from mailroom.contacts import selection
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.custom_fields import values as v
from mailroom.db import serialise
from mailroom.events import bulk as bulk_events
from mailroom.models import CustomFieldDefinition, Form

MAX_FIELDS = 100
MAX_OPTIONS = 100
MAX_LABEL = 80
VIOLATION_EXAMPLES = 5
# Values examined per violation check; beyond it the answer is `partial`.
VIOLATION_SCAN_LIMIT = 200_000


async def registry(ctx: Context) -> dict[str, CustomFieldDefinition]:
    rows = await ctx.session.scalars(
        select(CustomFieldDefinition).where(CustomFieldDefinition.workspace_id == ctx.workspace_id)
    )
    return {row.key: row for row in rows.all()}


async def get_field(ctx: Context, key: str) -> CustomFieldDefinition:
    field = await ctx.session.scalar(
        select(CustomFieldDefinition).where(
            CustomFieldDefinition.workspace_id == ctx.workspace_id, CustomFieldDefinition.key == key
        )
    )
    if field is None:
        raise ApiError(404, "Custom field not found")
    return field


# ---------------------------------------------------------------- values written on contacts


async def apply_values(
    ctx: Context,
    current: dict[str, Any],
    incoming: Any,
    *,
    replace: bool,
    nulls_remove: bool,
    known: dict[str, CustomFieldDefinition] | None = None,
) -> dict[str, Any]:
    """The contact's new `custom_fields` after writing `incoming` (rules 1-5).

    Merge by default (sent keys set, a null removes the key when `nulls_remove`), or replace
    the whole object. Typed keys are coerced or refused with 400; keys no field names yet are
    registered as `text` (when the key is merge-tag safe and the registry has room).
    """
    raw = v.check_shape(incoming)
    fields = known if known is not None else await registry(ctx)
    result: dict[str, Any] = {} if replace else dict(current)
    new_keys: list[str] = []
    for key, value in raw.items():
        if value is None:
            if nulls_remove:
                result.pop(key, None)
            continue
        definition = fields.get(key)
        if definition is None:
            result[key] = value
            new_keys.append(key)
            continue
        typed = v.coerce_or_refuse(key, definition.type, definition.options, value)
        if typed is v.CLEAR:
            result.pop(key, None)
        else:
            result[key] = typed
    if len(result) > v.MAX_KEYS:
        raise ApiError(400, f"custom_fields may have at most {v.MAX_KEYS} keys")
    if new_keys:
        await register_text_fields(ctx, new_keys, fields)
    return result


async def serialise_registry(ctx: Context) -> None:
    """One registry change at a time per workspace until commit, so "count, then insert" is
    one step (the 100-field cap) and two writers cannot register the same key: PostgreSQL
    takes an advisory lock (READ COMMITTED would let both count 99 and both insert), SQLite's
    write transaction is already exclusive. Read the registry again after taking it.

    Lock order: contact creates and imports hold the account's contact-cap lock
    (`contacts.service.ensure_capacity`, same key) when they register keys, but an import
    declares its typed fields before taking it; so this takes the account's lock first too
    (re-entrant within a transaction), and two writers never wait on each other crosswise."""
    await serialise(
        ctx.session, f"contact-cap:{ctx.principal.account_id}", f"custom-fields:{ctx.workspace_id}"
    )


async def register_text_fields(
    ctx: Context, keys: list[str], known: dict[str, CustomFieldDefinition]
) -> list[CustomFieldDefinition]:
    """Register unseen merge-tag-safe keys as `text`, while the 100-field limit allows.

    `known` (the registry as the caller read it) is brought up to date and gains the new
    fields."""
    wanted = [k for k in dict.fromkeys(keys) if k not in known and v.REGISTRY_KEY.match(k)]
    if not wanted:
        return []  # the common case takes no lock
    await serialise_registry(ctx)
    known.update(await registry(ctx))  # as it is now that no one else can change it
    room = MAX_FIELDS - len(known)
    added: list[CustomFieldDefinition] = []
    position = max((f.position for f in known.values()), default=-1) + 1
    for key in wanted:
        if room <= 0 or key in known:
            continue
        field = CustomFieldDefinition(
            workspace_id=ctx.workspace_id,
            key=key,
            label=v.default_label(key),
            type="text",
            position=position,
        )
        ctx.session.add(field)
        known[key] = field
        added.append(field)
        position += 1
        room -= 1
    if added:
        await ctx.session.flush()
    return added


def invalid_keys(
    custom_fields: dict[str, Any], fields: dict[str, CustomFieldDefinition]
) -> list[str]:
    """Keys whose stored value does not fit the field's current type (flagged, never rewritten)."""
    return [
        key
        for key, value in custom_fields.items()
        if (f := fields.get(key)) is not None and not v.fits(f.type, f.options, value)
    ]


# ---------------------------------------------------------------- usage and stored values


async def key_usage(ctx: Context) -> dict[str, int]:
    """How many contacts carry each key, counted in the database."""
    if ctx.dialect == "postgresql":
        sql = (
            "SELECT k, count(*) FROM contacts c, jsonb_object_keys(c.custom_fields) k "
            "WHERE c.workspace_id = :ws GROUP BY k"
        )
    else:
        sql = (
            "SELECT j.key, count(*) FROM contacts c, json_each(c.custom_fields) j "
            "WHERE c.workspace_id = :ws GROUP BY j.key"
        )
    rows = await ctx.session.execute(text(sql), {"ws": ctx.workspace_id})
    return {str(key): int(count) for key, count in rows.all()}


async def stored_values(ctx: Context, key: str, limit: int) -> list[Any]:
    """Up to `limit` stored values of `key`, as JSON values (booleans stay booleans)."""
    if ctx.dialect == "postgresql":
        sql = (
            "SELECT (c.custom_fields -> :key)::text FROM contacts c "
            "WHERE c.workspace_id = :ws AND c.custom_fields ? :key LIMIT :limit"
        )
    else:
        sql = (
            "SELECT CASE j.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' "
            "WHEN 'text' THEN json_quote(j.value) ELSE CAST(j.value AS TEXT) END "
            "FROM contacts c, json_each(c.custom_fields) j "
            "WHERE c.workspace_id = :ws AND j.key = :key LIMIT :limit"
        )
    rows = await ctx.session.execute(
        text(sql), {"ws": ctx.workspace_id, "key": key, "limit": limit}
    )
    return [json.loads(raw) for (raw,) in rows.all() if raw is not None]


@dataclass
class Violations:
    count: int
    examples: list[str]
    partial: bool

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "examples": self.examples, "partial": self.partial}


async def find_violations(
    ctx: Context, key: str, field_type: str, options: list[str] | None
) -> Violations | None:
    if field_type == "text":
        return None
    stored = await stored_values(ctx, key, VIOLATION_SCAN_LIMIT + 1)
    partial = len(stored) > VIOLATION_SCAN_LIMIT
    bad = [
        value for value in stored[:VIOLATION_SCAN_LIMIT] if not v.fits(field_type, options, value)
    ]
    if not bad:
        return None
    examples = list(
        dict.fromkeys(value if isinstance(value, str) else json.dumps(value) for value in bad)
    )[:VIOLATION_EXAMPLES]
    return Violations(len(bad), examples, partial)


# ---------------------------------------------------------------- registry operations


def _check_type_and_options(field_type: Any, options: Any, *, required: bool) -> list[str] | None:
    if field_type not in v.FIELD_TYPES:
        raise ApiError(400, f"type must be one of {', '.join(v.FIELD_TYPES)}")
    if field_type != "dropdown":
        if options not in (None, []):
            raise ApiError(400, "options are only for dropdown fields")
        return None
    if options is None or (isinstance(options, list) and not options):
        if required:
            raise ApiError(400, "dropdown fields need at least one option")
        return None
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise ApiError(400, "options must be an array of strings")
    cleaned = [o.strip() for o in options]
    if any(not o for o in cleaned):
        raise ApiError(400, "options must not be empty strings")
    if len(cleaned) > MAX_OPTIONS:
        raise ApiError(400, f"dropdown fields may have at most {MAX_OPTIONS} options")
    if any(len(o) > v.MAX_STRING for o in cleaned):
        raise ApiError(400, f"each option must be {v.MAX_STRING} characters or fewer")
    return list(dict.fromkeys(cleaned))


def _check_label(label: Any) -> str:
    if not isinstance(label, str):
        raise ApiError(400, "label must be a string")
    label = label.strip()
    if len(label) > MAX_LABEL:
        raise ApiError(400, f"label must be {MAX_LABEL} characters or fewer")
    if not label:
        raise ApiError(400, "label must not be empty")
    return label


def _violation_conflict(violations: Violations) -> ApiError:
    return ApiError(
        409,
        f"{violations.count} stored value(s) do not fit this type. Send confirm_violations: true "
        "to apply it anyway; stored values are kept as they are and flagged.",
        violations=violations.as_dict(),
    )


async def create_field(
    ctx: Context,
    *,
    key: Any,
    label: Any = None,
    field_type: Any = None,
    options: Any = None,
    confirm_violations: bool = False,
) -> CustomFieldDefinition:
    if key is None or (isinstance(key, str) and not key.strip()):
        raise ApiError(400, "key is required")
    if not isinstance(key, str) or not v.REGISTRY_KEY.match(key):
        raise ApiError(400, "key must be 1-64 letters, digits or underscores")
    checked_label = _check_label(label) if label is not None else v.default_label(key)
    field_type = field_type if field_type is not None else "text"
    checked_options = _check_type_and_options(field_type, options, required=True)
    await serialise_registry(ctx)
    fields = await registry(ctx)
    if key in fields:
        raise ApiError(
            409,
            "A custom field with this key already exists; change its type with "
            f"PATCH /api/v1/custom-fields/{key}",
        )
    if len(fields) >= MAX_FIELDS:
        raise ApiError(400, f"A workspace can have at most {MAX_FIELDS} custom fields")
    violations = await find_violations(ctx, key, field_type, checked_options)
    if violations and not confirm_violations:
        raise _violation_conflict(violations)
    field = CustomFieldDefinition(
        workspace_id=ctx.workspace_id,
        key=key,
        label=checked_label,
        type=field_type,
        options=checked_options,
        position=max((f.position for f in fields.values()), default=-1) + 1,
    )
    ctx.session.add(field)
    await ctx.session.flush()
    return field


async def update_field(
    ctx: Context, key: str, changes: dict[str, Any], *, confirm_violations: bool = False
) -> tuple[CustomFieldDefinition, Violations | None]:
    field = await get_field(ctx, key)
    if "key" in changes and changes["key"] != key:
        raise ApiError(400, "key cannot be changed")
    if not any(name in changes for name in ("label", "type", "options")):
        raise ApiError(400, "Nothing to update: send label, type or options")
    if "label" in changes:
        field.label = _check_label(changes["label"])
    new_type = changes.get("type", field.type) if changes.get("type") is not None else field.type
    new_options = changes.get("options", field.options if new_type == "dropdown" else None)
    checked = _check_type_and_options(new_type, new_options, required=True)
    violations = None
    if new_type != field.type or checked != field.options:
        violations = await find_violations(ctx, key, new_type, checked)
        if violations and not confirm_violations:
            raise _violation_conflict(violations)
    field.type = new_type
    field.options = checked
    field.updated_at = utcnow()
    return field, violations


async def delete_field(ctx: Context, key: str) -> tuple[int, int]:
    """Remove the field and its value from every contact (each a `contact.updated`) and from
    every signup form asking for it; returns (contacts cleared, forms updated)."""
    field = await get_field(ctx, key)
    if ctx.dialect == "postgresql":
        carries, clear = "custom_fields ? :key", "custom_fields - :key"
        params: dict[str, Any] = {"key": key}
    else:
        # Registry keys are [A-Za-z0-9_], so they are safe inside a quoted JSON path.
        carries = "json_type(custom_fields, :path) IS NOT NULL"
        clear = "json_remove(custom_fields, :path)"
        params = {"path": f'$."{key}"'}
    update = (
        f"UPDATE contacts SET custom_fields = {clear}, updated_at = :now WHERE workspace_id = :ws"
    )
    if await bulk_events.wanted(ctx, "contact.updated"):
        carriers = await selection.select_where(ctx, carries, **params)
        cleared = await selection.execute(
            ctx, f"{update} AND {selection.IN_SELECTION}", run=carriers.run_id, **params
        )
        await bulk_events.emit_for_selection(ctx, "contact.updated", carriers.run_id)
        await selection.release(ctx, carriers)
    else:
        cleared = await selection.execute(ctx, f"{update} AND {carries}", **params)
    await ctx.session.execute(
        delete(CustomFieldDefinition).where(CustomFieldDefinition.id == field.id)
    )
    return cleared, await _drop_from_forms(ctx, key)


async def _drop_from_forms(ctx: Context, key: str) -> int:
    """Forms stop asking for a deleted field (a workspace has a handful of forms)."""
    updated = 0
    rows = await ctx.session.scalars(select(Form).where(Form.workspace_id == ctx.workspace_id))
    for form in rows.all():
        kept = [f for f in form.fields if f["key"] != key]
        if len(kept) != len(form.fields):
            form.fields, form.updated_at = kept, utcnow()
            updated += 1
    return updated


@dataclass
class ScanResult:
    added: list[CustomFieldDefinition]
    unaddressable: list[str]


async def scan(ctx: Context) -> ScanResult:
    """Declare every key contacts carry that no field names, inferring its type."""
    await serialise_registry(ctx)
    fields = await registry(ctx)
    usage = await key_usage(ctx)
    unaddressable = sorted(k for k in usage if not v.REGISTRY_KEY.match(k))
    missing = sorted(k for k in usage if k not in fields and v.REGISTRY_KEY.match(k))
    added: list[CustomFieldDefinition] = []
    position = max((f.position for f in fields.values()), default=-1) + 1
    for key in missing:
        if len(fields) + len(added) >= MAX_FIELDS:
            break
        stored = await stored_values(ctx, key, VIOLATION_SCAN_LIMIT)
        field = CustomFieldDefinition(
            workspace_id=ctx.workspace_id,
            key=key,
            label=v.default_label(key),
            type=v.infer_type(stored),
            position=position,
        )
        position += 1
        ctx.session.add(field)
        added.append(field)
    await ctx.session.flush()
    return ScanResult(added, unaddressable)


async def field_count(ctx: Context) -> int:
    return int(
        await ctx.session.scalar(
            select(func.count()).where(CustomFieldDefinition.workspace_id == ctx.workspace_id)
        )
        or 0
    )
