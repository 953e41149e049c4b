"""Double opt-in and returning addresses, through a real SMTP conversation with the sink:
the confirmation email, its page (a button: scanners open links), confirming once, an
address that unsubscribed or was deleted coming back only by confirming, one that bounced
never mailed, and `form_submitted` automations enrolling when the consent is in effect."""

from __future__ import annotations

import time

from mailroom.core import tokens
from mailroom.forms.mailing import CONFIRM
from tests.automations.helpers import activate, make_automation
from tests.forms.helpers import (
    confirm_link,
    contact_by_email,
    make_form,
    make_list,
    memberships,
    sender,
    submit,
)
from tests.sending.helpers import events_of, ok

JANE = "jane@mail.example"


async def _suppression(client, ws, email):
    return await ok(
        await client.get("/api/v1/suppressions", params={"email": email}, headers=ws.headers)
    )


async def test_double_opt_in_joins_unconfirmed_then_confirms_once(client, db, ws, sink, driver):
    await sender(client, db, ws)
    list_id = await make_list(client, ws, "Weekly")
    form = await make_form(
        client,
        ws,
        list_ids=[list_id],
        double_opt_in=True,
        fields=[{"key": "email"}, {"key": "first_name"}],
    )
    answer = await submit(client, form["id"], email=JANE, first_name="Jane")
    assert answer.json() == {"ok": True, "double_opt_in": True}
    contact = await contact_by_email(client, ws, JANE)
    assert contact["status"] == "subscribed" and contact["source"] == "form"
    assert "consent_confirmed_at" not in contact["custom_fields"]
    assert contact["custom_fields"]["consent_source"] == f"form:{form['id']}"
    assert await memberships(client, ws, list_id) == {JANE: "unconfirmed"}
    assert await events_of(db, ws.workspace_id, "contact.list_joined") == []

    await driver.drain()
    message = sink.received[-1].parsed()
    assert message["To"] == f"Jane <{JANE}>"  # the name the form gave
    assert message["Subject"] == "Please confirm your subscription to Weekly"
    link = confirm_link(sink)
    shown = await client.get(link)
    assert shown.status_code == 200 and f'<form method="post" action="{link}">' in shown.text
    assert await memberships(client, ws, list_id) == {JANE: "unconfirmed"}  # a GET changes nothing

    done = await client.post(link)
    assert done.status_code == 200 and "Subscription confirmed" in done.text
    assert await memberships(client, ws, list_id) == {JANE: "confirmed"}
    confirmed = await contact_by_email(client, ws, JANE)
    assert confirmed["custom_fields"]["consent_confirmed_at"].endswith("Z")
    assert (await client.post(link)).status_code == 200
    joined = await events_of(db, ws.workspace_id, "contact.list_joined")
    assert [(e.list_id, e.form_id) for e in joined] == [(list_id, form["id"])]
    assert len(await events_of(db, ws.workspace_id, "form.submitted")) == 1
    read = await ok(await client.get(f"/api/v1/forms/{form['id']}", headers=ws.headers))
    assert read["form"]["stats"] == {"submissions": 1, "confirmed": 1}


async def test_without_lists_the_contact_waits_for_the_confirmation(client, db, ws, sink, driver):
    await sender(client, db, ws)
    form = await make_form(client, ws, double_opt_in=True, languages=["fr"])
    assert (await submit(client, form["id"], email=JANE)).json() == {
        "ok": True,
        "double_opt_in": True,
    }
    assert await contact_by_email(client, ws, JANE) is None
    await driver.drain()
    assert sink.received[-1].parsed()["Subject"] == "Confirmez votre inscription à Shop"
    done = await client.post(confirm_link(sink))
    assert "Inscription confirmée" in done.text
    contact = await contact_by_email(client, ws, JANE)
    assert (contact["status"], contact["language"]) == ("subscribed", "fr")
    assert [e.form_id for e in await events_of(db, ws.workspace_id, "form.submitted")] == [
        form["id"]
    ]


async def test_an_unsubscribed_address_returns_only_by_confirming(client, db, ws, sink, driver):
    await sender(client, db, ws)
    list_id = await make_list(client, ws)
    made = await ok(
        await client.post("/api/v1/contacts", json={"email": JANE}, headers=ws.headers), 201
    )
    contact_id = made["contact"]["id"]
    await ok(
        await client.patch(
            f"/api/v1/contacts/{contact_id}",
            json={"status": "unsubscribed", "suppress": True},
            headers=ws.headers,
        )
    )
    form = await make_form(client, ws, list_ids=[list_id])  # single opt-in
    answer = await submit(client, form["id"], email=JANE)
    assert answer.json() == {"ok": True, "double_opt_in": False}  # as for anyone
    assert (await contact_by_email(client, ws, JANE))["status"] == "unsubscribed"
    assert await memberships(client, ws, list_id) == {}

    await driver.drain()
    assert sink.received[-1].parsed()["To"] == JANE  # the confirmation goes, though unsubscribed
    await client.post(confirm_link(sink))
    back = await contact_by_email(client, ws, JANE)
    assert back["id"] == contact_id and back["status"] == "subscribed"
    assert (await _suppression(client, ws, JANE))["suppressed"] is False
    assert await memberships(client, ws, list_id) == {JANE: "confirmed"}
    assert len(await events_of(db, ws.workspace_id, "contact.resubscribed")) == 1


