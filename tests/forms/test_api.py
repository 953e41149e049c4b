"""`/api/v1/forms`: CRUD on the shared named shape, fields checked against the custom-field
registry, permissions (`forms:*`, or the older `automations:write`), the Free plan's double
opt-in, the embed snippet, and custom-field deletion reaching forms."""

from __future__ import annotations

import pytest

from tests.forms.helpers import make_form, make_list
from tests.sending.helpers import ok


async def test_create_read_list_update_delete(client, ws, settings):
    list_id = await make_list(client, ws)
    form = await make_form(client, ws, name="Footer signup", list_ids=[list_id])
    assert form["fields"] == [{"key": "email", "label": "Email", "type": "email", "required": True}]
    assert form["list_ids"] == [list_id]
    assert form["double_opt_in"] is False and form["languages"] == ["en"]
    assert form["success_message"] is None and form["redirect_url"] is None
    assert form["consent_text"] is None
    assert form["url"] == f"{settings.public_url.rstrip('/')}/f/{form['id']}"
    assert form["stats"] == {"submissions": 0, "confirmed": 0}

    read = await ok(await client.get(f"/api/v1/forms/{form['id']}", headers=ws.headers))
    assert read["form"] == form

    changed = await ok(
        await client.patch(
            f"/api/v1/forms/{form['id']}",
            json={
                "name": "Footer",
                "fields": [
                    {"key": "first_name", "label": "Your name", "required": True},
                    {"key": "email"},
                    {"key": "last_name"},
                ],
                "double_opt_in": True,
                "success_message": "  Welcome aboard!  ",
                "redirect_url": "https://shop.example/thanks",
                "consent_text": "One email a week.",
                "languages": ["fr", "en", "fr"],
            },
            headers=ws.headers,
        )
    )
    shown = changed["form"]
    assert shown["name"] == "Footer"
    assert shown["fields"] == [
        {"key": "first_name", "label": "Your name", "type": "text", "required": True},
        {"key": "email", "label": "Email", "type": "email", "required": True},
        {"key": "last_name", "label": "Last name", "type": "text", "required": False},
    ]
    assert shown["double_opt_in"] is True and shown["languages"] == ["fr", "en"]
    assert shown["success_message"] == "Welcome aboard!"
    assert shown["redirect_url"] == "https://shop.example/thanks"

    popup = await make_form(client, ws, name="Popup", fields=[{"key": "first_name"}])
    assert [f["key"] for f in popup["fields"]] == ["email", "first_name"]  # email is always asked
    listed = await ok(await client.get("/api/v1/forms?limit=1", headers=ws.headers))
    assert [f["name"] for f in listed["forms"]] == ["Popup"]  # newest first
    assert listed["pagination"]["total"] == 2

    clash = await client.patch(
        f"/api/v1/forms/{form['id']}", json={"name": "POPUP"}, headers=ws.headers
    )
    assert clash.status_code == 409
    assert clash.json()["error"] == "A form with this name already exists"

    gone = await client.delete(f"/api/v1/forms/{form['id']}", headers=ws.headers)
    assert (gone.status_code, gone.json()) == (200, {"success": True, "id": form["id"]})
    missing = await client.get(f"/api/v1/forms/{form['id']}", headers=ws.headers)
    assert (missing.status_code, missing.json()) == (404, {"error": "Form not found"})
    page = await client.get(f"/f/{form['id']}")
    assert page.status_code == 404


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"name": ""}, "name is required"),
        ({"fields": []}, "fields must be a non-empty array"),
        (
            {"fields": [{"key": "email"}, {"key": "plan"}]},
            "fields[1].key must be email, first_name, last_name or a registered custom field "
            "(plan is not)",
        ),
        ({"fields": [{"key": "email"}, {"key": "email"}]}, "fields[1].key email appears twice"),
        (
            {"fields": [{"key": "email", "required": "yes"}]},
            "fields[0].required must be true or false",
        ),
        ({"list_ids": ["nope"]}, "list_ids[0]: List not found"),
        ({"list_ids": "nope"}, "list_ids must be an array of list ids"),
        ({"double_opt_in": "yes"}, "double_opt_in must be true or false"),
        ({"redirect_url": "javascript:alert(1)"}, "redirect_url must be an http(s) URL"),
        ({"redirect_url": "https://[::1"}, "redirect_url must be an http(s) URL"),
        ({"languages": ["en", "xx"]}, "languages must be among: en, fr, de, es, pt"),
        ({"languages": []}, "languages must be a non-empty array"),
        ({"consent_text": "x" * 2001}, "consent_text must be 2000 characters or fewer"),
    ],
)
async def test_bad_forms_are_named_and_change_nothing(client, ws, body, message):
    refused = await client.post(
        "/api/v1/forms", json={"name": "Broken", **body}, headers=ws.headers
    )
    assert (refused.status_code, refused.json()) == (400, {"error": message})
    listed = await ok(await client.get("/api/v1/forms", headers=ws.headers))
    assert listed["forms"] == []


