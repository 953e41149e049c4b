"""`/app/contacts` for anyone of the workspace: search, filters and sort on the API's query,
paging; a contact's page with typed custom fields (an invalid value flagged), lists, consent
and a timeline (messages, form submissions, automation steps); edits through the API's rules (a bad value changes nothing), unsubscribe,
delete and erase after a plain-language question; another workspace's contact is 404."""

from __future__ import annotations

import re
from contextlib import aclosing

from tests.automations.helpers import activate, make_automation, make_tag, run_due
from tests.dashboard.helpers import csrf_of, signed_in
from tests.forms.helpers import contact_by_email, make_form, submit


async def _contact(client, ws, email: str, **extra) -> dict:
    made = await client.post("/api/v1/contacts", json={"email": email, **extra}, headers=ws.headers)
    assert made.status_code == 201, made.text
    return made.json()["contact"]


async def _read(client, ws, contact_id: str):
    return await client.get(f"/api/v1/contacts/{contact_id}", headers=ws.headers)


async def test_search_filter_sort_and_page(app, client, db, settings, ws):
    news = await client.post("/api/v1/lists", json={"name": "News"}, headers=ws.headers)
    list_id = news.json()["list"]["id"]
    ids = []
    for n in range(55):
        ids.append((await _contact(client, ws, f"reader{n:02d}@shop.example"))["id"])
    ada = await _contact(client, ws, "ada@lovelace.example", first_name="Ada", last_name="Byron")
    added = await client.post(
        f"/api/v1/lists/{list_id}/contacts",
        json={"contact_ids": [ada["id"], ids[0]], "status": "confirmed"},
        headers=ws.headers,
    )
    assert added.status_code == 200, added.text
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/app/contacts")
        assert page.status_code == 200 and "56 contacts match." in page.text
        assert "Page 1 of 2" in page.text and "subscribed 56" in page.text
        found = await member.get("/app/contacts?q=byron")
        assert "1 contact match." in found.text and "ada@lovelace.example" in found.text
        assert "Ada Byron" in found.text and "reader00@" not in found.text
        on_list = await member.get(f"/app/contacts?list={list_id}&sort=email&dir=asc")
        emails = re.findall(r'href="/app/contacts/[^"]+">([^<]+)</a>', on_list.text)
        assert emails == ["ada@lovelace.example", "reader00@shop.example"]
        second = await member.get("/app/contacts?sort=email&dir=asc&page=2")
        assert "Page 2 of 2" in second.text
        assert re.findall(r'href="/app/contacts/[^"]+">([^<]+)</a>', second.text) == [
            f"reader{n:02d}@shop.example" for n in range(49, 55)
        ]
        bad = await member.get("/app/contacts?sort=shoe")
        assert (
            bad.status_code == 400
            and "sort must be one of created, name, email, status" in bad.text
        )
        unknown_tag = await member.get("/app/contacts?tag=nope")
        assert unknown_tag.status_code in (200, 400)


async def test_a_contacts_page_edit_and_refusal(app, client, db, settings, ws, factory):
    contact = await _contact(
        client, ws, "jane@shop.example", first_name="Jane", custom_fields={"age": "unknown"}
    )
    field = await client.patch(  # the value registered the field as text; now a number
        "/api/v1/custom-fields/age",
        json={"type": "number", "confirm_violations": True},
        headers=ws.headers,
    )
    assert field.status_code == 200, field.text
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get(f"/app/contacts/{contact['id']}")
        assert page.status_code == 200 and "<h1>jane@shop.example</h1>" in page.text
        assert 'aria-invalid="true"' in page.text and "does not fit the field" in page.text
        assert "Added (api)" in page.text  # the timeline
        token = csrf_of(page.text)

        refused = await member.post(
            f"/app/contacts/{contact['id']}",
            data={
                "csrf": token,
                "first_name": "Janet",
                "last_name": "",
                "language": "",
                "cf_age": "old",
            },
        )
        assert refused.status_code == 400 and "age" in refused.text
        assert (await _read(client, ws, contact["id"])).json()["contact"]["first_name"] == "Jane"

        saved = await member.post(
            f"/app/contacts/{contact['id']}",
            data={
                "csrf": token,
                "first_name": "Janet",
                "last_name": "Doe",
                "language": "fr",
                "cf_age": "41",
            },
        )
        assert saved.status_code == 303
        stored = (await _read(client, ws, contact["id"])).json()["contact"]
        assert (stored["first_name"], stored["last_name"], stored["language"]) == (
            "Janet",
            "Doe",
            "fr",
        )
        assert stored["custom_fields"]["age"] == 41
        shown = await member.get(f"/app/contacts/{contact['id']}")
        assert "Contact saved." in shown.text and 'aria-invalid="true"' not in shown.text

        stopped = await member.post(
            f"/app/contacts/{contact['id']}/unsubscribe", data={"csrf": token}
        )
        assert stopped.status_code == 303
        assert (await _read(client, ws, contact["id"])).json()["contact"][
            "status"
        ] == "unsubscribed"

        other = await factory.workspace("pro")
        theirs = await _contact(client, other, "secret@other.example")
        foreign = await member.get(f"/app/contacts/{theirs['id']}")
        assert foreign.status_code == 404 and "secret@other.example" not in foreign.text


