"""Blueprints: capture a workspace's set-up as a document, keep it for the account, import one,
apply one (apply.py). Every workspace of an account sees the account's blueprints."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from mailroom.blueprints import apply as applying
from mailroom.blueprints import document as documents
from mailroom.blueprints import starters
from mailroom.blueprints.parts import PART_NAMES, PARTS, PERMISSIONS, SUPPORTED
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.models import Blueprint
from mailroom.named import clean_name

NOT_FOUND = "Blueprint not found"
READ_PERMISSIONS = tuple(dict.fromkeys(f"{family}:read" for family in PERMISSIONS.values()))


def check_any_read(ctx: Context) -> None:
    """Listing and reading blueprints needs the read permission of any one part."""
    if not any(ctx.principal.allows(p) for p in READ_PERMISSIONS):
        raise ApiError(403, f"Forbidden: one of {', '.join(READ_PERMISSIONS)} permission required")


def check_read(ctx: Context, parts: list[str]) -> None:
    """The read permission of each part, in the parts' order: 403 naming the first missing."""
    for part_name in PART_NAMES:
        if part_name in parts:
            ctx.principal.check(f"{PERMISSIONS[part_name]}:read")


def _include(value: Any) -> list[str]:
    if value is None:
        return list(SUPPORTED)
    if not isinstance(value, list) or not value:
        raise ApiError(400, f"include must be a non-empty array of parts: {', '.join(PART_NAMES)}")
    for i, item in enumerate(value):
        if item not in PART_NAMES:
            raise ApiError(
                400, f"include[{i}]: unknown part {item!r} (one of {', '.join(PART_NAMES)})"
            )
        if item not in PARTS:
            raise documents.not_yet(f"include[{i}]", item)
    return [name for name in PART_NAMES if name in value]


async def capture(ctx: Context, body: dict[str, Any]) -> Blueprint:
    name = clean_name(body.get("name"), documents.MAX_NAME)
    description = documents.describe(body.get("description"))
    include = _include(body.get("include"))
    check_read(ctx, include)
    parts = {part_name: await PARTS[part_name].capture(ctx) for part_name in include}
    document = {
        "mailroom_blueprint": documents.VERSION,
        "name": name,
        "description": description,
        "parts": parts,
    }
    return await _keep(ctx, document, source=ctx.workspace_id)


async def import_document(ctx: Context, raw: Any) -> Blueprint:
    document = documents.check(raw)
    check_read(ctx, list(document["parts"]))
    return await _keep(ctx, document, source=None)


async def _keep(ctx: Context, document: dict[str, Any], source: str | None) -> Blueprint:
    now = utcnow()
    blueprint = Blueprint(
        account_id=ctx.principal.account_id,
        name=document["name"],
        description=document["description"],
        document=document,
        source_workspace_id=source,
        created_at=now,
        updated_at=now,
    )
    ctx.session.add(blueprint)
    await ctx.session.flush()
    return blueprint


async def get_blueprint(ctx: Context, blueprint_id: str) -> Blueprint:
    if starters.is_starter(blueprint_id):
        return starters.starter(blueprint_id, ctx.principal.account_id)
    found = await ctx.session.scalar(
        select(Blueprint).where(
            Blueprint.id == blueprint_id, Blueprint.account_id == ctx.principal.account_id
        )
    )
    if found is None:
        raise ApiError(404, NOT_FOUND)
    return found


async def list_blueprints(ctx: Context, paging: PageParams) -> tuple[list[Blueprint], int]:
    """The starters first, then the account's own, newest first."""
    shipped = starters.all_starters(ctx.principal.account_id)
    where = Blueprint.account_id == ctx.principal.account_id
    total = int(await ctx.session.scalar(select(func.count()).where(where)) or 0)
    page = shipped[paging.offset : paging.offset + paging.limit]
    room = paging.limit - len(page)
    if room > 0:
        rows = await ctx.session.scalars(
            select(Blueprint)
            .where(where)
            .order_by(Blueprint.created_at.desc(), Blueprint.id.desc())
            .offset(max(0, paging.offset - len(shipped)))
            .limit(room)
        )
        page += list(rows.all())
    return page, total + len(shipped)


