"""RSS feeds (`/app/feeds`): the feeds with their state and schedule in words, a new feed's
form beside them (feed URL, template, subject, an audience chosen as a campaign's, the
schedule, item counts, sender), and a feed's page: its state, Activate or Resume, Pause, Run
now, Check (the items the next issue would hold, its subject and its HTML in a sandboxed
frame), its settings to change, its issues (the campaigns it made) and Delete after a
confirmation.

Everything runs on `rss.service` and `rss.issues` as the API does. Checking, activating and
running fetch the feed with no transaction open (the services end the page's transaction
first), and a feed URL's name is resolved by the URL guard: the page commits what it read
before, so no pooled connection (on SQLite not the single write connection) waits on a blog.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from mailroom.campaigns import service as campaigns
from mailroom.campaigns.schemas import AUDIENCE_KEYS
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.dashboard import render
from mailroom.dashboard.campaign_pages import _audience_of, _choices, _rate, _recipients
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, refused, reread, when
from mailroom.dashboard.template_pages import preview_document
from mailroom.models import RssFeed
from mailroom.people import sessions
from mailroom.rss import issues, service
from mailroom.rss import schedule as schedules
from mailroom.sending import service as sending
from mailroom.templates.render import Rendered

router = APIRouter(include_in_schema=False)
PATH = "/app/feeds"
LIST_PAGE = 25
ISSUES_PAGE = 25
TEXT = ("name", "url", "template_id", "subject", "from_name", "from_email", "reply_to")
SENDER = ("from_name", "from_email", "reply_to")
# A new feed's form, and what a feed's form shows for the schedule mode it does not use.
BLANK: dict[str, str] = {
    **dict.fromkeys(TEXT, ""),
    "subject": service.DEFAULT_SUBJECT,
    **schedules.DEFAULT,
    "weekday": "monday",
    "day_of_month": "1",
    "check_every_minutes": "60",
    "min_items": "1",
    "max_items": "10",
}
MODE_NAMES = {"digest": "A digest on a schedule", "each_item": "Each new item, as it appears"}
# Offered in the time zone field (any IANA name may be typed).
_COMMON_ZONES = """
UTC Europe/London Europe/Dublin Europe/Lisbon Europe/Paris Europe/Berlin Europe/Madrid
Europe/Rome Europe/Amsterdam Europe/Brussels Europe/Zurich Europe/Stockholm
Europe/Warsaw Europe/Athens Europe/Helsinki Europe/Istanbul America/New_York
America/Chicago America/Denver America/Los_Angeles America/Toronto America/Mexico_City
America/Sao_Paulo America/Buenos_Aires Africa/Johannesburg Africa/Lagos Africa/Cairo
Asia/Dubai Asia/Kolkata Asia/Singapore Asia/Shanghai Asia/Tokyo Asia/Seoul
Australia/Sydney Pacific/Auckland
"""
ZONES = tuple(_COMMON_ZONES.split())


def _page_number(request: Request) -> int:
    raw = request.query_params.get("page") or "1"
    return max(1, int(raw)) if raw.isdecimal() and len(raw) < 7 else 1


def _feed_view(feed: RssFeed) -> dict[str, Any]:
    shown = service.as_dict(feed)
    return {
        **shown,
        "schedule_words": schedules.describe(feed.schedule),
        "checked": when(feed.last_checked_at),
        "errored": when(feed.last_error_at),
        "next_run": when(feed.next_run_at),
        "last_issue": when(feed.last_issue_at),
    }


def _draft_of_feed(feed: RssFeed) -> dict[str, Any]:
    """The feed's settings as its form shows them."""
    shown = service.as_dict(feed)
    draft: dict[str, Any] = {**BLANK, **{name: shown[name] or "" for name in TEXT}}
    draft |= {name: str(value) for name, value in feed.schedule.items()}
    draft |= {name: str(shown[name]) for name in ("min_items", "max_items")}
    return draft | {
        "audience": {key: list(shown["audience"].get(key) or []) for key in AUDIENCE_KEYS}
    }


def _draft_of_form(form: dict[str, Any]) -> dict[str, Any]:
    """The form as posted, to show again when refused."""
    draft: dict[str, Any] = {name: str(form.get(name) or "") for name in BLANK}
    return draft | {"audience": _audience_of(form)}


def _number(raw: str) -> Any:
    """A number field: None when empty (the service's default), else the integer, else the
    text as typed (the service then says the field must be an integer)."""
    typed = raw.strip()
    if not typed:
        return None
    try:
        return int(typed)
    except ValueError:
        return typed


def _schedule(draft: dict[str, Any]) -> dict[str, Any]:
    """The schedule of the chosen mode (the other mode's fields are left out)."""
    if draft["mode"] == "each_item":
        chosen: dict[str, Any] = {"check_every_minutes": _number(draft["check_every_minutes"])}
    else:
        chosen = {name: draft[name].strip() for name in ("frequency", "time", "weekday")}
        chosen |= {
            "timezone": draft["timezone"].strip(),
            "day_of_month": _number(draft["day_of_month"]),
        }
    return {"mode": draft["mode"]} | {k: v for k, v in chosen.items() if v not in (None, "")}


