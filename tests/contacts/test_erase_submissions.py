"""Erasing a contact (`DELETE ?mode=erase`, bulk `erase`) erases its signup-form submissions
in the same request: a pending one (its address and answers, waiting for the confirmation
email) is gone, so its link no longer brings the person back; a confirmed one keeps only
that it happened (the form's count), not the answers or the IP."""

from __future__ import annotations

from sqlalchemy import select

from mailroom.forms.mailing import confirm_url
from mailroom.models import FormSubmission
from tests.forms.helpers import make_form, make_list, sender, submit

JANE = "jane@mail.example"


async def _submissions(db, form_id):
    async with db.session() as session:
        found = await session.scalars(
            select(FormSubmission).where(FormSubmission.form_id == form_id)
        )
        return list(found.all())


def _link(settings, submission):
    return "/f/" + confirm_url(settings, submission).split("/f/", 1)[1]


async def _contact_id(client, ws, email):
    found = await client.get("/api/v1/contacts", params={"q": email}, headers=ws.headers)
    return next(c["id"] for c in found.json()["contacts"] if c["email"] == email)


async def _stats(client, ws, form_id):
    read = await client.get(f"/api/v1/forms/{form_id}", headers=ws.headers)
    return read.json()["form"]["stats"]


async def test_erasing_a_contact_erases_its_pending_submissions(client, db, ws, settings):
    await sender(client, db, ws)
    list_id = await make_list(client, ws)
    form = await make_form(
        client,
        ws,
        list_ids=[list_id],
        double_opt_in=True,
        fields=[{"key": "email"}, {"key": "first_name"}],
    )
    assert (await submit(client, form["id"], email=JANE, first_name="Jane")).status_code == 200
    assert (await submit(client, form["id"], email="ann@mail.example")).status_code == 200
    [jane, ann] = sorted(await _submissions(db, form["id"]), key=lambda s: s.email != JANE)
    assert (jane.status, jane.email) == ("pending", JANE)

    contact_id = await _contact_id(client, ws, JANE)
    erased = await client.delete(
        f"/api/v1/contacts/{contact_id}", params={"mode": "erase"}, headers=ws.headers
    )
    assert erased.status_code == 200, erased.text
    assert [s.id for s in await _submissions(db, form["id"])] == [ann.id]
    assert (await _stats(client, ws, form["id"]))["submissions"] == 1
    # Jane's link finds nothing to confirm: she does not come back.
    assert (await client.post(_link(settings, jane))).status_code == 404
    found = await client.get("/api/v1/contacts", params={"q": JANE}, headers=ws.headers)
    assert found.json()["contacts"] == []
    # Ann's is untouched.
    assert (await client.post(_link(settings, ann))).status_code == 200


async def test_a_pending_submission_naming_only_the_address_goes_too(client, db, ws, settings):
    """An address that had unsubscribed submits: its pending row names no contact yet."""
    await sender(client, db, ws)
    form = await make_form(client, ws)  # single opt-in: still confirmed by email when returning
    created = await client.post("/api/v1/contacts", json={"email": JANE}, headers=ws.headers)
    assert created.status_code == 201, created.text
    left = await client.patch(
        f"/api/v1/contacts/{created.json()['contact']['id']}",
        json={"status": "unsubscribed"},
        headers=ws.headers,
    )
    assert left.status_code == 200, left.text
    assert (await submit(client, form["id"], email=JANE)).status_code == 200
    [pending] = await _submissions(db, form["id"])
    assert (pending.status, pending.contact_id, pending.email) == ("pending", None, JANE)

    bulk = await client.post(
        "/api/v1/contacts/bulk",
        json={"action": "erase", "contact_ids": [created.json()["contact"]["id"]]},
        headers=ws.headers,
    )
    assert bulk.status_code == 200, bulk.text
    assert await _submissions(db, form["id"]) == []
    assert (await client.post(_link(settings, pending))).status_code == 404


async def test_a_confirmed_submission_keeps_only_that_it_happened(client, db, ws):
    form = await make_form(client, ws, fields=[{"key": "email"}, {"key": "first_name"}])
    assert (await submit(client, form["id"], email=JANE, first_name="Jane")).status_code == 200
    [confirmed] = await _submissions(db, form["id"])
    assert confirmed.answers["first_name"] == "Jane" and confirmed.consent_ip

    bulk = await client.post(
        "/api/v1/contacts/bulk",
        json={"action": "erase", "contact_ids": [await _contact_id(client, ws, JANE)]},
        headers=ws.headers,
    )
    assert bulk.status_code == 200, bulk.text
    [kept] = await _submissions(db, form["id"])
    assert (kept.status, kept.answers, kept.consent_ip, kept.email) == ("confirmed", {}, "", "")
    assert (await _stats(client, ws, form["id"]))["submissions"] == 1


async def test_deleting_without_erasing_leaves_the_submissions(client, db, ws):
    form = await make_form(client, ws, fields=[{"key": "email"}, {"key": "first_name"}])
    assert (await submit(client, form["id"], email=JANE, first_name="Jane")).status_code == 200
    deleted = await client.delete(
        f"/api/v1/contacts/{await _contact_id(client, ws, JANE)}", headers=ws.headers
    )
    assert deleted.status_code == 200, deleted.text
    [kept] = await _submissions(db, form["id"])
    assert kept.answers["first_name"] == "Jane"
