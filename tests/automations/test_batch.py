"""A batch of runs moves together (perform.group): each group's step is written for all its
runs at once, with every rule a single run meets (suppression, the month's allowance, the
hourly ceiling, a pause), and a batch that fails unexpectedly is worked again run by run so
one bad run fails alone."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, func, select, update

from mailroom.automations import perform
from mailroom.core.clock import utcnow
from mailroom.core.plans import get_plan
from mailroom.models import (
    AutomationRun,
    Contact,
    ContactTag,
    SendLog,
    SendMeter,
    Suppression,
)
from mailroom.sending import limits
from mailroom.tags import service as tags_service
from tests.automations.helpers import (
    activate,
    make_automation,
    make_tag,
    run_due,
    runs_of,
    skip_waits,
    tags_of,
)
from tests.sending.conftest import verified_domain
from tests.sending.helpers import events_of, make_contacts, ok


async def _mailing_automation(client, db, ws, *, steps_after=()):
    """A manual automation: wait, send an email, tag `Welcomed`, then `steps_after`."""
    await verified_domain(client, db, ws)
    await ok(
        await client.patch(
            "/api/v1/sending", json={"from_email": "news@shop.example"}, headers=ws.headers
        )
    )
    template = await ok(
        await client.post(
            "/api/v1/templates",
            json={"name": "Hello", "subject": "Hi", "html_content": "<p>Hi</p>"},
            headers=ws.headers,
        ),
        201,
    )
    welcomed = await make_tag(client, ws, "Welcomed")
    automation = await make_automation(
        client,
        ws,
        trigger={"type": "manual"},
        steps=[
            {"id": "pause", "type": "wait", "seconds": 3600},
            {"id": "mail", "type": "send_email", "template_id": template["template"]["id"]},
            {"id": "tag", "type": "add_tag", "tag_id": welcomed},
            *steps_after,
        ],
    )
    await activate(client, ws, automation["id"])
    return automation, welcomed


async def _enrol(client, ws, automation_id, ids):
    url = f"/api/v1/automations/{automation_id}/enrol"
    assert await ok(await client.post(url, json={"contact_ids": ids}, headers=ws.headers)) == {
        "enrolled": len(ids)
    }


async def _by_contact(client, ws, automation_id):
    return {run["contact_id"]: run for run in await runs_of(client, ws, automation_id)}


async def _queued(db, workspace_id):
    async with db.session() as session:
        rows = await session.execute(
            select(SendLog.contact_id, SendLog.kind).where(SendLog.workspace_id == workspace_id)
        )
        return sorted(rows.all())


async def _month_used(db, account_id):
    async with db.session() as session:
        found = await session.scalar(
            select(SendMeter.count).where(
                SendMeter.account_id == account_id,
                SendMeter.period == limits.month_period(utcnow()),
            )
        )
        return int(found or 0)


async def test_a_batch_mails_tags_and_branches_each_run_as_alone(client, db, ws, settings):
    vip = await make_tag(client, ws, "VIP")
    automation, welcomed = await _mailing_automation(
        client,
        ws=ws,
        db=db,
        steps_after=[
            {
                "id": "rich",
                "type": "condition",
                "rules": {"conditions": [{"field": "email", "op": "contains", "value": "vip"}]},
                "yes": [{"id": "gold", "type": "add_tag", "tag_id": vip}],
                "no": [{"id": "bye", "type": "exit"}],
            }
        ],
    )
    emails = ["ann@mail.example", "vip.bob@mail.example", "cy@mail.example", "dee@mail.example"]
    ann, bob, cy, dee = await make_contacts(client, ws, emails)
    # Cy has the tag already; Dee's address is suppressed after she entered.
    await ok(
        await client.post(
            f"/api/v1/contacts/{cy}/tags", json={"tag_id": welcomed}, headers=ws.headers
        ),
        201,
    )
    await _enrol(client, ws, automation["id"], [ann, bob, cy, dee])
    assert await run_due(db, settings) == 4
    async with db.transaction() as session:
        hashed = await session.scalar(select(Contact.email_hash).where(Contact.id == dee))
        session.add(Suppression(workspace_id=ws.workspace_id, email_hash=hashed, reason="bounced"))
    await skip_waits(db)
    assert await run_due(db, settings) == 4  # one batch

    runs = await _by_contact(client, ws, automation["id"])
    assert {c: runs[c]["status"] for c in runs} == {
        ann: "exited",
        bob: "completed",
        cy: "exited",
        dee: "exited",
    }
    assert [h["step_id"] for h in runs[bob]["history"]] == [
        "pause",
        "pause",
        "mail",
        "tag",
        "rich",
        "gold",
        None,
    ]
    assert [h["outcome"] for h in runs[ann]["history"]][-3:] == ["done", "no", "exit step"]
    assert runs[bob]["history"][2]["outcome"].startswith("email queued (")
    assert runs[dee]["history"][-1] == {
        "step_id": "mail",
        "at": runs[dee]["history"][-1]["at"],
        "outcome": "The address is on the suppression list (bounced) and cannot be mailed",
    }
    assert await _queued(db, ws.workspace_id) == sorted((c, "automation") for c in (ann, bob, cy))
    assert await _month_used(db, ws.account_id) == 3
    for contact in (ann, bob, cy):
        assert "Welcomed" in await tags_of(client, ws, contact)
    assert await tags_of(client, ws, bob) == ["VIP", "Welcomed"]
    assert await tags_of(client, ws, dee) == []
    # Each new tag has its event (the test workspace listens to all), as one by one: Cy's
    # came from the API before; the batch added none for her.
    tagged = await events_of(db, ws.workspace_id, "contact.tag_added")
    assert sorted(e.data["contact"]["id"] for e in tagged) == sorted([ann, bob, bob, cy])


async def test_a_tag_added_by_a_batch_enrols_its_automation(client, db, ws, settings):
    automation, welcomed = await _mailing_automation(client, db, ws)
    follow = await make_automation(
        client,
        ws,
        name="Follow-up",
        trigger={"type": "tag_added", "tag_id": welcomed},
        steps=[{"type": "wait", "seconds": 60}],
    )
    await activate(client, ws, follow["id"])
    ids = await make_contacts(client, ws, [f"p{i}@mail.example" for i in range(5)])
    await _enrol(client, ws, automation["id"], ids)
    await run_due(db, settings)
    await skip_waits(db)
    await run_due(db, settings)
    assert sorted(r["contact_id"] for r in await runs_of(client, ws, follow["id"])) == sorted(ids)


async def test_when_the_month_cannot_take_a_whole_batch_each_run_takes_what_is_left(
    client, db, ws, settings
):
    automation, _ = await _mailing_automation(client, db, ws)
    ids = await make_contacts(client, ws, [f"p{i}@mail.example" for i in range(4)])
    await _enrol(client, ws, automation["id"], ids)
    await run_due(db, settings)
    allowance = get_plan(ws.plan).emails_per_month
    async with db.transaction() as session:
        await limits.add_month(session, ws.account_id, allowance - 2, utcnow())
    await skip_waits(db)
    await run_due(db, settings)

    runs = await runs_of(client, ws, automation["id"])
    assert sorted(r["status"] for r in runs) == ["completed", "completed", "failed", "failed"]
    failed = [r for r in runs if r["status"] == "failed"]
    assert {r["history"][-1]["outcome"] for r in failed} == {
        f"failed: Monthly email limit reached ({allowance:,} on the "
        f"{get_plan(ws.plan).label} plan)."
    }
    assert len(await _queued(db, ws.workspace_id)) == 2
    assert await _month_used(db, ws.account_id) == allowance


async def test_the_hourly_ceiling_holds_a_batch_without_taking_the_month(client, db, ws, settings):
    automation, _ = await _mailing_automation(client, db, ws)
    ids = await make_contacts(client, ws, [f"p{i}@mail.example" for i in range(3)])
    await _enrol(client, ws, automation["id"], ids)
    await run_due(db, settings)
    now = utcnow()
    async with db.transaction() as session:
        await limits.count_sent(
            session,
            {ws.account_id: get_plan(ws.plan).hourly_send_ceiling},  # type: ignore[arg-type]
            now,
        )
    await skip_waits(db)
    await run_due(db, settings)

    runs = await runs_of(client, ws, automation["id"])
    assert [r["status"] for r in runs] == ["active"] * 3
    assert {r["step_id"] for r in runs} == {"mail"}
    for run in runs:
        later = datetime.fromisoformat(run["next_run_at"].replace("Z", "+00:00"))
        assert later > now + timedelta(minutes=4)
    assert await _queued(db, ws.workspace_id) == []
    assert await _month_used(db, ws.account_id) == 0


async def test_a_paused_account_holds_the_batch(client, db, ws, settings):
    automation, _ = await _mailing_automation(client, db, ws)
    ids = await make_contacts(client, ws, [f"p{i}@mail.example" for i in range(3)])
    await _enrol(client, ws, automation["id"], ids)
    await run_due(db, settings)
    await ok(await client.post("/api/v1/sending/pause", headers=ws.headers))
    await skip_waits(db)
    await run_due(db, settings)
    runs = await runs_of(client, ws, automation["id"])
    assert [(r["status"], r["step_id"]) for r in runs] == [("active", "mail")] * 3
    assert await _queued(db, ws.workspace_id) == []


async def test_a_batch_that_fails_is_worked_run_by_run_and_only_the_bad_run_fails(
    client, db, ws, settings, monkeypatch
):
    automation, welcomed = await _mailing_automation(client, db, ws)
    ids = await make_contacts(client, ws, [f"p{i}@mail.example" for i in range(4)])
    bad = ids[2]
    await _enrol(client, ws, automation["id"], ids)
    await run_due(db, settings)
    real = tags_service.attach_many

    async def attach_many(ctx, tag, tagged):
        if any(contact.id == bad for contact in tagged):
            raise RuntimeError("boom")
        await real(ctx, tag, tagged)

    monkeypatch.setattr(tags_service, "attach_many", attach_many)
    await skip_waits(db)
    await run_due(db, settings)

    runs = await _by_contact(client, ws, automation["id"])
    assert {c: r["status"] for c, r in runs.items()} == {
        c: ("failed" if c == bad else "completed") for c in ids
    }
    # Run by run, each step in a savepoint (as the grouped pass does its rarer steps): the
    # bad run's email step stands, its tag step failed. The failed grouped attempt left
    # nothing behind: one email per run.
    assert [(h["step_id"], h["outcome"]) for h in runs[bad]["history"]][-2:] == [
        ("mail", runs[bad]["history"][-2]["outcome"]),
        ("tag", "failed: internal error"),
    ]
    assert runs[bad]["history"][-2]["outcome"].startswith("email queued (")
    assert await _queued(db, ws.workspace_id) == sorted((c, "automation") for c in ids)
    assert await _month_used(db, ws.account_id) == 4
    async with db.session() as session:
        tagged = await session.scalar(select(func.count()).where(ContactTag.tag_id == welcomed))
    assert tagged == 3
    [failed] = await events_of(db, ws.workspace_id, "automation.failed")
    assert failed.data["reason"] == "internal error"
    assert failed.data["step"]["id"] == "tag"


async def test_a_run_deleted_while_its_batch_works_is_not_written_and_the_rest_are(
    client, db, ws, settings, monkeypatch, caplog
):
    automation, _ = await _mailing_automation(client, db, ws)
    ids = await make_contacts(client, ws, [f"p{i}@mail.example" for i in range(3)])
    await _enrol(client, ws, automation["id"], ids)
    await run_due(db, settings)
    gone = ids[1]
    real = perform.group

    async def group(ctx, *args, **kwargs):
        # As if its automation's deletion took it meanwhile (on PostgreSQL, another
        # transaction's; here the batch's own).
        await ctx.session.execute(delete(AutomationRun).where(AutomationRun.contact_id == gone))
        return await real(ctx, *args, **kwargs)

    monkeypatch.setattr(perform, "group", group)
    await skip_waits(db)
    await run_due(db, settings)

    runs = await _by_contact(client, ws, automation["id"])
    assert {c: r["status"] for c, r in runs.items()} == {c: "completed" for c in ids if c != gone}
    assert "working them one by one" not in caplog.text


async def test_a_run_that_ends_in_a_batch_lets_its_contact_enter_again_in_the_same_batch(
    client, db, ws, settings
):
    """A re-entry automation's run completes, and a later run of the same batch tags its
    contact with the trigger's tag: the contact enters again, as run by run."""
    trigger = await make_tag(client, ws, "Trigger")
    again = await make_automation(
        client,
        ws,
        name="Again",
        trigger={"type": "tag_added", "tag_id": trigger},
        steps=[{"type": "wait", "seconds": 60}],
        allow_reentry=True,
    )
    await activate(client, ws, again["id"])
    tagger = await make_automation(
        client,
        ws,
        name="Tagger",
        trigger={"type": "manual"},
        steps=[{"type": "wait", "seconds": 60}, {"type": "add_tag", "tag_id": trigger}],
    )
    await activate(client, ws, tagger["id"])
    [jane] = await make_contacts(client, ws, ["jane@mail.example"])
    url = f"/api/v1/contacts/{jane}/tags"
    await ok(await client.post(url, json={"tag_id": trigger}, headers=ws.headers), 201)
    await ok(await client.delete(f"{url}/{trigger}", headers=ws.headers))
    await _enrol(client, ws, tagger["id"], [jane])
    await run_due(db, settings)  # both runs at their waits
    await skip_waits(db)
    async with db.transaction() as session:  # "Again" first in the batch
        await session.execute(
            update(AutomationRun)
            .where(AutomationRun.automation_id == again["id"])
            .values(run_at=utcnow() - timedelta(seconds=5))
        )
    await run_due(db, settings, rounds=1)
    # Entered again (the new run starts on the next tick).
    assert sorted(r["status"] for r in await runs_of(client, ws, again["id"])) == [
        "active",
        "completed",
    ]


async def test_a_suppressed_contact_exits_even_when_the_hour_holds_the_rest(
    client, db, ws, settings
):
    automation, _ = await _mailing_automation(client, db, ws)
    ann, bob = await make_contacts(client, ws, ["ann@mail.example", "bob@mail.example"])
    await _enrol(client, ws, automation["id"], [ann, bob])
    await run_due(db, settings)
    async with db.transaction() as session:
        hashed = await session.scalar(select(Contact.email_hash).where(Contact.id == bob))
        session.add(Suppression(workspace_id=ws.workspace_id, email_hash=hashed, reason="bounced"))
        await limits.count_sent(
            session,
            {ws.account_id: get_plan(ws.plan).hourly_send_ceiling},  # type: ignore[arg-type]
            utcnow(),
        )
    await skip_waits(db)
    await run_due(db, settings)
    runs = await _by_contact(client, ws, automation["id"])
    assert (runs[ann]["status"], runs[ann]["step_id"]) == ("active", "mail")
    assert runs[bob]["status"] == "exited"
    assert runs[bob]["history"][-1]["outcome"] == (
        "The address is on the suppression list (bounced) and cannot be mailed"
    )