async def test_delete_and_erase_are_asked_first(app, client, db, settings, ws):
    kept = await _contact(client, ws, "keep@shop.example")
    gone = await _contact(client, ws, "gone@shop.example")
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        ask = await member.get(f"/app/contacts/{gone['id']}/erase")
        assert ask.status_code == 200 and "can never be added or mailed again" in ask.text
        token = csrf_of(ask.text)
        assert (await _read(client, ws, gone["id"])).status_code == 200
        done = await member.post(f"/app/contacts/{gone['id']}/erase", data={"csrf": token})
        assert done.status_code == 303
        assert (await _read(client, ws, gone["id"])).status_code == 404
        check = await client.get(
            "/api/v1/suppressions", params={"email": "gone@shop.example"}, headers=ws.headers
        )
        assert check.json()["reason"] == "deleted" and check.json()["liftable"] is False

        ask = await member.get(f"/app/contacts/{kept['id']}/delete")
        assert "an admin can lift that" in ask.text
        await member.post(f"/app/contacts/{kept['id']}/delete", data={"csrf": token})
        listed = await member.get("/app/contacts")
        assert "keep@shop.example is deleted." in listed.text
        assert (await member.get(f"/app/contacts/{kept['id']}/explode")).status_code == 404


async def test_bulk_actions_on_ticked_contacts_or_the_whole_filter(app, client, db, settings, ws):
    people = [await _contact(client, ws, f"b{n}@shop.example") for n in range(4)]
    vip = await client.post("/api/v1/tags", json={"name": "VIP"}, headers=ws.headers)
    tag_id = vip.json()["tag"]["id"]
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/app/contacts?q=b")
        token = csrf_of(page.text)
        tagged = await member.post(
            "/app/contacts-bulk",
            data={
                "csrf": token,
                "back": "/app/contacts?q=b",
                "scope": "selected",
                "action": "add_tag",
                "tag_id": tag_id,
                "contact_ids": [people[0]["id"], people[1]["id"]],
            },
        )
        assert tagged.status_code == 303 and tagged.headers["location"] == "/app/contacts?q=b"
        shown = await member.get(f"/app/contacts?tag={tag_id}")
        assert "Done: 2 tagged." in shown.text and "2 contacts match." in shown.text

        refused = await member.post(
            "/app/contacts-bulk",
            data={"csrf": token, "scope": "filter", "f_tag": tag_id, "action": "delete"},
        )
        assert refused.status_code == 303
        assert "cannot be undone" in (await member.get("/app/contacts")).text
        assert (await _read(client, ws, people[0]["id"])).status_code == 200

        deleted = await member.post(
            "/app/contacts-bulk",
            data={
                "csrf": token,
                "scope": "filter",
                "f_tag": tag_id,
                "action": "delete",
                "sure": "yes",
            },
        )
        assert deleted.status_code == 303
        assert "Done: 2 deleted." in (await member.get("/app/contacts")).text
        assert (await _read(client, ws, people[0]["id"])).status_code == 404
        assert (await _read(client, ws, people[2]["id"])).status_code == 200

        no_tag = await member.post(
            "/app/contacts-bulk",
            data={
                "csrf": token,
                "scope": "selected",
                "action": "add_tag",
                "contact_ids": [people[2]["id"]],
            },
        )
        assert no_tag.status_code == 303
        assert "tag_id is required" in (await member.get("/app/contacts")).text

        exported = await member.get("/app/contacts-export?q=b3")
        assert exported.status_code == 200 and "b3@shop.example" in exported.text
        assert "b2@shop.example" not in exported.text
        picked = await member.post(
            "/app/contacts-bulk",
            data={
                "csrf": token,
                "scope": "selected",
                "action": "export",
                "contact_ids": [people[2]["id"]],
            },
        )
        assert picked.status_code == 200 and "b2@shop.example" in picked.text


async def test_the_timeline_shows_form_submissions_and_automation_steps(
    app, client, db, settings, ws
):
    tag_id = await make_tag(client, ws, "Signed up")
    form = await make_form(client, ws, name="Footer signup")
    automation = await make_automation(
        client,
        ws,
        name="Tagger",
        trigger={"type": "form_submitted", "form_id": form["id"]},
        steps=[{"type": "add_tag", "tag_id": tag_id, "label": "Tag them"}],
    )
    await activate(client, ws, automation["id"])
    answered = await submit(client, form["id"], email="fay@mailtest.io")
    assert answered.status_code in (200, 201), answered.text
    await run_due(db, settings)
    contact = await contact_by_email(client, ws, "fay@mailtest.io")
    assert contact is not None
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get(f"/app/contacts/{contact['id']}")
    assert page.status_code == 200
    timeline = re.findall(r"<li[^>]*>(?:(?!</li>).)*</li>", page.text, re.S)
    texts = [re.sub(r"<[^>]+>|\s+", " ", item).strip() for item in timeline]
    shown = "\n".join(texts)
    assert "Submitted form “Footer signup”" in shown
    assert "Entered automation “Tagger”" in shown
    assert "Automation “Tagger”: Tag them: done" in shown
    assert "Left automation “Tagger” (completed)" in shown
    # Newest first: the automation ended after the form was submitted.
    order = [next(i for i, t in enumerate(texts) if s in t) for s in ("Left", "Submitted")]
    assert order == sorted(order)
