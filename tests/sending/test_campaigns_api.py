"""Campaigns through the API as a client uses them: create (from scratch or a template), read,
list, update while a draft, the actions (send, schedule, cancel, duplicate, test) and every
refusal with its exact message and nothing changed. Sending here goes to the default file
outbox (no SMTP configured: any sender is accepted), except where a test sets a relay."""

from __future__ import annotations

from datetime import timedelta
from email import policy
from email.parser import BytesParser

import pytest
from sqlalchemy import func, select, update

from mailroom.core.clock import utcnow
from mailroom.models import ListMember, SendLog, SendMeter
from mailroom.sending.limits import month_period
from tests.sending.conftest import verified_domain
from tests.sending.helpers import (
    campaign_body,
    get_campaign,
    make_campaign,
    make_contacts,
    make_list,
    ok,
    recipients,
    send_campaign,
)

BASE = "/api/v1/campaigns"


def future(**delta) -> str:
    return (utcnow() + timedelta(**delta)).isoformat().replace("+00:00", "Z")


async def send_log_rows(db) -> int:
    async with db.session() as session:
        return int(await session.scalar(select(func.count()).select_from(SendLog)) or 0)


async def test_create_read_list_and_defaults(client, ws):
    news = await make_list(client, ws)
    created = await make_campaign(client, ws, news)
    assert created["status"] == "draft"
    assert (created["track_opens"], created["track_clicks"]) == (True, True)
    assert created["audience"] == {
        "list_ids": [news],
        "segment_ids": [],
        "tag_ids": [],
        "exclude_list_ids": [],
        "exclude_segment_ids": [],
        "exclude_tag_ids": [],
    }
    assert created["stats"]["recipients"] == 0 and set(created["stats"]) == {
        "recipients",
        "sent",
        "failed",
        "skipped",
        "delivered",
        "opened",
        "clicked",
        "bounced",
        "complained",
        "unsubscribed",
    }
    assert created["scheduled_at"] is None and created["started_at"] is None
    assert await get_campaign(client, ws, created["id"]) == created

    second = await make_campaign(client, ws, news, name="Autumn news")
    page = await ok(await client.get(BASE, params={"limit": 1}, headers=ws.headers))
    assert [c["id"] for c in page["campaigns"]] == [second["id"]]  # newest first
    assert page["pagination"]["total"] == 2
    found = await ok(await client.get(BASE, params={"q": "spring"}, headers=ws.headers))
    assert [c["id"] for c in found["campaigns"]] == [created["id"]]
    drafts = await ok(await client.get(BASE, params={"status": "sent"}, headers=ws.headers))
    assert drafts["campaigns"] == []


async def test_create_from_a_template_copies_what_the_request_leaves_out(client, ws):
    template = await ok(
        await client.post(
            "/api/v1/templates",
            json={
                "name": "Welcome",
                "subject": "Welcome aboard",
                "preheader": "Glad you are here",
                "html_content": "<p>Hi {{ first_name }}</p>",
                "text_content": "Hi {{ first_name }}",
            },
            headers=ws.headers,
        ),
        201,
    )
    body = {"name": "From template", "template_id": template["template"]["id"], "subject": "Mine"}
    created = (await ok(await client.post(BASE, json=body, headers=ws.headers), 201))["campaign"]
    assert created["subject"] == "Mine"
    assert created["preheader"] == "Glad you are here"
    assert created["html_content"] == "<p>Hi {{ first_name }}</p>"
    assert created["text_content"] == "Hi {{ first_name }}"
    assert created["template_id"] == template["template"]["id"]
    missing = await client.post(BASE, json={"name": "x", "template_id": "nope"}, headers=ws.headers)
    assert (missing.status_code, missing.json()) == (404, {"error": "Template not found"})


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({}, 400, "name is required"),
        ({"name": "  "}, 400, "name is required"),
        ({"name": "x" * 101}, 400, "name must be 100 characters or fewer"),
        ({"name": "a", "subject": "s" * 201}, 400, "subject must be 200 characters or fewer"),
        (
            {"name": "a", "html_content": "x" * 500_001},
            413,
            "html_content must be 500,000 characters or fewer",
        ),
        (
            {"name": "a", "text_content": "x" * 200_001},
            413,
            "text_content must be 200,000 characters or fewer",
        ),
        (
            {"name": "a", "html_content": "<p>{{ first_name </p>"},
            400,
            None,  # Template syntax error in html_content, line 1: ...
        ),
        ({"name": "a", "from_email": "not an address"}, 400, None),
        ({"name": "a", "track_opens": "yes"}, 400, "track_opens must be true or false"),
        ({"name": "a", "audience": []}, 400, "audience must be an object"),
        (
            {"name": "a", "audience": {"list_ids": "x"}},
            400,
            "audience.list_ids must be an array of ids",
        ),
        (
            {"name": "a", "audience": {"list_ids": ["nope"]}},
            400,
            "audience.list_ids has ids that are not in this workspace: nope",
        ),
    ],
)
async def test_bad_campaigns_are_refused_and_nothing_is_stored(client, ws, body, status, message):
    response = await client.post(BASE, json=body, headers=ws.headers)
    assert response.status_code == status, response.text
    if message is not None:
        assert response.json() == {"error": message}
    elif "html_content" in body:
        assert response.json()["error"].startswith("Template syntax error in html_content, line 1:")
    else:
        assert response.json()["error"]
    listed = await ok(await client.get(BASE, headers=ws.headers))
    assert listed["pagination"]["total"] == 0