def _body(draft: dict[str, Any]) -> dict[str, Any]:
    """The form as the service's body (a create's and a change's alike)."""
    body: dict[str, Any] = {name: draft[name] for name in ("name", "url", "template_id")}
    body |= {name: draft[name].strip() for name in ("subject", *SENDER)}
    body["audience"] = draft["audience"]
    body["schedule"] = _schedule(draft)
    body |= {name: _number(draft[name]) for name in ("min_items", "max_items")}
    return body


async def _form_values(ctx: Context, draft: dict[str, Any]) -> dict[str, Any]:
    """What the feed form needs besides the draft: the choices and the recipient count."""
    try:
        count, count_problem = await _recipients(ctx, draft["audience"]), None
    except ApiError as problem:
        count, count_problem = None, problem.message
    return {
        "draft": draft,
        "choices": await _choices(ctx),
        "count": count,
        "count_problem": count_problem,
        "modes": list(MODE_NAMES.items()),
        "frequencies": schedules.FREQUENCIES,
        "weekdays": schedules.WEEKDAYS,
        "zones": ZONES,
        "min_check": schedules.MIN_CHECK,
        "max_check": schedules.MAX_CHECK,
        "max_items": service.MAX_ITEMS,
        "identity": await sending.settings_of(ctx),
    }