async def test_custom_fields_bring_their_type_and_leave_forms_when_deleted(client, ws):
    for field in (
        {"key": "plan", "label": "Plan", "type": "dropdown", "options": ["Basic", "Pro"]},
        {"key": "age", "type": "number"},
    ):
        await ok(await client.post("/api/v1/custom-fields", json=field, headers=ws.headers), 201)
    fields = [{"key": "email"}, {"key": "plan", "required": True}, {"key": "age", "label": "Age"}]
    form = await make_form(client, ws, fields=fields)
    other = await make_form(client, ws, name="Other", fields=[{"key": "email"}, {"key": "age"}])
    untouched = await make_form(client, ws, name="Plain")
    assert form["fields"][1:] == [
        {
            "key": "plan",
            "label": "Plan",
            "type": "dropdown",
            "required": True,
            "options": ["Basic", "Pro"],
        },
        {"key": "age", "label": "Age", "type": "number", "required": False},
    ]

    deleted = await ok(await client.delete("/api/v1/custom-fields/age", headers=ws.headers))
    assert deleted["forms_updated"] == 2
    for made, keys in ((form, ["email", "plan"]), (other, ["email"]), (untouched, ["email"])):
        read = await ok(await client.get(f"/api/v1/forms/{made['id']}", headers=ws.headers))
        assert [f["key"] for f in read["form"]["fields"]] == keys


async def test_permissions_forms_or_the_older_automations_write(client, ws, factory):
    reader = await factory.key(ws, ["forms:read"])
    older = await factory.key(ws, ["automations:write"])
    made = await client.post("/api/v1/forms", json={"name": "Old key"}, headers=older)
    assert made.status_code == 201
    form_id = made.json()["form"]["id"]
    assert (await client.get(f"/api/v1/forms/{form_id}", headers=older)).status_code == 200
    assert (await client.get("/api/v1/forms", headers=reader)).status_code == 200
    refused = await client.patch(f"/api/v1/forms/{form_id}", json={"name": "x"}, headers=reader)
    assert (refused.status_code, refused.json()) == (
        403,
        {"error": "Forbidden: forms:write permission required"},
    )
    nothing = await factory.key(ws, ["contacts:read"])
    refused = await client.get("/api/v1/forms", headers=nothing)
    assert refused.json() == {"error": "Forbidden: forms:read permission required"}


async def test_free_plan_forms_always_confirm_by_email(client, factory):
    free = await factory.workspace("free")
    form = await make_form(client, free, double_opt_in=False)
    assert form["double_opt_in"] is True


async def test_another_workspaces_form_is_404(client, ws, factory):
    other = await factory.workspace()
    theirs = await make_form(client, other)
    for method, path in (
        ("GET", f"/api/v1/forms/{theirs['id']}"),
        ("PATCH", f"/api/v1/forms/{theirs['id']}"),
        ("DELETE", f"/api/v1/forms/{theirs['id']}"),
        ("GET", f"/api/v1/forms/{theirs['id']}/embed"),
    ):
        answer = await client.request(
            method, path, json={"name": "x"} if method == "PATCH" else None, headers=ws.headers
        )
        assert (answer.status_code, answer.json()) == (404, {"error": "Form not found"}), path
    foreign_list = await make_list(client, other)
    refused = await client.post(
        "/api/v1/forms", json={"name": "x", "list_ids": [foreign_list]}, headers=ws.headers
    )
    assert refused.json() == {"error": "list_ids[0]: List not found"}


async def test_the_embed_posts_to_the_hosted_page(client, ws, settings):
    form = await make_form(
        client,
        ws,
        fields=[{"key": "email"}, {"key": "first_name", "required": True}],
        consent_text="Weekly <b>news</b>",
        languages=["de", "en"],
    )
    embed = await ok(await client.get(f"/api/v1/forms/{form['id']}/embed", headers=ws.headers))
    html = embed["embed"]["html"]
    action = f"{settings.public_url.rstrip('/')}/f/{form['id']}?lang=de"
    assert f'action="{action}"' in html and 'method="post"' in html
    assert 'name="email"' in html and 'type="email"' in html and 'name="first_name"' in html
    assert 'name="hp"' in html and 'tabindex="-1"' in html  # the honeypot
    assert "Weekly &lt;b&gt;news&lt;/b&gt;" in html  # the owner's text, escaped
    assert ">Anmelden</button>" in html  # the form's first language
    assert "<script" not in html
    english = await ok(
        await client.get(f"/api/v1/forms/{form['id']}/embed?lang=en", headers=ws.headers)
    )
    assert ">Subscribe</button>" in english["embed"]["html"]
