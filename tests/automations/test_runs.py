"""Automations end to end through the API and the worker's loop: triggers enrol once, steps
take effect, waits survive as due times, conditions branch, and runs end as they should."""

from __future__ import annotations

from sqlalchemy import select

from mailroom.models import SendLog
from tests.automations.helpers import (
    activate,
    create_contact,
    get_automation,
    make_automation,
    make_tag,
    run_due,
    runs_of,
    skip_waits,
    tags_of,
)
from tests.sending.conftest import verified_domain
from tests.sending.helpers import events_of, make_contacts, make_list, ok


async def test_a_new_contact_goes_through_a_wait_and_gets_tagged(client, db, ws, settings):
    welcomed = await make_tag(client, ws, "Welcomed")
    automation = await make_automation(
        client,
        ws,
        trigger={"type": "contact_created"},
        steps=[
            {"id": "pause", "type": "wait", "seconds": 3600, "label": "An hour"},
            {"id": "tag", "type": "add_tag", "tag_id": welcomed},
        ],
    )
    assert automation["status"] == "draft"
    await activate(client, ws, automation["id"])
    jane = await create_contact(client, ws, "jane@mail.example")

    assert await run_due(db, settings) == 1
    [run] = await runs_of(client, ws, automation["id"])
    assert (run["contact_id"], run["status"], run["step_id"]) == (jane, "waiting", "pause")
    assert run["next_run_at"] is not None
    assert await tags_of(client, ws, jane) == []

    await skip_waits(db)
    await run_due(db, settings)
    [run] = await runs_of(client, ws, automation["id"])
    assert run["status"] == "completed" and run["next_run_at"] is None
    assert [h["step_id"] for h in run["history"]] == ["pause", "pause", "tag", None]
    assert await tags_of(client, ws, jane) == ["Welcomed"]
    stats = (await get_automation(client, ws, automation["id"]))["stats"]
    assert stats == {
        "enrolled": 1,
        "active": 0,
        "completed": 1,
        "exited": 0,
        "failed": 0,
        "revenue": {"orders": 0, "total": "0.00", "currency": None, "by_currency": None},
    }


async def _tag_on(client, ws, contact_id, tag_id, *, off=False):
    if off:
        url = f"/api/v1/contacts/{contact_id}/tags/{tag_id}"
        assert (await client.delete(url, headers=ws.headers)).status_code == 200
        return
    answer = await client.post(
        f"/api/v1/contacts/{contact_id}/tags", json={"tag_id": tag_id}, headers=ws.headers
    )
    assert answer.status_code == 201


async def test_a_tag_enrols_once_and_again_only_with_reentry(client, db, ws, settings):
    vip, done = await make_tag(client, ws, "VIP"), await make_tag(client, ws, "Done")
    other = await make_tag(client, ws, "Other")
    once = await make_automation(
        client,
        ws,
        name="Once",
        trigger={"type": "tag_added", "tag_id": vip},
        steps=[{"type": "add_tag", "tag_id": done}],
    )
    again = await make_automation(
        client,
        ws,
        name="Again",
        trigger={"type": "tag_added", "tag_id": vip},
        steps=[{"type": "wait", "seconds": 5}],
        allow_reentry=True,
    )
    for automation in (once, again):
        await activate(client, ws, automation["id"])
    jane = await create_contact(client, ws, "jane@mail.example")
    await _tag_on(client, ws, jane, other)  # another tag: nothing
    await _tag_on(client, ws, jane, vip)
    await run_due(db, settings)
    await _tag_on(client, ws, jane, vip, off=True)
    await _tag_on(client, ws, jane, vip)  # the second time
    await run_due(db, settings)

    assert len(await runs_of(client, ws, once["id"])) == 1
    # Still waiting in its first run: once at a time, even with re-entry.
    assert len(await runs_of(client, ws, again["id"])) == 1
    await skip_waits(db)
    await run_due(db, settings)
    await _tag_on(client, ws, jane, vip, off=True)
    await _tag_on(client, ws, jane, vip)
    assert [r["status"] for r in await runs_of(client, ws, again["id"])] == [
        "active",
        "completed",
    ]
    assert await tags_of(client, ws, jane) == ["Done", "Other", "VIP"]


