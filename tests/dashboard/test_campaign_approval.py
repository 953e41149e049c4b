"""The campaign page of a campaign an assistant asked to send: what it asked (send now or at a
time), which assistant for whom, the audience count and a preview; an admin approves (sent or
scheduled as asked, by the engine, every check made again) or rejects with a reason (a draft
again, the reason shown to people and to the assistant); members see it but cannot decide;
each decision is in the audit log."""

from __future__ import annotations

from contextlib import aclosing
from datetime import timedelta

from sqlalchemy import update

from mailroom.core.clock import utcnow
from mailroom.models import Campaign
from tests.assistants.connect import connect_assistant
from tests.dashboard.helpers import csrf_of, signed_in
from tests.sending.conftest import driver  # noqa: F401
from tests.sending.helpers import get_campaign, make_campaign, make_contacts, make_list, ok

BASE = "/api/v1/campaigns"


async def held_campaign(client, ws, *, schedule_at: str | None = None) -> tuple[str, str]:
    """A campaign to three contacts an assistant asked to send (or schedule): (its id, the
    assistant's id)."""
    news = await make_list(client, ws)
    await make_contacts(client, ws, [f"r{n}@mail.example" for n in range(3)], news)
    campaign = await make_campaign(client, ws, news)
    agent, assistant_id = await connect_assistant(client, ws)
    if schedule_at:
        asked = await client.post(
            f"{BASE}/{campaign['id']}/schedule", json={"send_at": schedule_at}, headers=agent
        )
    else:
        asked = await client.post(f"{BASE}/{campaign['id']}/send", headers=agent)
    assert (await ok(asked, 202))["campaign"]["status"] == "awaiting_approval"
    return campaign["id"], assistant_id


async def audit(client, ws, operation: str) -> list[dict]:
    log = await ok(await client.get("/api/v1/account/audit-log", headers=ws.headers))
    return [e for e in log["entries"] if e["operation"] == operation]


async def sent_to(client, ws, campaign_id: str) -> list[str]:
    page = await ok(await client.get(f"{BASE}/{campaign_id}/recipients", headers=ws.headers))
    return sorted(r["email"] for r in page["recipients"] if r["status"] == "sent")


async def test_an_admin_approves_a_held_send_and_the_engine_sends_it(
    app,
    client,
    db,
    settings,
    ws,
    driver,  # noqa: F811
):
    campaign_id, _ = await held_campaign(client, ws)
    page_url = f"/app/campaigns/{campaign_id}"
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    admin = await signed_in(app, db, settings, ws, "ada@shop.example", role="admin")
    async with aclosing(member), aclosing(admin):
        listed = await member.get("/app/campaigns")
        assert ">awaiting approval</span>" in listed.text
        seen = await member.get(page_url)
        assert seen.status_code == 200
        text = seen.text
        assert "Waiting for an admin's approval" in text
        assert (
            "The assistant <strong>Drafting agent</strong>, connected with the API key, asked on"
            in text
        )
        assert "<strong>send it now</strong>" in text
        assert "<strong>3</strong> subscribed contacts would receive it now." in text
        assert f'src="/app/campaigns/{campaign_id}/preview"' in text
        assert "Only a workspace admin can approve or reject it." in text
        assert "/approve" not in text and "/reject" not in text
        preview = await member.get(f"/app/campaigns/{campaign_id}/preview")
        assert preview.status_code == 200 and "spring sale" in preview.text

        refused = await member.post(f"{page_url}/approve", data={"csrf": csrf_of(text)})
        assert refused.status_code == 403 and "Admins only" in refused.text
        assert (await get_campaign(client, ws, campaign_id))["status"] == "awaiting_approval"

        review = await admin.get(page_url)
        assert f'action="/app/campaigns/{campaign_id}/approve"' in review.text
        assert "Approve: send now to 3 contacts" in review.text
        assert f'action="/app/campaigns/{campaign_id}/reject"' in review.text
        approved = await admin.post(f"{page_url}/approve", data={"csrf": csrf_of(review.text)})
        assert (approved.status_code, approved.headers["location"]) == (303, page_url)
        after = await admin.get(page_url)
        assert "Approved: sending has started." in after.text

        stored = await get_campaign(client, ws, campaign_id)
        assert stored["status"] == "sending" and stored["stats"]["recipients"] == 3
        assert (stored["approval"]["status"], stored["approval"]["decided_by"]) == (
            "approved",
            "ada@shop.example",
        )
        assert stored["approval"]["decided_at"] is not None
        await driver.drain()
        assert await sent_to(client, ws, campaign_id) == [
            "r0@mail.example",
            "r1@mail.example",
            "r2@mail.example",
        ]

        [entry] = await audit(client, ws, "approve_campaign")
        assert (entry["target_id"], entry["status"], entry["key_id"], entry["assistant_id"]) == (
            campaign_id,
            200,
            None,
            None,
        )
        assert entry["person_id"] is not None

        again = await admin.post(f"{page_url}/approve", data={"csrf": csrf_of(review.text)})
        assert again.status_code == 303
        assert (
            "Campaign is sent: only a campaign awaiting approval can be approved"
            in (await admin.get(page_url)).text
        )
        assert len(await audit(client, ws, "approve_campaign")) == 1


