"""`date_anniversary` automations: contacts enter on the day their date field comes round
(plus or minus `days`), at the trigger's time in the automation's time zone, once per day
however many workers look, and again the next year; 29 February counts on 1 March."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime

from sqlalchemy import select

from mailroom.accounts import service as accounts
from mailroom.automations import anniversaries
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.models import Automation
from mailroom.worker import WorkerContext
from tests.automations.helpers import activate, create_contact, make_automation, make_tag, run_due
from tests.sending.helpers import ok


async def _runs(client, ws, automation_id):
    page = await ok(
        await client.get(f"/api/v1/automations/{automation_id}/runs", headers=ws.headers)
    )
    return sorted(r["contact_id"] for r in page["runs"])


async def _birthday_field(client, ws):
    await ok(
        await client.post(
            "/api/v1/custom-fields", json={"key": "birthday", "type": "date"}, headers=ws.headers
        ),
        201,
    )


def test_the_due_day_follows_the_time_zone_and_the_hour():
    trigger = {"time": "09:00"}
    early = datetime(2026, 6, 10, 6, 30, tzinfo=UTC)  # 08:30 in Paris: not yet
    late = datetime(2026, 6, 10, 7, 30, tzinfo=UTC)  # 09:30 in Paris
    assert anniversaries.latest_due_day(trigger, "Europe/Paris", early) == date(2026, 6, 9)
    assert anniversaries.latest_due_day(trigger, "Europe/Paris", late) == date(2026, 6, 10)
    # 23:30 UTC on the 10th is already the 11th, 08:30, in Tokyo: the 10th is the last due day.
    night = datetime(2026, 6, 10, 23, 30, tzinfo=UTC)
    assert anniversaries.latest_due_day(trigger, "Asia/Tokyo", night) == date(2026, 6, 10)


def test_days_are_worked_once_and_a_long_outage_catches_up_a_week():
    latest = date(2026, 6, 20)
    assert anniversaries.days_to_work(None, latest) == [latest]
    assert anniversaries.days_to_work("2026-06-20", latest) == []
    assert anniversaries.days_to_work("2026-06-18", latest) == [date(2026, 6, 19), latest]
    caught = anniversaries.days_to_work("2026-01-01", latest)
    assert caught[0] == date(2026, 6, 13) and caught[-1] == latest and len(caught) == 8


async def test_contacts_enter_on_their_day_once_and_again_next_year(client, db, ws, settings):
    await _birthday_field(client, ws)
    today = utcnow().date()
    tomorrow = date.fromordinal(today.toordinal() + 1)
    ids = {
        "today": await create_contact(
            client,
            ws,
            "a@mail.example",
            custom_fields={
                "birthday": today.replace(year=1990).isoformat()
                if not (today.month == 2 and today.day == 29)
                else "1992-02-29"
            },
        ),
        "tomorrow": await create_contact(
            client,
            ws,
            "b@mail.example",
            custom_fields={
                "birthday": f"{tomorrow.day:02d}/{tomorrow.month:02d}/1985"
                if not (tomorrow.month == 2 and tomorrow.day == 29)
                else "29/02/1988"
            },
        ),
        "none": await create_contact(client, ws, "c@mail.example"),
    }
    gone = await create_contact(
        client,
        ws,
        "d@mail.example",
        custom_fields={
            "birthday": today.replace(year=1991).isoformat()
            if not (today.month == 2 and today.day == 29)
            else "1996-02-29"
        },
    )
    await ok(
        await client.patch(
            f"/api/v1/contacts/{gone}", json={"status": "unsubscribed"}, headers=ws.headers
        )
    )
    tag = await make_tag(client, ws, "Birthday")
    steps = [{"type": "add_tag", "tag_id": tag}]
    on_the_day = await make_automation(
        client,
        ws,
        name="Birthday",
        steps=steps,
        trigger={"type": "date_anniversary", "field": "birthday", "time": "00:00"},
    )
    day_before = await make_automation(
        client,
        ws,
        name="Eve",
        steps=steps,
        trigger={"type": "date_anniversary", "field": "birthday", "days": -1, "time": "00:00"},
    )
    draft = await make_automation(
        client,
        ws,
        name="Draft",
        steps=steps,
        trigger={"type": "date_anniversary", "field": "birthday", "time": "00:00"},
    )
    for made in (on_the_day, day_before):
        await activate(client, ws, made["id"])

    # Two workers look at once: each day is worked once.
    workers = [WorkerContext(db, settings, f"w{n}") for n in range(2)]
    counts = await asyncio.gather(*(anniversaries.tick(w) for w in workers))
    assert sum(counts) == 2
    assert await anniversaries.tick(workers[0]) == 0
    assert await _runs(client, ws, on_the_day["id"]) == [ids["today"]]
    assert await _runs(client, ws, day_before["id"]) == [ids["tomorrow"]]
    assert await _runs(client, ws, draft["id"]) == []

    # The run ends; a year later the same contact enters again.
    await run_due(db, settings)
    async with db.transaction() as session:
        automation = await session.scalar(
            select(Automation).where(Automation.id == on_the_day["id"])
        )
        from mailroom.accounts import service as accounts
        from mailroom.core.context import Context

        ctx = Context(
            session, await accounts.principal_for_workspace(session, ws.workspace_id), settings
        )
        next_year = (
            date(today.year + 1, today.month, today.day)
            if not (today.month == 2 and today.day == 29)
            else date(today.year + 1, 3, 1)
        )
        assert await anniversaries.enrol_on(ctx, automation, [next_year]) == 1
    page = await ok(
        await client.get(f"/api/v1/automations/{on_the_day['id']}/runs", headers=ws.headers)
    )
    assert sorted(r["status"] for r in page["runs"]) == ["active", "completed"]


async def _enrol_on(db, settings, ws, automation_id, day):
    async with db.transaction() as session:
        automation = await session.scalar(select(Automation).where(Automation.id == automation_id))
        principal = await accounts.principal_for_workspace(session, ws.workspace_id)
        return await anniversaries.enrol_on(
            Context(session, principal, settings), automation, [day]
        )


async def test_29_february_falls_on_1_march_in_other_years(client, db, ws, settings):
    await _birthday_field(client, ws)
    leap = await create_contact(
        client, ws, "leap@mail.example", custom_fields={"birthday": "2000-02-29"}
    )
    march = await create_contact(
        client, ws, "march@mail.example", custom_fields={"birthday": "1999-03-01"}
    )
    flows = []
    for name in ("2027", "2028-02-29", "2028-03-01"):
        made = await make_automation(
            client,
            ws,
            name=name,
            steps=[{"type": "exit"}],
            trigger={"type": "date_anniversary", "field": "birthday", "time": "00:00"},
        )
        await activate(client, ws, made["id"])
        flows.append(made["id"])
    assert await _enrol_on(db, settings, ws, flows[0], date(2027, 3, 1)) == 2
    assert await _runs(client, ws, flows[0]) == sorted([leap, march])
    # In a leap year 29 February is its own day.
    assert await _enrol_on(db, settings, ws, flows[1], date(2028, 2, 29)) == 1
    assert await _runs(client, ws, flows[1]) == [leap]
    assert await _enrol_on(db, settings, ws, flows[2], date(2028, 3, 1)) == 1
    assert await _runs(client, ws, flows[2]) == [march]
