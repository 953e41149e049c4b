"""Nothing a submitter (or a list or workspace name) writes runs as a template: the double
opt-in email spliced the address, list and workspace names into template source, so `{{ ... }}`
in an address ran (a 60-byte POST made a 4.8 MB email). Read from the SMTP sink the engine
relays to: the values arrive literally, and the email stays small."""

from __future__ import annotations

import pytest
from markupsafe import escape

from tests.forms.helpers import make_form, make_list, sender, submit
from tests.sending.helpers import ok

SMALL = 20_000  # bytes: the confirmation email is a few kilobytes


def _text(received):
    return received.parsed().get_body(("plain",)).get_content()


def _html(received):
    return received.parsed().get_body(("html",)).get_content()


@pytest.mark.parametrize(
    "address",
    ["{{7*7}}x@gmail.com", "{{'x'*4800000}}@gmail.com", "{%raw%}x{%endraw%}@gmail.com"],
)
async def test_an_address_holding_merge_tags_is_mailed_literally(
    client, db, ws, sink, driver, address
):
    await sender(client, db, ws)
    list_id = await make_list(client, ws, "Weekly")
    form = await make_form(client, ws, list_ids=[list_id], double_opt_in=True)
    answer = await submit(client, form["id"], email=address)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"ok": True, "double_opt_in": True}
    await driver.drain()
    [mail] = sink.received
    assert mail.recipients == [address]
    assert len(mail.data) < SMALL
    assert address in _text(mail)
    assert str(escape(address)) in _html(mail)
    assert "49x@" not in _text(mail) and "xxxx" not in _text(mail)


async def test_list_and_workspace_names_holding_merge_tags_are_mailed_literally(
    client, db, factory, sink, driver
):
    ws = await factory.workspace("pro", name="{{ 7*7 }} Shop {% if true %}yes{% endif %}")
    await sender(client, db, ws)
    list_id = await make_list(client, ws, "{{ 'News' * 100000 }}")
    form = await make_form(client, ws, list_ids=[list_id], double_opt_in=True)
    assert (await submit(client, form["id"], email="jane@mail.example")).status_code == 200
    await driver.drain()
    [mail] = sink.received
    assert len(mail.data) < SMALL
    subject = str(mail.parsed()["Subject"])
    assert subject == "Please confirm your subscription to {{ 'News' * 100000 }}"
    body = _text(mail)
    assert "{{ 'News' * 100000 }}" in body
    assert "{{ 7*7 }} Shop {% if true %}yes{% endif %}" in body
    assert "NewsNews" not in body and "49 Shop" not in body


async def test_the_list_confirmation_request_mails_literally(client, db, factory, sink, driver):
    """`POST /lists/{id}/contacts/{contact_id}/confirmation` builds the same email (and the
    public `/confirm/` page sends it again for an expired link)."""
    ws = await factory.workspace("pro", name="{{ 7*7 }} Shop")
    await sender(client, db, ws)
    list_id = await make_list(client, ws, "{{ 'News' * 100000 }}", double_opt_in=True)
    created = await client.post(
        "/api/v1/contacts", json={"email": "{{7*7}}x@gmail.com"}, headers=ws.headers
    )
    contact = (await ok(created, 201))["contact"]
    added = await client.post(
        f"/api/v1/lists/{list_id}/contacts",
        json={"contact_ids": [contact["id"]]},
        headers=ws.headers,
    )
    assert added.status_code < 300, added.text
    asked = await client.post(
        f"/api/v1/lists/{list_id}/contacts/{contact['id']}/confirmation", headers=ws.headers
    )
    assert asked.status_code == 202, asked.text
    await driver.drain()
    [mail] = sink.received
    assert mail.recipients == ["{{7*7}}x@gmail.com"]
    assert len(mail.data) < SMALL
    assert str(mail.parsed()["Subject"]) == (
        "Please confirm your subscription to {{ 'News' * 100000 }}"
    )
    body = _text(mail)
    assert "{{7*7}}x@gmail.com" in body and "{{ 7*7 }} Shop" in body
    # The confirmation link's random token may hold "49"; what must not appear is a rendered 7*7.
    assert "49x@" not in body and "49 Shop" not in body and "NewsNews" not in body