async def test_a_rejection_returns_it_to_draft_with_the_reason(app, client, db, settings, ws):
    campaign_id, assistant_id = await held_campaign(client, ws)
    page_url = f"/app/campaigns/{campaign_id}"
    admin = await signed_in(app, db, settings, ws, "ada@shop.example", role="admin")
    async with aclosing(admin):
        token = csrf_of((await admin.get(page_url)).text)
        blank = await admin.post(f"{page_url}/reject", data={"csrf": token, "reason": "  "})
        assert blank.status_code == 303
        assert "Give a reason: the assistant reads it to know what to change" in (
            (await admin.get(page_url)).text
        )
        assert (await get_campaign(client, ws, campaign_id))["status"] == "awaiting_approval"

        reason = "Wrong list: this goes to the VIP segment only"
        rejected = await admin.post(f"{page_url}/reject", data={"csrf": token, "reason": reason})
        assert rejected.status_code == 303
        editor = await admin.get(page_url)
        assert "Rejected: the campaign is a draft again, with your reason." in editor.text
        assert "ada@shop.example rejected an assistant's request to send it now" in editor.text
        assert f"“{reason}”" in editor.text
        assert 'action="/app/campaigns/save"' in editor.text  # the editor again

    stored = await get_campaign(client, ws, campaign_id)
    assert stored["status"] == "draft" and stored["stats"]["recipients"] == 0
    approval = stored["approval"]
    assert (approval["status"], approval["rejected_reason"], approval["decided_by"]) == (
        "rejected",
        reason,
        "ada@shop.example",
    )
    assert approval["requested_by_assistant_id"] == assistant_id
    [entry] = await audit(client, ws, "reject_campaign")
    assert (entry["target_id"], entry["status"]) == (campaign_id, 200)
    assert entry["person_id"] is not None and entry["key_id"] is None


async def test_a_held_schedule_approved_starts_at_the_time_asked(
    app,
    client,
    db,
    settings,
    ws,
    driver,  # noqa: F811
):
    moment = (utcnow() + timedelta(days=2)).replace(second=0, microsecond=0)
    asked = moment.isoformat().replace("+00:00", "Z")
    campaign_id, _ = await held_campaign(client, ws, schedule_at=asked)
    page_url = f"/app/campaigns/{campaign_id}"
    shown = moment.strftime("%Y-%m-%d %H:%M UTC")
    admin = await signed_in(app, db, settings, ws, "ada@shop.example", role="admin")
    async with aclosing(admin):
        review = await admin.get(page_url)
        assert f"<strong>schedule it for {shown}</strong>" in review.text
        assert f"Approve: schedule for {shown}" in review.text
        approved = await admin.post(f"{page_url}/approve", data={"csrf": csrf_of(review.text)})
        assert approved.status_code == 303
        assert f"Approved: scheduled for {shown}." in (await admin.get(page_url)).text
    stored = await get_campaign(client, ws, campaign_id)
    assert (stored["status"], stored["scheduled_at"]) == ("scheduled", asked)
    assert stored["approval"]["status"] == "approved"
    # Not before its time; when it comes, the worker starts it and the engine sends it.
    assert await driver.start_scheduled() == 0
    async with db.transaction() as session:
        await session.execute(
            update(Campaign)
            .where(Campaign.id == campaign_id)
            .values(scheduled_at=utcnow() - timedelta(seconds=1))
        )
    assert await driver.start_scheduled() == 1
    await driver.drain()
    assert len(await sent_to(client, ws, campaign_id)) == 3


async def test_every_check_is_made_again_at_approval(app, client, db, settings, ws):
    campaign_id, _ = await held_campaign(client, ws)
    page_url = f"/app/campaigns/{campaign_id}"
    admin = await signed_in(app, db, settings, ws, "ada@shop.example", role="admin")
    async with aclosing(admin):
        token = csrf_of((await admin.get(page_url)).text)
        await ok(await client.post("/api/v1/sending/pause", headers=ws.headers))
        paused = await admin.post(f"{page_url}/approve", data={"csrf": token})
        assert paused.status_code == 303
        assert "Sending is paused for this account" in (await admin.get(page_url)).text
        stored = await get_campaign(client, ws, campaign_id)
        assert (stored["status"], stored["approval"]["status"]) == ("awaiting_approval", "pending")
        assert stored["stats"]["recipients"] == 0
        await ok(await client.post("/api/v1/sending/resume", headers=ws.headers))

        # A schedule whose time passed while it waited is not sent at some other time.
        later = (utcnow() + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
        other_id, _ = await held_campaign_named(client, ws, "Later", later)
        async with db.transaction() as session:
            await session.execute(
                update(Campaign)
                .where(Campaign.id == other_id)
                .values(approval_send_at=utcnow() - timedelta(minutes=5))
            )
        late = await admin.post(f"/app/campaigns/{other_id}/approve", data={"csrf": token})
        assert late.status_code == 303
        assert "has passed: reject the request, then schedule the campaign again" in (
            (await admin.get(f"/app/campaigns/{other_id}")).text
        )
        assert (await get_campaign(client, ws, other_id))["status"] == "awaiting_approval"
    assert await audit(client, ws, "approve_campaign") == []


async def held_campaign_named(client, ws, name: str, schedule_at: str) -> tuple[str, str]:
    lists = await ok(await client.get("/api/v1/lists", headers=ws.headers))
    campaign = await make_campaign(client, ws, lists["lists"][0]["id"], name=name)
    agent, assistant_id = await connect_assistant(client, ws)
    asked = await client.post(
        f"{BASE}/{campaign['id']}/schedule", json={"send_at": schedule_at}, headers=agent
    )
    await ok(asked, 202)
    return campaign["id"], assistant_id


async def test_keys_and_assistants_cannot_approve_in_the_dashboard(client, ws):
    campaign_id, _ = await held_campaign(client, ws)
    agent, _ = await connect_assistant(client, ws)
    for headers in (ws.headers, agent):
        tried = await client.post(
            f"/app/campaigns/{campaign_id}/approve", headers=headers, data={"csrf": "x"}
        )
        assert tried.status_code == 303
        assert tried.headers["location"].startswith("/app/sign-in")
    assert (await get_campaign(client, ws, campaign_id))["status"] == "awaiting_approval"