async def test_names_are_unique_ignoring_case(client, ws):
    news = await make_list(client, ws)
    await make_campaign(client, ws, news)
    again = await client.post(
        BASE, json=campaign_body(news, name="SPRING SALE"), headers=ws.headers
    )
    assert again.status_code == 409
    assert again.json()["error"] == "A campaign with this name already exists"


async def test_update_while_draft_then_refused_once_sending(client, db, ws):
    news = await make_list(client, ws)
    await make_contacts(client, ws, ["a@mail.example"], news)
    campaign = await make_campaign(client, ws, news)
    changed = await client.patch(
        f"{BASE}/{campaign['id']}",
        json={"subject": "New subject", "track_clicks": False},
        headers=ws.headers,
    )
    body = (await ok(changed))["campaign"]
    assert (body["subject"], body["track_clicks"]) == ("New subject", False)
    for bad, message in [
        ({}, "No updatable fields provided"),
        ({"track_opens": 1}, "track_opens must be true or false"),
    ]:
        refused = await client.patch(f"{BASE}/{campaign['id']}", json=bad, headers=ws.headers)
        assert (refused.status_code, refused.json()) == (400, {"error": message})
    unknown = await client.patch(f"{BASE}/{campaign['id']}", json={"bogus": 1}, headers=ws.headers)
    assert unknown.status_code == 400

    await send_campaign(client, ws, campaign["id"])
    late = await client.patch(f"{BASE}/{campaign['id']}", json={"subject": "x"}, headers=ws.headers)
    assert (late.status_code, late.json()) == (
        409,
        {"error": "Campaign is sending: it can only be changed while it is a draft or scheduled"},
    )
    assert (await get_campaign(client, ws, campaign["id"]))["subject"] == "New subject"
    again = await client.post(f"{BASE}/{campaign['id']}/send", headers=ws.headers)
    assert (again.status_code, again.json()) == (
        409,
        {"error": "Campaign is sending: only a draft or scheduled campaign can be sent"},
    )
    deleting = await client.delete(f"{BASE}/{campaign['id']}", headers=ws.headers)
    assert (deleting.status_code, deleting.json()) == (
        409,
        {"error": "Campaign is sending: cancel it before deleting it"},
    )
    assert await send_log_rows(db) == 1


async def test_delete_a_draft(client, ws):
    news = await make_list(client, ws)
    campaign = await make_campaign(client, ws, news)
    gone = await client.delete(f"{BASE}/{campaign['id']}", headers=ws.headers)
    assert (await ok(gone)) == {"success": True, "id": campaign["id"]}
    after = await client.get(f"{BASE}/{campaign['id']}", headers=ws.headers)
    assert (after.status_code, after.json()) == (404, {"error": "Campaign not found"})


