"""The Contacts pages (issue 18, first slice): the list with search, filters (status, tag,
list, source, dates, segment), sort and paging, on the API's own query (`contacts.service`,
`segments.narrow`); a contact's page with its fields, typed custom fields (invalid values
flagged), tags, lists, consent and a timeline of what happened to it; edit, unsubscribe,
delete and erase (each asked in plain words first)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy import select

from mailroom.contacts import bulk, exporter
from mailroom.contacts import service as contacts
from mailroom.contacts.query import SORTS, parse_filter
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.custom_fields import service as custom_fields
from mailroom.dashboard import render
from mailroom.dashboard.contact_timeline import timeline_of
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, refused, when
from mailroom.lists import service as lists
from mailroom.models import (
    ListMember,
    MailingList,
)
from mailroom.models.contacts import CONTACT_STATUSES
from mailroom.people import sessions
from mailroom.segments import service as segments
from mailroom.tags import service as tags
from mailroom.web.downloads import csv_download

router = APIRouter(include_in_schema=False)
PAGE_SIZE = 50
CHOICES = 200  # tags, lists and segments offered in the filter pickers
FILTER_KEYS = ("q", "status", "tag", "list", "source", "from", "to", "segment")
# Where imports and signup forms keep a contact's consent (in its custom fields).
CONSENT_KEYS = ("consent_source", "consent_ip", "consent_at", "consent_confirmed_at")


def _page_number(request: Request) -> int:
    raw = request.query_params.get("page") or "1"
    return max(1, int(raw)) if raw.isdecimal() and len(raw) < 7 else 1


async def _pickers(ctx: Context) -> dict[str, list[Any]]:
    first = PageParams(1, CHOICES)
    tag_rows, _ = await tags.list_tags(ctx, first, None)
    list_rows, _ = await lists.list_lists(ctx, first)
    segment_rows, _ = await segments.list_segments(ctx, first, None)
    return {
        "tags": [(t.id, t.name) for t in tag_rows],
        "lists": [(m.id, m.name) for m in list_rows],
        "segments": [(s.id, s.name) for s in segment_rows],
    }


@router.get("/app/contacts")
async def contacts_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        query = request.query_params
        chosen = {k: (query.get(k) or "").strip() for k in FILTER_KEYS}
        sort = query.get("sort") or None
        direction = query.get("dir") or None
        page = _page_number(request)
        problem = None
        rows: list[dict[str, Any]] = []
        total = 0
        try:
            if sort is not None and sort not in SORTS:
                raise ApiError(400, f"sort must be one of {', '.join(SORTS)}")
            contact_filter = parse_filter({k: v or None for k, v in chosen.items()})
            contact_filter = await segments.narrow(ctx, contact_filter)
            rows, total = await contacts.list_contacts(
                ctx, contact_filter, PageParams(page, PAGE_SIZE), sort, direction
            )
        except ApiError as refused:
            problem = refused.message
        kept = {k: v for k, v in chosen.items() if v}
        if sort:
            kept["sort"] = sort
        if direction:
            kept["dir"] = direction
        for row in rows:
            row["added"] = when(row["created_at"])
            row["name"] = " ".join(p for p in (row["first_name"], row["last_name"]) if p)
        return render.page(
            "contacts.html",
            status=400 if problem else 200,
            title="Contacts",
            section="contacts",
            visitor=visitor,
            rows=rows,
            total=total,
            page=page,
            pages=max(1, -(-total // PAGE_SIZE)),
            chosen=chosen,
            sort=sort or "created",
            direction=direction or "",
            sorts=SORTS,
            statuses=CONTACT_STATUSES,
            counts=await contacts.status_counts(ctx),
            problem=problem,
            page_url=lambda n: "?" + urlencode({**kept, "page": n}),
            export_query=urlencode({k: v for k, v in kept.items() if k in FILTER_KEYS}),
            back=str(request.url.path) + (f"?{request.url.query}" if request.url.query else ""),
            actions=BULK_ACTIONS,
            flashes=sessions.take_flash(visitor.row),
            pickers=await _pickers(ctx),
        )

    return await as_visitor(request, work)


async def _contact_page(
    visitor: Visitor, ctx: Context, contact_id: str, *, status: int = 200
) -> Response:
    contact = await contacts.describe(ctx, await contacts.get_contact(ctx, contact_id))
    registry = await custom_fields.registry(ctx)
    values = contact["custom_fields"]
    fields = [
        {
            "key": key,
            "label": definition.label,
            "type": definition.type,
            "options": definition.options or [],
            "value": values.get(key),
            "invalid": key in contact["invalid_custom_fields"],
        }
        for key, definition in registry.items()
    ]
    memberships = await ctx.session.execute(
        select(MailingList.id, MailingList.name, ListMember.status, ListMember.created_at)
        .join(ListMember, ListMember.list_id == MailingList.id)
        .where(ListMember.contact_id == contact_id, ListMember.workspace_id == ctx.workspace_id)
        .order_by(MailingList.name)
    )
    consent = {k: values.get(k) for k in CONSENT_KEYS if values.get(k)}
    return render.page(
        "contact.html",
        status=status,
        title=contact["email"],
        section="contacts",
        visitor=visitor,
        contact=contact,
        fields=fields,
        lists=[
            {"id": i, "name": n, "status": s, "since": when(at)}
            for i, n, s, at in memberships.all()
        ],
        consent=consent,
        timeline=await timeline_of(ctx, contact),
        flashes=sessions.take_flash(visitor.row),
    )


@router.get("/app/contacts/{contact_id}")
async def contact_page(contact_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return await _contact_page(visitor, ctx, contact_id)

    return await as_visitor(request, work)


def _typed(value: str, field_type: str) -> Any:
    """A form's text as the API's JSON value for the field's type (the service judges it)."""
    text = value.strip()
    if text == "":
        return None
    if field_type == "number":
        try:
            number = float(text)
        except ValueError:
            return text  # refused by the service with its own message
        return int(number) if number.is_integer() else number
    if field_type == "boolean":
        return text == "true"
    return text


