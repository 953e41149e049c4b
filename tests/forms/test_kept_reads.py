"""A form's lists and custom fields are kept in the server process between submissions
(`forms.loading`): every change to them is seen by the very next submission."""

from __future__ import annotations

from tests.forms.helpers import make_form, make_list, memberships, sender, submit
from tests.sending.helpers import ok


async def test_a_list_changed_or_deleted_is_seen_by_the_next_submission(client, db, ws):
    await sender(client, db, ws)  # the double opt-in answers queue a confirmation email
    weekly = await make_list(client, ws, "Weekly")
    form = await make_form(client, ws, list_ids=[weekly])
    answer = await ok(await submit(client, form["id"], email="a@mail.example"))
    assert answer == {"ok": True, "double_opt_in": False}

    # The list now asks for confirmation: the form's answer says so at once.
    await ok(
        await client.patch(
            f"/api/v1/lists/{weekly}", json={"double_opt_in": True}, headers=ws.headers
        )
    )
    answer = await ok(await submit(client, form["id"], email="b@mail.example"))
    assert answer["double_opt_in"] is True
    await ok(
        await client.patch(
            f"/api/v1/lists/{weekly}", json={"double_opt_in": False}, headers=ws.headers
        )
    )
    assert (await ok(await submit(client, form["id"], email="c@mail.example")))[
        "double_opt_in"
    ] is False
    assert (await memberships(client, ws, weekly))["c@mail.example"] == "confirmed"

    # Deleted: the next submission joins no list (and is still accepted).
    deleted = await client.delete(f"/api/v1/lists/{weekly}", headers=ws.headers)
    assert deleted.status_code in (200, 204), deleted.text
    answer = await ok(await submit(client, form["id"], email="d@mail.example"))
    assert answer["ok"] is True


async def test_a_custom_field_added_or_changed_is_checked_on_the_next_submission(client, ws):
    await ok(
        await client.post(
            "/api/v1/custom-fields",
            json={"key": "plan", "label": "Plan", "type": "dropdown", "options": ["Basic"]},
            headers=ws.headers,
        ),
        201,
    )
    form = await make_form(client, ws, fields=[{"key": "email"}, {"key": "plan"}])
    refused = await submit(client, form["id"], email="a@mail.example", plan="Pro")
    assert refused.status_code == 400
    await ok(
        await client.patch(
            "/api/v1/custom-fields/plan",
            json={"options": ["Basic", "Pro"]},
            headers=ws.headers,
        )
    )
    await ok(await submit(client, form["id"], email="a@mail.example", plan="Pro"))


async def test_a_form_changed_or_deleted_is_seen_by_the_next_submission(client, db, ws):
    await sender(client, db, ws)
    form = await make_form(client, ws)
    await ok(await submit(client, form["id"], email="a@mail.example"))
    await ok(
        await client.patch(
            f"/api/v1/forms/{form['id']}", json={"double_opt_in": True}, headers=ws.headers
        )
    )
    answer = await ok(await submit(client, form["id"], email="b@mail.example"))
    assert answer["double_opt_in"] is True
    await client.delete(f"/api/v1/forms/{form['id']}", headers=ws.headers)
    assert (await submit(client, form["id"], email="c@mail.example")).status_code == 404