async def test_send_freezes_the_audience_union_minus_excludes_each_contact_once(client, db, ws):
    news = await make_list(client, ws)
    other = await make_list(client, ws, "Other")
    vip = (
        await ok(await client.post("/api/v1/tags", json={"name": "VIP"}, headers=ws.headers), 201)
    )["tag"]["id"]
    both, only_news, only_tag, excluded = await make_contacts(
        client,
        ws,
        ["both@mail.example", "news@mail.example", "tag@mail.example", "out@mail.example"],
    )
    await make_contacts(client, ws, [], news)
    for contact in (both, only_news, excluded):
        await ok(
            await client.post(
                f"/api/v1/lists/{news}/contacts",
                json={"contact_ids": [contact]},
                headers=ws.headers,
            )
        )
    await ok(
        await client.post(
            f"/api/v1/lists/{other}/contacts", json={"contact_ids": [excluded]}, headers=ws.headers
        )
    )
    for contact in (both, only_tag):
        await ok(
            await client.post(
                f"/api/v1/contacts/{contact}/tags", json={"tag_id": vip}, headers=ws.headers
            ),
            201,
        )
    audience = {"list_ids": [news], "tag_ids": [vip], "exclude_list_ids": [other]}
    campaign = await make_campaign(client, ws, news, audience=audience)
    started = await send_campaign(client, ws, campaign["id"])
    assert started["stats"]["recipients"] == 3
    emails = sorted(r["email"] for r in await recipients(client, ws, campaign["id"]))
    assert emails == ["both@mail.example", "news@mail.example", "tag@mail.example"]


async def test_free_plan_reaches_only_confirmed_members(client, db, factory):
    ws = await factory.workspace("free")
    news = await make_list(client, ws)
    confirmed, _pending = await make_contacts(
        client, ws, ["yes@mail.example", "maybe@mail.example"], news
    )
    async with db.transaction() as session:
        await session.execute(
            update(ListMember).where(ListMember.contact_id == confirmed).values(status="confirmed")
        )
        await session.execute(
            update(ListMember)
            .where(ListMember.contact_id != confirmed)
            .values(status="unconfirmed")
        )
    campaign = await make_campaign(client, ws, news)
    started = await send_campaign(client, ws, campaign["id"])
    assert started["stats"]["recipients"] == 1
    [row] = await recipients(client, ws, campaign["id"])
    assert row["email"] == "yes@mail.example"


async def test_refusals_queue_nothing(client, db, factory, settings):
    ws = await factory.workspace("free")
    news = await make_list(client, ws)
    await make_contacts(client, ws, ["a@mail.example", "b@mail.example"], news)
    async with db.transaction() as session:
        await session.execute(update(ListMember).values(status="confirmed"))
    campaign = await make_campaign(client, ws, news)
    url = f"{BASE}/{campaign['id']}/send"

    # The monthly allowance (Free: 2,000) has room for one.
    async with db.transaction() as session:
        session.add(SendMeter(account_id=ws.account_id, period=month_period(utcnow()), count=1999))
    refused = await client.post(url, headers=ws.headers)
    assert (refused.status_code, refused.json()) == (
        403,
        {"error": "Monthly email limit reached (2,000 on the Free plan)."},
    )
    scheduled = await client.post(
        f"{BASE}/{campaign['id']}/schedule", json={"send_at": future(hours=1)}, headers=ws.headers
    )
    assert scheduled.status_code == 403
    async with db.transaction() as session:
        await session.execute(update(SendMeter).values(count=0))

    # Paused.
    await ok(await client.post("/api/v1/sending/pause", headers=ws.headers))
    paused = await client.post(url, headers=ws.headers)
    assert paused.status_code == 403
    assert paused.json()["error"].startswith("Sending is paused for this account")
    await ok(await client.post("/api/v1/sending/resume", headers=ws.headers))

    # A real relay is configured and the sender's domain is not verified.
    settings.smtp_url = "smtp://127.0.0.1:9?starttls=never"
    unverified = await client.post(url, headers=ws.headers)
    assert unverified.status_code == 422
    assert unverified.json()["error"] == (
        "Sending is not configured: shop.example is not a verified sending domain of this "
        "workspace. Add it with POST /api/v1/domains, publish its DNS records, then "
        "POST /api/v1/domains/{id}/verify."
    )
    await verified_domain(client, db, ws)
    settings.smtp_url = None

    # Nobody subscribed in the audience.
    empty_list = await make_list(client, ws, "Empty")
    await ok(
        await client.patch(
            f"{BASE}/{campaign['id']}",
            json={"audience": {"list_ids": [empty_list]}},
            headers=ws.headers,
        )
    )
    empty = await client.post(url, headers=ws.headers)
    assert (empty.status_code, empty.json()) == (
        422,
        {"error": "The audience has no subscribed contact: nothing would be sent"},
    )
    assert await send_log_rows(db) == 0
    assert (await get_campaign(client, ws, campaign["id"]))["status"] == "draft"

    # A key without campaigns:send.
    writer = await factory.key(ws, ["campaigns:read", "campaigns:write"])
    forbidden = await client.post(url, headers=writer)
    assert forbidden.status_code == 403
    assert forbidden.json() == {"error": "Forbidden: campaigns:send permission required"}