@router.post("/app/contacts/{contact_id}")
async def save_contact(contact_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        registry = await custom_fields.registry(ctx)
        changes: dict[str, Any] = {
            key: str(form.get(key) or "").strip() or None
            for key in ("first_name", "last_name", "language")
        }
        typed = {
            key: _typed(str(form.get(f"cf_{key}") or ""), definition.type)
            for key, definition in registry.items()
            if f"cf_{key}" in form
        }
        if typed:
            changes["custom_fields"] = typed
        try:
            await contacts.update_contact(ctx, contact_id, changes)
        except ApiError as problem:
            if problem.status == 404:
                raise
            await refused(ctx, visitor, problem)
            return await _contact_page(visitor, ctx, contact_id, status=problem.status)
        audit_write(ctx, request, "update_contact", contact_id, 200)
        sessions.flash(visitor.row, "ok", "Contact saved.")
        return RedirectResponse(f"/app/contacts/{contact_id}", status_code=303)

    return await as_visitor(request, work)


@router.post("/app/contacts/{contact_id}/unsubscribe")
async def unsubscribe_contact(contact_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        await contacts.update_contact(ctx, contact_id, {"status": "unsubscribed"})
        audit_write(ctx, request, "update_contact", contact_id, 200)
        sessions.flash(visitor.row, "ok", "Unsubscribed: no campaign or automation mails them.")
        return RedirectResponse(f"/app/contacts/{contact_id}", status_code=303)

    return await as_visitor(request, work)


REMOVALS = {
    "delete": (
        "Delete this contact?",
        "The contact and its tags and list memberships go. Its address stays on the "
        "suppression list as deleted, so it is not mailed by mistake; an admin can lift that "
        "if the person signs up again. Sent-message counts keep a masked address.",
        "Delete contact",
    ),
    "erase": (
        "Erase this person?",
        "For a request to be forgotten: the contact, its memberships and every copy of the "
        "address go. Only a one-way hash stays on the suppression list, so this address can "
        "never be added or mailed again, and this cannot be undone.",
        "Erase for good",
    ),
}


@router.get("/app/contacts/{contact_id}/{mode}")
async def remove_contact_confirm(contact_id: str, mode: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        if mode not in REMOVALS:
            raise ApiError(404, "Page not found")
        contact = await contacts.get_contact(ctx, contact_id)
        heading, text, button = REMOVALS[mode]
        return render.page(
            "contact_remove.html",
            title=heading,
            section="contacts",
            visitor=visitor,
            contact=contact,
            mode=mode,
            heading=heading,
            text=text,
            button=button,
        )

    return await as_visitor(request, work)


@router.post("/app/contacts/{contact_id}/{mode}")
async def remove_contact(contact_id: str, mode: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        if mode not in REMOVALS:
            raise ApiError(404, "Page not found")
        contact = await contacts.get_contact(ctx, contact_id)
        shown = contact.email
        await contacts.delete_contact(ctx, contact_id, mode)
        audit_write(ctx, request, "delete_contact", contact_id, 200)
        text = f"{shown} is deleted." if mode == "delete" else "The contact is erased."
        sessions.flash(visitor.row, "ok", text)
        return RedirectResponse("/app/contacts", status_code=303)

    return await as_visitor(request, work)


# What the bulk form offers, in the words a person uses (the API's `action` values).
BULK_ACTIONS = [
    ("add_tag", "Add the tag"),
    ("remove_tag", "Remove the tag"),
    ("add_to_list", "Add to the list"),
    ("remove_from_list", "Remove from the list"),
    ("unsubscribe", "Unsubscribe"),
    ("archive", "Archive"),
    ("restore", "Restore from the archive"),
    ("delete", "Delete"),
    ("erase", "Erase for good"),
    ("export", "Export as CSV"),
]
_RESULT_WORDS = {
    "deleted": "deleted",
    "erased": "erased",
    "archived": "archived",
    "already_archived": "already archived",
    "restored": "restored",
    "not_archived": "not archived",
    "tagged": "tagged",
    "untagged": "untagged",
    "added": "added",
    "already_member": "already members",
    "skipped_not_subscribed": "skipped (not subscribed)",
    "unsubscribed": "unsubscribed",
    "already_unsubscribed": "already unsubscribed",
}


def _local(target: str) -> str:
    return target if target.startswith("/app/contacts") and "//" not in target else "/app/contacts"


@router.get("/app/contacts-export")
async def export_contacts_page(request: Request) -> Response:
    """The current filter as the API's streamed CSV (the `contacts:export` permission)."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        visitor.principal.check("contacts:export")
        chosen = {k: (request.query_params.get(k) or "").strip() or None for k in FILTER_KEYS}
        contact_filter = await segments.narrow(ctx, parse_filter(chosen))
        return csv_download(
            request,
            visitor.principal,
            "contacts.csv",
            lambda c: exporter.export_filtered(c, contact_filter),
        )

    return await as_visitor(request, work)


@router.post("/app/contacts-bulk")
async def bulk_contacts_page(request: Request) -> Response:
    """One of the API's bulk actions over the ticked contacts or the whole filter."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        back = _local(str(form.get("back") or "/app/contacts"))
        action = str(form.get("action") or "")
        body: dict[str, Any] = {"action": action}
        if form.get("scope") == "filter":
            body["filter"] = {k: str(form.get(f"f_{k}")) for k in FILTER_KEYS if form.get(f"f_{k}")}
        else:
            body["contact_ids"] = list(form.get("contact_ids") or [])
            if not body["contact_ids"]:
                sessions.flash(
                    visitor.row, "error", "Tick some contacts first, or choose “all that match”."
                )
                return RedirectResponse(back, status_code=303)
        if action in ("add_tag", "remove_tag"):
            body["tag_id"] = str(form.get("tag_id") or "")
        if action in ("add_to_list", "remove_from_list"):
            body["list_id"] = str(form.get("list_id") or "")
        if action in ("delete", "erase") and form.get("sure") != "yes":
            sessions.flash(
                visitor.row,
                "error",
                "Deleting and erasing cannot be undone: tick “I understand” to go ahead.",
            )
            return RedirectResponse(back, status_code=303)
        try:
            parsed = await bulk.resolve_segment(ctx, bulk.parse_request(body, visitor.principal))
            if parsed.action == "export":
                await bulk.check_export(ctx, parsed)
                return csv_download(
                    request,
                    visitor.principal,
                    "contacts-export.csv",
                    lambda c: exporter.export_selected(
                        c, parsed.contact_ids, parsed.filter, bulk.MAX_CONTACTS
                    ),
                )
            result = await bulk.run(ctx, parsed)
        except ApiError as problem:
            await refused(ctx, visitor, problem)
            return RedirectResponse(back, status_code=303)
        audit_write(ctx, request, "bulk_contacts", None, 200)
        done = [
            f"{value:,} {_RESULT_WORDS.get(key, key.replace('_', ' '))}"
            for key, value in result.items()
            if key != "success" and isinstance(value, int)
        ]
        sessions.flash(visitor.row, "ok", "Done: " + (", ".join(done) or "nothing to change") + ".")
        return RedirectResponse(back, status_code=303)

    return await as_visitor(request, work)
