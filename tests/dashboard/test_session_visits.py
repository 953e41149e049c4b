"""Issue 25 item 2: a read-only page records the visit. The session's last-seen time is saved
(it never was: the change was flushed inside the page's read transaction and rolled back with
it), so a person who keeps reading is not signed out after the idle limit; flashes are shown
once; a page whose read transaction ends early (a preview) records the visit too."""

from __future__ import annotations

import hashlib
from contextlib import aclosing
from datetime import timedelta

from sqlalchemy import select, update

from mailroom.core.clock import utcnow
from mailroom.models import DashboardSession
from mailroom.people import sessions
from tests.dashboard.helpers import csrf_of, signed_in


def _row_id(browser) -> str:
    return hashlib.sha256(browser.cookies[sessions.COOKIE].encode()).hexdigest()


async def _last_seen(db, row_id: str):
    async with db.session(write=False) as session:
        return await session.scalar(
            select(DashboardSession.last_seen_at).where(DashboardSession.id == row_id)
        )


async def _set_last_seen(db, row_id: str, when) -> None:
    async with db.transaction() as session:
        await session.execute(
            update(DashboardSession).where(DashboardSession.id == row_id).values(last_seen_at=when)
        )


async def test_a_page_after_a_pause_saves_the_last_seen_time(app, db, settings, ws):
    browser = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(browser):
        row_id = _row_id(browser)
        await _set_last_seen(db, row_id, utcnow() - timedelta(minutes=5))

        page = await browser.get("/app/contacts")

        assert page.status_code == 200, page.text
        assert utcnow() - await _last_seen(db, row_id) < timedelta(seconds=30)


async def test_a_person_who_keeps_reading_stays_signed_in(app, db, settings, ws):
    settings.session_idle_minutes = 10
    browser = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(browser):
        row_id = _row_id(browser)
        # Three visits, each 7 minutes after the one before: never 10 minutes idle.
        for _ in range(3):
            seen = await _last_seen(db, row_id)
            await _set_last_seen(db, row_id, seen - timedelta(minutes=7))
            page = await browser.get("/app")
            assert page.status_code == 200, (page.status_code, page.headers.get("location"))
        # Then a real pause past the limit ends the session.
        await _set_last_seen(db, row_id, utcnow() - timedelta(minutes=11))
        gone = await browser.get("/app")
        assert gone.status_code == 303
        assert gone.headers["location"] == "/app/sign-in?next=/app"


async def test_a_flash_is_shown_once_after_a_pause(app, db, settings, ws):
    browser = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(browser):
        row_id = _row_id(browser)
        form = await browser.get("/app/lists")
        saved = await browser.post(
            "/app/lists", data={"csrf": csrf_of(form.text), "name": "Readers"}
        )
        assert saved.status_code == 303, saved.text
        await _set_last_seen(db, row_id, utcnow() - timedelta(minutes=5))

        shown = await browser.get("/app/lists")
        again = await browser.get("/app/lists")

        assert "Readers" in shown.text and "created" in shown.text
        assert "“Readers” created" not in again.text
        assert utcnow() - await _last_seen(db, row_id) < timedelta(seconds=30)


async def test_a_preview_after_a_pause_saves_the_last_seen_time(app, db, settings, ws, client):
    made = await client.post(
        "/api/v1/templates",
        json={"name": "Hello", "subject": "Hi", "html_content": "<p>Hi {{ first_name }}</p>"},
        headers=ws.headers,
    )
    assert made.status_code == 201, made.text
    template_id = made.json()["template"]["id"]
    browser = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(browser):
        row_id = _row_id(browser)
        await _set_last_seen(db, row_id, utcnow() - timedelta(minutes=5))

        preview = await browser.get(f"/app/templates/{template_id}/preview")

        assert preview.status_code == 200, preview.text
        assert "Hi" in preview.text
        assert utcnow() - await _last_seen(db, row_id) < timedelta(seconds=30)