@pytest.mark.parametrize(
    ("send_at", "message"),
    [
        (None, "send_at is required"),
        ("tomorrow", "send_at must be an ISO 8601 timestamp"),
        (12, "send_at must be an ISO 8601 timestamp"),
        ("2030-01-01T09:00:00", "send_at must include a time zone (e.g. 2026-12-01T09:00:00Z)"),
        ("2020-01-01T09:00:00Z", "send_at must be in the future"),
        ("far", "send_at must be within a year"),
    ],
)
async def test_schedule_needs_a_future_time_within_a_year(client, ws, send_at, message):
    news = await make_list(client, ws)
    await make_contacts(client, ws, ["a@mail.example"], news)
    campaign = await make_campaign(client, ws, news)
    if send_at == "far":
        send_at = future(days=400)
    response = await client.post(
        f"{BASE}/{campaign['id']}/schedule", json={"send_at": send_at}, headers=ws.headers
    )
    assert (response.status_code, response.json()) == (400, {"error": message})
    assert (await get_campaign(client, ws, campaign["id"]))["status"] == "draft"


async def test_schedule_starts_when_due_and_cancel_returns_it_to_draft(client, db, ws, driver):
    news = await make_list(client, ws)
    await make_contacts(client, ws, ["a@mail.example", "b@mail.example"], news)
    campaign = await make_campaign(client, ws, news)
    when = future(hours=2)
    scheduled = await client.post(
        f"{BASE}/{campaign['id']}/schedule", json={"send_at": when}, headers=ws.headers
    )
    body = (await ok(scheduled))["campaign"]
    assert body["status"] == "scheduled"
    assert body["scheduled_at"].startswith(when[:16])
    deleting = await client.delete(f"{BASE}/{campaign['id']}", headers=ws.headers)
    assert deleting.status_code == 409
    # Still editable while scheduled.
    await ok(
        await client.patch(f"{BASE}/{campaign['id']}", json={"name": "Renamed"}, headers=ws.headers)
    )

    cancelled = await ok(await client.post(f"{BASE}/{campaign['id']}/cancel", headers=ws.headers))
    assert (cancelled["campaign"]["status"], cancelled["campaign"]["scheduled_at"]) == (
        "draft",
        None,
    )

    await ok(
        await client.post(
            f"{BASE}/{campaign['id']}/schedule",
            json={"send_at": future(hours=1)},
            headers=ws.headers,
        )
    )
    assert await driver.start_scheduled() == 0  # not due yet
    from mailroom.models import Campaign

    async with db.transaction() as session:
        await session.execute(update(Campaign).values(scheduled_at=utcnow() - timedelta(seconds=1)))
    assert await driver.start_scheduled() == 1
    started = await get_campaign(client, ws, campaign["id"])
    assert (started["status"], started["stats"]["recipients"]) == ("sending", 2)
    await driver.drain()
    assert (await get_campaign(client, ws, campaign["id"]))["status"] == "sent"
    outbox = list((driver.settings.data_dir / "outbox").rglob("*.eml"))
    assert len(outbox) == 2


