from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter

from mailroom.core.context import Context
from mailroom.custom_fields import service
from mailroom.custom_fields import values as v
from mailroom.custom_fields.schemas import (
    FieldCreate,
    FieldDeleted,
    FieldEnvelope,
    FieldList,
    FieldOut,
    FieldUpdate,
    FieldUpdated,
    ScanOut,
)
from mailroom.models import CustomFieldDefinition
from mailroom.web.deps import use
from mailroom.web.openapi import errors

router = APIRouter(prefix="/api/v1/custom-fields", tags=["Custom fields"])


def _out(field: CustomFieldDefinition) -> dict[str, Any]:
    return FieldOut.model_validate(field, from_attributes=True).model_dump()


@router.get(
    "",
    response_model=FieldList,
    summary="List custom fields",
    description="Registered fields with how many contacts carry each key; keys contacts carry "
    "that no field names (`unregistered`), and keys a merge tag cannot name (`unaddressable`).",
)
async def list_custom_fields(ctx: Annotated[Context, use("contacts:read")]) -> dict[str, Any]:
    fields = await service.registry(ctx)
    usage = await service.key_usage(ctx)
    ordered = sorted(fields.values(), key=lambda f: (f.position, f.key))
    return {
        "fields": [{**_out(f), "uses": usage.get(f.key, 0)} for f in ordered],
        "unregistered": [
            {"key": k, "uses": n}
            for k, n in sorted(usage.items())
            if k not in fields and v.REGISTRY_KEY.match(k)
        ],
        "unaddressable": [
            {"key": k, "uses": n} for k, n in sorted(usage.items()) if not v.REGISTRY_KEY.match(k)
        ],
        "usage_available": True,
    }


@router.post(
    "",
    status_code=201,
    response_model=FieldEnvelope,
    summary="Create a custom field",
    description="Declares a key with a type. When contacts already carry values that do not "
    "fit, the answer is 409 with `violations` until `confirm_violations: true` is sent; stored "
    "values are never rewritten.",
    responses=errors(400, 409),
)
async def create_custom_field(
    body: FieldCreate, ctx: Annotated[Context, use("contacts:write")]
) -> dict[str, Any]:
    field = await service.create_field(
        ctx,
        key=body.key,
        label=body.label,
        field_type=body.type,
        options=body.options,
        confirm_violations=body.confirm_violations,
    )
    return {"field": _out(field)}


@router.patch(
    "/{key}",
    response_model=FieldUpdated,
    summary="Update a custom field",
    description="Change label, type or options (the key is immutable). A type or options change "
    "that stored values do not fit is 409 with `violations` until `confirm_violations: true`.",
    responses=errors(400, 404, 409),
)
async def update_custom_field(
    key: str, body: FieldUpdate, ctx: Annotated[Context, use("contacts:write")]
) -> dict[str, Any]:
    changes = body.model_dump(exclude_unset=True)
    confirm = bool(changes.pop("confirm_violations", False))
    field, violations = await service.update_field(ctx, key, changes, confirm_violations=confirm)
    return {"field": _out(field), "violations": violations.as_dict() if violations else None}


@router.delete(
    "/{key}",
    response_model=FieldDeleted,
    summary="Delete a custom field",
    description="Irreversible: removes the field and its value from every contact. Segment and "
    "automation rules naming it stop matching; a key still sent later is registered as text.",
    responses=errors(404),
)
async def delete_custom_field(
    key: str, ctx: Annotated[Context, use("contacts:write")]
) -> dict[str, Any]:
    cleared, forms_updated = await service.delete_field(ctx, key)
    return {"ok": True, "key": key, "contacts_cleared": cleared, "forms_updated": forms_updated}


@router.post(
    "/scan",
    response_model=ScanOut,
    summary="Register keys contacts carry",
    description="Declares every key contacts carry that no field names. A type is inferred only "
    "when all stored values agree (booleans, numbers, YYYY-MM-DD dates), else text. Keys a merge "
    "tag cannot name are reported and left alone.",
)
async def scan_custom_fields(ctx: Annotated[Context, use("contacts:write")]) -> dict[str, Any]:
    result = await service.scan(ctx)
    return {
        "ok": True,
        "added": [_out(f) for f in result.added],
        "unaddressable": result.unaddressable,
    }
