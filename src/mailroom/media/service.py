"""Hosted images: type from the bytes, size and quota limits, upload rate, storage.

Storing and deleting bytes may be network I/O (S3), so it happens while the request's unit of
work holds no transaction: read what is needed, end the read-only transaction, do the I/O,
then write. No pooled connection (on SQLite, not the single write connection) waits on S3.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import string
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, func, select

from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.media.storage import MediaStore, StoreUnavailable, make_store
from mailroom.models import MediaFile, RateLimitHit
from mailroom.ratelimits import service as ratelimits

MAX_BYTES = 2 * 1024 * 1024
TOO_LARGE = "Image too large: the limit is 2 MB per file"
UPLOADS_PER_HOUR = 120
LIST_LIMIT = 500
ID_PATTERN = re.compile(r"^[a-z0-9]{8,40}\.(png|jpg|gif|webp)$")
TYPES = {"png": "image/png", "jpg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}
_ALPHABET = string.ascii_lowercase + string.digits
DELETE_NOTE = "The image is gone: emails that still show it will display a broken picture."


def detect_type(data: bytes) -> str | None:
    """The extension for the image the bytes really are (never the name or declared type)."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


def store_for(ctx: Context) -> MediaStore | None:
    cached = ctx.cache.get("media_store", "unset")
    if cached == "unset":
        cached = make_store(ctx.settings)
        ctx.cache["media_store"] = cached
    return cached


def not_configured() -> ApiError:
    return ApiError(503, "Image hosting is not configured on this server", configured=False)


def unavailable() -> ApiError:
    return ApiError(503, "The image store is unavailable; try again shortly", configured=True)


async def used_bytes(ctx: Context) -> int:
    return int(
        await ctx.session.scalar(
            select(func.coalesce(func.sum(MediaFile.size), 0)).where(
                MediaFile.workspace_id == ctx.workspace_id
            )
        )
        or 0
    )


def as_dict(store: MediaStore, media: MediaFile) -> dict[str, Any]:
    return {
        "id": media.id,
        "url": store.url(media.storage_key),
        "name": media.name,
        "size": media.size,
        "type": media.type,
        "uploaded": media.created_at,
    }


async def library(ctx: Context) -> dict[str, Any]:
    store = store_for(ctx)
    base = {
        "quota_bytes": ctx.principal.plan.media_quota_bytes,
        "max_bytes": MAX_BYTES,
        "types": list(TYPES.values()),
    }
    if store is None:
        return {
            "configured": False,
            "files": [],
            "count": 0,
            "used_bytes": 0,
            "truncated": False,
            **base,
        }
    rows = list(
        (
            await ctx.session.scalars(
                select(MediaFile)
                .where(MediaFile.workspace_id == ctx.workspace_id)
                .order_by(MediaFile.created_at.desc(), MediaFile.id.desc())
                .limit(LIST_LIMIT + 1)
            )
        ).all()
    )
    count = int(
        await ctx.session.scalar(
            select(func.count()).where(MediaFile.workspace_id == ctx.workspace_id)
        )
        or 0
    )
    return {
        "configured": True,
        "files": [as_dict(store, m) for m in rows[:LIST_LIMIT]],
        "count": count,
        "used_bytes": await used_bytes(ctx),
        "truncated": len(rows) > LIST_LIMIT,
        **base,
    }