async def test_a_scheduled_campaign_that_cannot_start_returns_to_draft_saying_why(
    client, db, ws, driver
):
    news = await make_list(client, ws)
    [contact] = await make_contacts(client, ws, ["a@mail.example"], news)
    campaign = await make_campaign(client, ws, news)
    await ok(
        await client.post(
            f"{BASE}/{campaign['id']}/schedule",
            json={"send_at": future(hours=1)},
            headers=ws.headers,
        )
    )
    await ok(await client.delete(f"/api/v1/contacts/{contact}", headers=ws.headers))
    from mailroom.models import Campaign

    async with db.transaction() as session:
        await session.execute(update(Campaign).values(scheduled_at=utcnow() - timedelta(seconds=1)))
    assert await driver.start_scheduled() == 0
    after = await get_campaign(client, ws, campaign["id"])
    assert after["status"] == "draft"
    assert after["error"] == "The audience has no subscribed contact: nothing would be sent"


async def test_duplicate_makes_a_numbered_draft_copy(client, db, ws):
    news = await make_list(client, ws)
    await make_contacts(client, ws, ["a@mail.example"], news)
    campaign = await make_campaign(client, ws, news, track_opens=False)
    await send_campaign(client, ws, campaign["id"])
    first = (
        await ok(await client.post(f"{BASE}/{campaign['id']}/duplicate", headers=ws.headers), 201)
    )["campaign"]
    assert first["name"] == "Copy of Spring sale"
    assert first["status"] == "draft"
    assert first["stats"]["recipients"] == 0
    assert (first["subject"], first["html_content"], first["audience"]["list_ids"]) == (
        campaign["subject"],
        campaign["html_content"],
        [news],
    )
    assert first["track_opens"] is False
    second = (
        await ok(await client.post(f"{BASE}/{campaign['id']}/duplicate", headers=ws.headers), 201)
    )["campaign"]
    assert second["name"] == "Copy of Spring sale (2)"


async def test_test_send_prefixes_the_subject_and_counts_against_the_month(
    client, db, ws, settings
):
    news = await make_list(client, ws)
    await make_contacts(client, ws, ["jane@mail.example"], news, first_name="Jane")
    campaign = await make_campaign(client, ws, news)
    url = f"{BASE}/{campaign['id']}/test"
    sent = await client.post(
        url, json={"emails": ["jane@mail.example", "boss@corp.example"]}, headers=ws.headers
    )
    assert (await ok(sent)) == {"sent": 2}
    files = sorted((settings.data_dir / "outbox").rglob("*.eml"))
    assert len(files) == 2
    subjects = sorted(
        str(BytesParser(policy=policy.default).parsebytes(f.read_bytes())["Subject"]) for f in files
    )
    assert subjects == ["[Test] Spring sale, Jane", "[Test] Spring sale, friend"]
    sending = (await ok(await client.get("/api/v1/sending", headers=ws.headers)))["sending"]
    assert sending["sent_this_month"] == 2
    assert (await get_campaign(client, ws, campaign["id"]))["status"] == "draft"

    for body, message in [
        ({}, "emails is required"),
        ({"emails": []}, "emails must be an array of 1-5 addresses"),
        ({"emails": [f"a{i}@x.example" for i in range(6)]}, "emails may have at most 5 addresses"),
    ]:
        refused = await client.post(url, json=body, headers=ws.headers)
        assert (refused.status_code, refused.json()) == (400, {"error": message})
    bad = await client.post(url, json={"emails": ["nope"]}, headers=ws.headers)
    assert bad.status_code == 400 and bad.json()["error"].startswith("emails[0]")


async def test_recipients_page_shape_and_paging(client, db, ws):
    news = await make_list(client, ws)
    await make_contacts(client, ws, [f"r{i}@mail.example" for i in range(3)], news)
    campaign = await make_campaign(client, ws, news)
    await send_campaign(client, ws, campaign["id"])
    page = await ok(
        await client.get(
            f"{BASE}/{campaign['id']}/recipients", params={"limit": 2}, headers=ws.headers
        )
    )
    assert page["pagination"]["total"] == 3
    assert len(page["recipients"]) == 2
    assert set(page["recipients"][0]) == {
        "contact_id",
        "email",
        "status",
        "sent_at",
        "message_id",
        "error",
    }
    missing = await client.get(f"{BASE}/nope/recipients", headers=ws.headers)
    assert (missing.status_code, missing.json()) == (404, {"error": "Campaign not found"})