async def update_blueprint(ctx: Context, blueprint_id: str, body: dict[str, Any]) -> Blueprint:
    blueprint = await get_blueprint(ctx, blueprint_id)
    if starters.is_starter(blueprint.id):
        raise ApiError(400, starters.READ_ONLY)
    applying.check_write(ctx, blueprint.document)  # changing it: as applying it
    if not body:
        raise ApiError(400, "No updatable fields provided")
    for key in body:
        if key not in ("name", "description"):
            raise ApiError(400, f"{key}: only name and description can be changed")
    if "name" in body:
        blueprint.name = clean_name(body["name"], documents.MAX_NAME)
    if "description" in body:
        blueprint.description = documents.describe(body["description"])
    blueprint.document = {
        **blueprint.document,
        "name": blueprint.name,
        "description": blueprint.description,
    }
    blueprint.updated_at = utcnow()
    await ctx.session.flush()
    return blueprint


async def read_document(db: Any, ctx: Context, blueprint_id: str) -> dict[str, Any]:
    """The blueprint's document from a short read of its own (404 as `get_blueprint`)."""
    async with db.session(write=False) as session:
        reader = Context(session, ctx.principal, ctx.settings)
        document: dict[str, Any] = (await get_blueprint(reader, blueprint_id)).document
    return document


async def delete_blueprint(ctx: Context, blueprint_id: str) -> None:
    blueprint = await get_blueprint(ctx, blueprint_id)
    if starters.is_starter(blueprint.id):
        raise ApiError(400, starters.READ_ONLY)
    applying.check_write(ctx, blueprint.document)  # removing it: as applying it
    await ctx.session.delete(blueprint)
    await ctx.session.flush()


async def apply_blueprint(
    ctx: Context, blueprint_id: str, body: dict[str, Any], document: dict[str, Any]
) -> dict[str, Any]:
    """`document`: the blueprint's, read by the caller in a session of its own, so its webhook
    URLs went through the guard (DNS) before this unit of work's first statement."""
    dry_run = body.get("dry_run", True)
    if not isinstance(dry_run, bool):
        raise ApiError(400, "dry_run must be true or false")
    on_conflict = body.get("on_conflict", "skip")
    if on_conflict not in applying.ON_CONFLICT:
        raise ApiError(400, "on_conflict must be skip or update")
    for key in body:
        if key not in ("dry_run", "on_conflict"):
            raise ApiError(400, f"{key}: unknown field")
    applying.check_write(ctx, document)  # permissions before anything else is judged
    verdicts = await applying.check_urls(ctx, document)
    blueprint = await get_blueprint(ctx, blueprint_id)  # the first statement
    return await applying.apply(
        ctx, blueprint.document, dry_run=dry_run, on_conflict=on_conflict, url_verdicts=verdicts
    )


async def url_verdicts(ctx: Context, document: dict[str, Any]) -> dict[str, str | ApiError]:
    """The document's webhook URLs through the guard (DNS): before any transaction opens."""
    return await applying.check_urls(ctx, document)


async def set_up_new_workspace(
    ctx: Context, document: dict[str, Any], verdicts: dict[str, str | ApiError]
) -> dict[str, Any]:
    """Apply a document for real to the workspace just made in this unit of work (the
    dashboard's "New workspace" from a blueprint), as `apply_blueprint` with `dry_run` false
    and `on_conflict` skip; `verdicts` from `url_verdicts`, taken before the transaction."""
    return await applying.apply(
        ctx, document, dry_run=False, on_conflict="skip", url_verdicts=verdicts
    )


def as_dict(blueprint: Blueprint) -> dict[str, Any]:
    parts = blueprint.document.get("parts", {})
    return {
        "id": blueprint.id,
        "name": blueprint.name,
        "description": blueprint.description,
        "parts": [name for name in PART_NAMES if name in parts],
        "counts": {name: len(parts[name]) for name in PART_NAMES if name in parts},
        "starter": starters.is_starter(blueprint.id),
        "created_at": blueprint.created_at,
        "updated_at": blueprint.updated_at,
        "source_workspace_id": blueprint.source_workspace_id,
    }