async def test_a_deleted_address_becomes_a_contact_again_on_confirming(
    client, db, ws, sink, driver
):
    await sender(client, db, ws)
    made = await ok(
        await client.post("/api/v1/contacts", json={"email": JANE}, headers=ws.headers), 201
    )
    await ok(await client.delete(f"/api/v1/contacts/{made['contact']['id']}", headers=ws.headers))
    form = await make_form(client, ws)
    assert (await submit(client, form["id"], email=JANE)).json() == {
        "ok": True,
        "double_opt_in": False,
    }
    assert await contact_by_email(client, ws, JANE) is None
    await driver.drain()
    await client.post(confirm_link(sink))
    contact = await contact_by_email(client, ws, JANE)
    assert contact is not None and contact["id"] != made["contact"]["id"]
    assert contact["source"] == "form"
    assert (await _suppression(client, ws, JANE))["suppressed"] is False


async def test_a_bounced_address_changes_nothing_and_is_never_mailed(client, db, ws, sink, driver):
    await sender(client, db, ws)
    await ok(
        await client.post(
            "/api/v1/suppressions",
            json={"reason": "bounced", "entries": [JANE]},
            headers=ws.headers,
        )
    )
    list_id = await make_list(client, ws)
    for double in (False, True):
        form = await make_form(
            client, ws, name=f"Form {double}", list_ids=[list_id], double_opt_in=double
        )
        answer = await submit(client, form["id"], email=JANE)
        assert answer.json() == {"ok": True, "double_opt_in": double}
    await driver.drain()
    assert sink.received == []
    assert await contact_by_email(client, ws, JANE) is None
    assert await events_of(db, ws.workspace_id, "form.submitted") == []


async def test_form_submitted_automations_enrol_when_consent_is_in_effect(
    client, db, ws, sink, driver
):
    await sender(client, db, ws)
    single = await make_form(client, ws, name="Single")
    double = await make_form(client, ws, name="Double", double_opt_in=True)
    flows = {}
    for form in (single, double):
        flow = await make_automation(
            client,
            ws,
            name=f"After {form['name']}",
            trigger={"type": "form_submitted", "form_id": form["id"]},
            steps=[{"type": "wait", "seconds": 3600}],
        )
        await activate(client, ws, flow["id"])
        flows[form["name"]] = flow["id"]

    async def runs(name):
        page = await ok(
            await client.get(f"/api/v1/automations/{flows[name]}/runs", headers=ws.headers)
        )
        return page["runs"]

    await submit(client, single["id"], email="s@mail.example")
    assert len(await runs("Single")) == 1 and await runs("Double") == []
    await submit(client, single["id"], email="s@mail.example")  # once per contact
    assert len(await runs("Single")) == 1

    await submit(client, double["id"], email=JANE)
    assert await runs("Double") == []  # not before the confirmation
    await driver.drain()
    await client.post(confirm_link(sink))
    [run] = await runs("Double")
    contact = await contact_by_email(client, ws, JANE)
    assert run["contact_id"] == contact["id"]

    refused = await client.post(
        "/api/v1/automations",
        json={"name": "Nope", "trigger": {"type": "form_submitted", "form_id": "nope"}},
        headers=ws.headers,
    )
    assert refused.json() == {"error": "trigger.form_id: Form not found"}


async def test_an_expired_link_sends_a_new_one_and_altered_links_are_404(
    client, db, ws, sink, driver, settings
):
    await sender(client, db, ws)
    form = await make_form(client, ws, double_opt_in=True)
    await submit(client, form["id"], email=JANE)
    await driver.drain()
    token = confirm_link(sink).rsplit("/", 1)[-1]
    workspace_id, submission_id, _ = tokens.read(settings.resolved_secret_key, CONFIRM, token)
    old = tokens.sign(
        settings.resolved_secret_key,
        CONFIRM,
        workspace_id,
        submission_id,
        str(int(time.time()) - 8 * 86400),
    )
    expired = await client.get(f"/f/confirm/{old}")
    assert "This link has expired" in expired.text
    resent = await client.post(f"/f/confirm/{old}")
    assert "A new confirmation email is on its way" in resent.text
    await driver.drain()
    assert len(sink.received) == 2
    assert (await client.post(confirm_link(sink))).status_code == 200
    assert (await contact_by_email(client, ws, JANE))["status"] == "subscribed"
    for bad in (token[:-2] + "xx", "nothing"):
        assert (await client.get(f"/f/confirm/{bad}")).status_code == 404
        assert (await client.post(f"/f/confirm/{bad}")).status_code == 404