async def _list_page(
    visitor: Visitor,
    ctx: Context,
    page: int = 1,
    *,
    status: int = 200,
    draft: dict[str, Any] | None = None,
) -> Response:
    feeds, total = await service.list_feeds(ctx, PageParams(page, LIST_PAGE), None)
    return render.page(
        "feeds.html",
        status=status,
        title="RSS feeds",
        section="feeds",
        visitor=visitor,
        feeds=[_feed_view(f) for f in feeds],
        total=total,
        page=page,
        pages=max(1, -(-total // LIST_PAGE)),
        page_url=lambda n: f"?page={n}",
        form_action=PATH,
        submit_label="Add feed",
        **await _form_values(ctx, draft or {**BLANK, "audience": _audience_of({})}),
        flashes=sessions.take_flash(visitor.row),
    )


async def _issue_rows(ctx: Context, feed_id: str, page: int) -> tuple[list[dict[str, Any]], int]:
    """The feed's campaigns, newest first, as the campaign list shows them."""
    found, total = await service.issues(ctx, feed_id, PageParams(page, ISSUES_PAGE))
    stats = await campaigns.stats(ctx, [c.id for c in found])
    return [
        {
            "id": c.id,
            "name": c.name,
            "status": c.status,
            "error": c.error,
            "when": when(c.finished_at or c.started_at or c.scheduled_at or c.created_at),
            "sent": stats[c.id]["sent"],
            "open_rate": _rate(stats[c.id]["opened"], stats[c.id]["sent"]),
            "click_rate": _rate(stats[c.id]["clicked"], stats[c.id]["sent"]),
        }
        for c in found
    ], total


def _checked_view(found: dict[str, Any]) -> dict[str, Any]:
    """A check's answer for the page: each item's date as every page shows times."""
    listed = []
    for item in found["items"]:
        published = item["published_at"]
        day = when(datetime.fromisoformat(published)) if published else ""
        listed.append({**item, "published": day})
    return {"items": listed, "subject": found["subject"]}


async def _feed_page(
    visitor: Visitor,
    ctx: Context,
    feed: RssFeed,
    *,
    page: int = 1,
    status: int = 200,
    draft: dict[str, Any] | None = None,
    checked: dict[str, Any] | None = None,
) -> Response:
    rows, total = await _issue_rows(ctx, feed.id, page)
    return render.page(
        "feed.html",
        status=status,
        title=feed.name,
        section="feeds",
        visitor=visitor,
        feed=_feed_view(feed),
        checked=_checked_view(checked) if checked is not None else None,
        issues=rows,
        issue_total=total,
        page=page,
        pages=max(1, -(-total // ISSUES_PAGE)),
        page_url=lambda n: f"?page={n}",
        form_action=f"{PATH}/{feed.id}",
        submit_label="Save feed",
        **await _form_values(ctx, draft or _draft_of_feed(feed)),
        flashes=sessions.take_flash(visitor.row),
    )


@router.get(PATH)
async def feeds_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return await _list_page(visitor, ctx, _page_number(request))

    return await as_visitor(request, work)


@router.post(PATH)
async def add_feed(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        draft = _draft_of_form(form)
        await ctx.session.commit()  # the URL's name is resolved next: hold no connection
        try:
            feed = await service.create_feed(ctx, _body(draft))
        except ApiError as problem:
            await refused(ctx, visitor, problem)
            return await _list_page(visitor, ctx, status=problem.status, draft=draft)
        audit_write(ctx, request, "create_rss_feed", feed.id, 201)
        sessions.flash(
            visitor.row,
            "ok",
            f"Feed “{feed.name}” added as a draft: check it, then activate it.",
        )
        return RedirectResponse(f"{PATH}/{feed.id}", status_code=303)

    return await as_visitor(request, work)


@router.get(PATH + "/{feed_id}")
async def feed_page(feed_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        feed = await service.get_feed(ctx, feed_id)
        return await _feed_page(visitor, ctx, feed, page=_page_number(request))

    return await as_visitor(request, work)


@router.post(PATH + "/{feed_id}")
async def save_feed(feed_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        draft = _draft_of_form(form)
        await ctx.session.commit()  # the URL's name is resolved next: hold no connection
        try:
            feed = await service.update_feed(ctx, feed_id, _body(draft))
        except ApiError as problem:
            if problem.status == 404:
                raise
            await refused(ctx, visitor, problem)
            feed = await service.get_feed(ctx, feed_id)
            return await _feed_page(visitor, ctx, feed, status=problem.status, draft=draft)
        audit_write(ctx, request, "update_rss_feed", feed.id, 200)
        sessions.flash(visitor.row, "ok", f"Feed “{feed.name}” saved.")
        return RedirectResponse(f"{PATH}/{feed.id}", status_code=303)

    return await as_visitor(request, work)


@router.post(PATH + "/{feed_id}/check")
async def check_feed(feed_id: str, request: Request) -> Response:
    """What the next issue would hold, fetched now (nothing is sent, marked or changed)."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        try:
            found = await issues.check(ctx, feed_id)  # ends the transaction to fetch
        except ApiError as problem:
            if problem.status == 404:
                raise
            await refused(ctx, visitor, problem)
            feed = await service.get_feed(ctx, feed_id)
            return await _feed_page(visitor, ctx, feed, status=problem.status)
        await reread(ctx.session, visitor)
        feed = await service.get_feed(ctx, feed_id)
        return await _feed_page(visitor, ctx, feed, checked=found)

    return await as_visitor(request, work)


@router.get(PATH + "/{feed_id}/preview")
async def preview_feed(feed_id: str, request: Request) -> Response:
    """The next issue's HTML as its own document, for the check's sandboxed frame: fetched
    again (a check's answer is kept nowhere) and never part of the dashboard's page."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        async def make(contact_id: str | None) -> Rendered:
            found = await issues.check(ctx, feed_id)
            return Rendered(subject=found["subject"], preheader="", html=found["html"], text="")

        return await preview_document(ctx, request, "", make)

    return await as_visitor(request, work)


@router.get(PATH + "/{feed_id}/delete")
async def confirm_delete(feed_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        feed = await service.get_feed(ctx, feed_id)
        return render.page(
            "feed.html",
            title=f"Delete “{feed.name}”?",
            section="feeds",
            visitor=visitor,
            feed=_feed_view(feed),
            confirm_delete=True,
        )

    return await as_visitor(request, work)


ACTIONS = {
    "activate": "activate_rss_feed",
    "pause": "pause_rss_feed",
    "run": "run_rss_feed",
    "delete": "delete_rss_feed",
}


@router.post(PATH + "/{feed_id}/{action}")
async def feed_action(feed_id: str, action: str, request: Request) -> Response:
    """activate (and resume), pause, run now and delete: the API's actions by their names."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        if action not in ACTIONS:
            raise ApiError(404, "Page not found")
        here = f"{PATH}/{feed_id}"
        feed = await service.get_feed(ctx, feed_id)
        name, was = feed.name, feed.status
        made: list[str] = []
        try:
            if action == "activate":
                await issues.activate(ctx, feed_id)  # ends the transaction to fetch
                await reread(ctx.session, visitor)
                text = (
                    f"Feed “{name}” resumed" if was == "paused" else f"Feed “{name}” is active"
                ) + ": the items it holds now are never mailed, new ones go out on schedule."
            elif action == "pause":
                await issues.pause(ctx, feed_id)
                text = f"Feed “{name}” is paused: nothing is fetched or sent until it resumes."
            elif action == "run":
                made = await issues.run(ctx, feed_id)  # ends the transaction to fetch
                await reread(ctx.session, visitor)
                text = _run_text(await _names(ctx, made))
            else:
                await service.delete_feed(ctx, feed_id)
                audit_write(ctx, request, ACTIONS[action], feed_id, 200)
                sessions.flash(
                    visitor.row, "ok", f"Feed “{name}” deleted; the campaigns it made stay."
                )
                return RedirectResponse(PATH, status_code=303)
        except ApiError as problem:
            if problem.status == 404:
                raise
            await refused(ctx, visitor, problem)
            return RedirectResponse(here, status_code=303)
        audit_write(ctx, request, ACTIONS[action], feed_id, 202 if made else 200)
        sessions.flash(visitor.row, "ok", text)
        return RedirectResponse(here, status_code=303)

    return await as_visitor(request, work)


async def _names(ctx: Context, campaign_ids: list[str]) -> list[str]:
    return [(await campaigns.get_campaign(ctx, cid)).name for cid in campaign_ids]


def _run_text(names: list[str]) -> str:
    if not names:
        return "No new items: nothing was sent."
    quoted = ", ".join(f"“{n}”" for n in names)
    return f"{len(names)} issue{'s' if len(names) != 1 else ''} made: {quoted} (see Issues below)."