async def test_a_confirmed_list_join_enrols_and_a_condition_branches(client, db, ws, settings):
    readers = await make_list(client, ws, "Readers")
    gold, plain = await make_tag(client, ws, "Gold"), await make_tag(client, ws, "Plain")
    automation = await make_automation(
        client,
        ws,
        trigger={"type": "list_joined", "list_id": readers},
        steps=[
            {
                "id": "rich",
                "type": "condition",
                "rules": {"conditions": [{"field": "first_name", "op": "eq", "value": "Ada"}]},
                "yes": [{"id": "gold", "type": "add_tag", "tag_id": gold}],
                "no": [{"id": "plain", "type": "add_tag", "tag_id": plain}],
            },
            {"id": "bye", "type": "exit"},
        ],
    )
    await activate(client, ws, automation["id"])
    ada, bob = await make_contacts(client, ws, ["ada@mail.example", "bob@mail.example"], readers)
    await ok(
        await client.patch(
            f"/api/v1/contacts/{ada}", json={"first_name": "Ada"}, headers=ws.headers
        )
    )
    await run_due(db, settings)
    assert await tags_of(client, ws, ada) == ["Gold"]
    assert await tags_of(client, ws, bob) == ["Plain"]
    runs = {r["contact_id"]: r for r in await runs_of(client, ws, automation["id"])}
    assert [h["outcome"] for h in runs[ada]["history"]] == ["yes", "done", "exit step"]
    assert [h["step_id"] for h in runs[bob]["history"]] == ["rich", "plain", "bye"]
    assert {r["status"] for r in runs.values()} == {"exited"}


async def test_a_run_ends_when_its_contact_unsubscribes(client, db, ws, settings):
    automation = await make_automation(
        client, ws, trigger={"type": "contact_created"}, steps=[{"type": "wait", "seconds": 60}]
    )
    await activate(client, ws, automation["id"])
    jane = await create_contact(client, ws, "jane@mail.example")
    await run_due(db, settings)
    await ok(
        await client.patch(
            f"/api/v1/contacts/{jane}", json={"status": "unsubscribed"}, headers=ws.headers
        )
    )
    # Shown at once, before the runner looks again ...
    assert [r["status"] for r in await runs_of(client, ws, automation["id"])] == ["exited"]
    stats = (await get_automation(client, ws, automation["id"]))["stats"]
    assert (stats["active"], stats["exited"]) == (0, 1)
    # ... and written when it does.
    await skip_waits(db)
    await run_due(db, settings)
    [run] = await runs_of(client, ws, automation["id"])
    assert run["status"] == "exited" and run["history"][-1]["outcome"] == "contact unsubscribed"


async def test_a_step_that_cannot_complete_fails_the_run_and_tells_once_a_day(
    client, db, ws, settings
):
    template = await ok(
        await client.post(
            "/api/v1/templates",
            json={"name": "Hello", "subject": "Hi", "html_content": "<p>Hi</p>"},
            headers=ws.headers,
        ),
        201,
    )
    automation = await make_automation(
        client,
        ws,
        trigger={"type": "contact_created"},
        steps=[{"id": "mail", "type": "send_email", "template_id": template["template"]["id"]}],
    )
    await activate(client, ws, automation["id"])
    url = f"/api/v1/templates/{template['template']['id']}"
    assert (await client.delete(url, headers=ws.headers)).status_code == 200
    for email in ("a@mail.example", "b@mail.example"):
        await create_contact(client, ws, email)
    await run_due(db, settings)
    runs = await runs_of(client, ws, automation["id"])
    assert [r["status"] for r in runs] == ["failed", "failed"]
    assert runs[0]["history"][-1]["outcome"] == "failed: template not found"
    [failed] = await events_of(db, ws.workspace_id, "automation.failed")
    assert failed.data["automation"] == {"id": automation["id"], "name": "Welcome"}
    assert failed.data["reason"] == "template not found"
    assert (await get_automation(client, ws, automation["id"]))["status"] == "active"


