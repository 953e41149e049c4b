"""The suppression list page: totals by reason, check one address, the list filtered by
reason and domain, import (pasted addresses or a CSV) and export, and lifting a plain-delete
row for admins. Everything goes through `suppressions.service` / `importer` / `exporter` as
the API does; a member sees and imports, only an admin lifts (the service checks it too)."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.datastructures import UploadFile

from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, refused, when
from mailroom.people import sessions
from mailroom.suppressions import exporter, importer, service
from mailroom.web.downloads import csv_download

router = APIRouter(include_in_schema=False)
PAGE_SIZE = 50
PATH = "/settings/suppressions"
# What a refused lift says, in the page's words (the API's 409 messages name API fields).
WHY_KEPT = {
    "bounced": "Bounces are permanent: this address is never mailed again.",
    "complained": "Complaints are permanent: this address is never mailed again.",
    "unsubscribed": "An unsubscribe needs new consent: the person can sign up again through "
    "a form, or the contact can be resubscribed with their agreement.",
    "erased": "This address was erased and can never be lifted.",
}


def _filters(request: Request) -> tuple[str | None, str, int]:
    query = request.query_params
    reason = query.get("reason") or None
    if reason not in service.REASONS:
        reason = None
    raw_page = query.get("page") or "1"
    page = max(1, int(raw_page)) if raw_page.isdecimal() and len(raw_page) < 7 else 1
    return reason, (query.get("domain") or "").strip()[:253], page


async def _page(visitor: Visitor, ctx: Context, request: Request, *, status: int = 200) -> Response:
    reason, domain, page = _filters(request)
    totals = await service.summary(ctx)
    views, total = await service.list_page(
        ctx, reason=reason, domain=domain, offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE
    )
    rows = []
    for view in views:
        shown = view.as_dict()
        shown["address"] = (shown["contact"] or {}).get("email") or shown["email_masked"] or "—"
        shown["added"] = when(shown["created_at"])
        rows.append(shown)
    checked = None
    asked = (request.query_params.get("email") or "").strip()
    if asked:
        try:
            checked = await service.check_address(ctx, asked)
            row = await service.find(ctx, ctx.hash_email(checked["email"]))
            checked["email_hash"] = row.email_hash if row else None
            checked["added"] = when(checked["added_at"])
            checked["why"] = WHY_KEPT.get("erased" if row and row.erased else checked["reason"])
        except ApiError as problem:
            checked = {"error": problem.message}
    pages = max(1, -(-total // PAGE_SIZE))
    kept = {"reason": reason or "", "domain": domain}
    return render.page(
        "suppressions.html",
        status=status,
        title="Suppression list",
        section="suppressions",
        visitor=visitor,
        totals=totals,
        reasons=service.REASONS,
        importable=service.IMPORTABLE_REASONS,
        rows=rows,
        total=total,
        page=page,
        pages=pages,
        filters=kept,
        asked=asked,
        checked=checked,
        page_url=lambda n: "?" + urlencode({**{k: v for k, v in kept.items() if v}, "page": n}),
        export_query=urlencode({k: v for k, v in kept.items() if v}),
        flashes=sessions.take_flash(visitor.row),
    )


@router.get(PATH)
async def suppressions_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return await _page(visitor, ctx, request)

    return await as_visitor(request, work)


@router.get(f"{PATH}/export")
async def export_suppressions_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        reason, domain, _page_number = _filters(request)
        visitor.principal.check("contacts:export")
        return csv_download(
            request,
            visitor.principal,
            exporter.filename(reason),
            lambda export_ctx: exporter.export_csv(export_ctx, reason, domain or None),
        )

    return await as_visitor(request, work)


async def _uploaded(form: dict[str, Any]) -> bytes | None:
    upload = form.get("file")
    if not isinstance(upload, UploadFile) or not upload.filename:
        return None
    content = await upload.read(importer.MAX_CSV_BYTES + 1)
    if len(content) > importer.MAX_CSV_BYTES:
        raise ApiError(413, importer.CSV_TOO_LARGE)
    return content


@router.post(f"{PATH}/import")
async def import_suppressions_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        try:
            fallback = importer.default_reason(form.get("reason"))
            content = await _uploaded(form)
            if content is not None:
                pairs = await asyncio.to_thread(importer.entries_from_csv, content)
            else:
                pasted = str(form.get("addresses") or "")
                lines = [line.strip() for line in pasted.replace(",", "\n").splitlines()]
                pairs = [(line, None) for line in lines if line]
                if not pairs:
                    raise ApiError(400, "Paste at least one address, or choose a CSV file.")
                if len(pairs) > importer.MAX_ENTRIES:
                    raise ApiError(
                        400,
                        f"Paste at most {importer.MAX_ENTRIES:,} addresses; "
                        "upload a CSV file for more.",
                    )
            counts = await importer.import_entries(ctx, pairs, fallback)
        except ApiError as problem:
            await refused(ctx, visitor, problem)
            return RedirectResponse(PATH, status_code=303)
        audit_write(ctx, request, "import_suppressions", None, 200)
        sessions.flash(
            visitor.row,
            "ok",
            f"Imported {counts.received:,} addresses: {counts.added:,} added, "
            f"{counts.upgraded:,} given a stronger reason, {counts.unchanged:,} already there, "
            f"{counts.invalid:,} not valid; {counts.contacts_updated:,} contacts updated.",
        )
        return RedirectResponse(PATH, status_code=303)

    return await as_visitor(request, work)


@router.post(f"{PATH}/lift")
async def lift_suppression_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        await service.lift(ctx, email_hash=form.get("email_hash"))
        audit_write(ctx, request, "lift_suppression", None, 200)
        sessions.flash(visitor.row, "ok", "Lifted: the address can be added and mailed again.")
        return RedirectResponse(PATH, status_code=303)

    return await as_visitor(request, work, admin=True)