async def upload(ctx: Context, data: bytes, filename: str) -> dict[str, Any]:
    store = store_for(ctx)
    if store is None:
        raise not_configured()
    if len(data) > MAX_BYTES:
        raise ApiError(413, TOO_LARGE)
    extension = detect_type(data)
    if extension is None:
        raise ApiError(415, "Unsupported image type: upload a PNG, JPEG, GIF or WebP file")
    media_id = "".join(secrets.choice(_ALPHABET) for _ in range(24)) + "." + extension
    media = MediaFile(
        id=media_id,
        workspace_id=ctx.workspace_id,
        name=(filename or media_id)[-255:],
        size=len(data),
        type=TYPES[extension],
        storage_key=media_id,
        created_at=utcnow(),
    )
    for attempt in range(3):
        # A read-only look first, so an upload that will be refused sends no bytes anywhere.
        over_rate = attempt < 2 and await _rate_window_full(ctx)
        if not over_rate:
            used = await used_bytes(ctx)
            if used + len(data) > ctx.principal.plan.media_quota_bytes:
                raise _storage_full(ctx, used)
        await ctx.session.rollback()  # reads only so far; nothing held during the upload
        if not over_rate:
            try:
                await store.put(media.storage_key, data, media.type)
            except StoreUnavailable:
                raise unavailable() from None
        refusal = await _admit(ctx, len(data))
        if refusal is not None:
            await ctx.session.rollback()  # a refused upload takes back its rate-limit hit
            if not over_rate:
                await _discard(store, media.storage_key)
            raise refusal
        if over_rate:
            # The window had room after all (a hit aged out meanwhile): upload, then admit.
            await ctx.session.rollback()
            continue
        ctx.session.add(media)
        await ctx.session.flush()
        used = await used_bytes(ctx)
        quota = ctx.principal.plan.media_quota_bytes
        return {"file": as_dict(store, media), "used_bytes": used, "quota_bytes": quota}
    raise AssertionError("unreachable: the last attempt always uploads")


async def _rate_window_full(ctx: Context) -> bool:
    since = utcnow() - timedelta(seconds=3600)
    used = await ctx.session.scalar(
        select(func.count()).where(RateLimitHit.key == _rate_key(ctx), RateLimitHit.at > since)
    )
    return int(used or 0) >= UPLOADS_PER_HOUR


def _rate_key(ctx: Context) -> str:
    return f"media-uploads:{ctx.workspace_id}"


async def _admit(ctx: Context, size: int) -> ApiError | None:
    """Count the upload and check the quota as one serialised step (the rate-limit hit holds
    an advisory lock on PostgreSQL, and SQLite's write transaction is exclusive, until
    commit), so two uploads cannot both take the last bytes of the quota."""
    decision = await ratelimits.hit(
        ctx.session, _rate_key(ctx), limit=UPLOADS_PER_HOUR, window_seconds=3600
    )
    if not decision.allowed:
        return ApiError(
            429,
            f"Upload limit reached ({UPLOADS_PER_HOUR} images per hour). "
            f"Retry in {decision.retry_after} seconds.",
            headers={"Retry-After": str(decision.retry_after)},
        )
    used = await used_bytes(ctx)
    if used + size > ctx.principal.plan.media_quota_bytes:
        return _storage_full(ctx, used)
    return None


def _storage_full(ctx: Context, used: int) -> ApiError:
    quota = ctx.principal.plan.media_quota_bytes
    return ApiError(
        403,
        f"Image storage is full ({used:,} of {quota:,} bytes used on the "
        f"{ctx.principal.plan.label} plan). Delete images or upgrade.",
        used_bytes=used,
        quota_bytes=quota,
    )


async def _discard(store: MediaStore, key: str) -> None:
    # Bytes stored for an upload that was then refused; if the store fails now they stay
    # orphaned (never referenced, never served by id), which beats failing the answer.
    with contextlib.suppress(StoreUnavailable):
        await store.delete(key)


async def remove(ctx: Context, media_id: str) -> None:
    store = store_for(ctx)
    if store is None:
        raise not_configured()
    media = None
    if ID_PATTERN.match(media_id):
        media = await ctx.session.scalar(
            select(MediaFile).where(
                MediaFile.id == media_id, MediaFile.workspace_id == ctx.workspace_id
            )
        )
    if media is None:
        raise ApiError(404, "Image not found")
    media_id, key = media.id, media.storage_key
    await ctx.session.rollback()  # reads only so far; nothing held while the store answers
    try:
        await store.delete(key)
    except StoreUnavailable:
        raise unavailable() from None
    await ctx.session.execute(
        delete(MediaFile).where(
            MediaFile.id == media_id, MediaFile.workspace_id == ctx.workspace_id
        )
    )


async def public_file(ctx_session: Any, media_id: str) -> MediaFile | None:
    if not ID_PATTERN.match(media_id):
        return None
    found: MediaFile | None = await ctx_session.get(MediaFile, media_id)
    return found