async def test_send_email_queues_an_automation_message(client, db, ws, settings, sink, driver):
    await verified_domain(client, db, ws)
    await ok(
        await client.patch(
            "/api/v1/sending",
            json={"from_email": "news@shop.example", "from_name": "Shop"},
            headers=ws.headers,
        )
    )
    template = await ok(
        await client.post(
            "/api/v1/templates",
            json={
                "name": "Hello",
                "subject": "Welcome {{ first_name }}",
                "html_content": "<p>Hi {{ first_name }}</p>",
            },
            headers=ws.headers,
        ),
        201,
    )
    automation = await make_automation(
        client,
        ws,
        trigger={"type": "contact_created"},
        steps=[{"type": "send_email", "template_id": template["template"]["id"]}],
    )
    await activate(client, ws, automation["id"])
    await create_contact(client, ws, "jane@mail.example", first_name="Jane")
    await run_due(db, settings)
    await driver.drain()
    [mail] = sink.received
    assert mail.recipients == ["jane@mail.example"]
    assert mail.parsed()["Subject"] == "Welcome Jane"
    async with db.session() as session:
        kinds = (await session.scalars(select(SendLog.kind))).all()
    assert kinds == ["automation"]


async def test_call_webhook_emits_step_reached(client, db, ws, settings):
    automation = await make_automation(
        client,
        ws,
        trigger={"type": "contact_created"},
        steps=[{"id": "hook", "type": "call_webhook", "label": "Tell the CRM"}],
    )
    await activate(client, ws, automation["id"])
    jane = await create_contact(client, ws, "jane@mail.example")
    await run_due(db, settings)
    [reached] = await events_of(db, ws.workspace_id, "automation.step_reached")
    assert reached.data["automation"] == {"id": automation["id"], "name": "Welcome"}
    assert reached.data["step"] == {"id": "hook", "label": "Tell the CRM"}
    assert reached.data["contact"]["id"] == jane


async def test_manual_enrolment_by_ids_and_by_segment(client, db, ws, settings):
    automation = await make_automation(
        client, ws, trigger={"type": "manual"}, steps=[{"type": "wait", "seconds": 60}]
    )
    url = f"/api/v1/automations/{automation['id']}/enrol"
    ids = await make_contacts(client, ws, [f"p{i}@mail.example" for i in range(3)])
    early = await client.post(url, json={"contact_ids": ids}, headers=ws.headers)
    assert (early.status_code, early.json()) == (
        409,
        {"error": "Activate the automation before enrolling contacts"},
    )
    await activate(client, ws, automation["id"])
    first = await ok(await client.post(url, json={"contact_ids": ids[:2]}, headers=ws.headers))
    assert first == {"enrolled": 2}
    segment = await ok(
        await client.post(
            "/api/v1/segments",
            json={
                "name": "Everyone",
                "rules": {"conditions": [{"field": "email", "op": "contains", "value": "@"}]},
            },
            headers=ws.headers,
        ),
        201,
    )
    second = await ok(
        await client.post(url, json={"segment_id": segment["segment"]["id"]}, headers=ws.headers)
    )
    assert second == {"enrolled": 1}  # the two already in it stay as they are
    assert len(await runs_of(client, ws, automation["id"])) == 3


async def test_an_import_enrols_only_when_asked(client, db, ws, settings):
    automation = await make_automation(
        client, ws, trigger={"type": "contact_created"}, steps=[{"type": "wait", "seconds": 60}]
    )
    await activate(client, ws, automation["id"])
    for flag, rows in (("false", "a@acme.io\n"), ("true", "b@acme.io\nc@acme.io\n")):
        answer = await ok(
            await client.post(
                "/api/v1/contacts/import",
                files={"file": ("c.csv", f"email\n{rows}", "text/csv")},
                data={"run_automations": flag},
                headers=ws.headers,
            )
        )
        if flag == "true":
            assert answer["automations_enrolled"] == 2
        else:
            assert "automations_enrolled" not in answer
    assert len(await runs_of(client, ws, automation["id"])) == 2
