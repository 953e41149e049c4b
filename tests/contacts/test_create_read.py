"""POST /contacts and GET /contacts/{id}: field rules and messages, word for word."""

from __future__ import annotations

import pytest

from tests.contacts.helpers import CONTACT_EVENT_FIELDS, create, events_of


async def test_create_normalises_and_defaults(client, ws, db):
    response = await client.post(
        "/api/v1/contacts",
        json={"email": "  Jane.Doe@Example.COM ", "first_name": "Jane", "last_name": "Doe"},
        headers=ws.headers,
    )
    assert response.status_code == 201
    contact = response.json()["contact"]
    assert contact["email"] == "jane.doe@example.com"
    assert contact["status"] == "subscribed"
    assert contact["source"] == "api"
    assert contact["language"] is None
    assert contact["custom_fields"] == {}
    assert contact["tenant_id"] == ws.workspace_id
    assert contact["unsubscribed_at"] is None
    assert contact["subscribed_at"] and contact["created_at"]
    assert contact["tags"] == []
    again = await client.get(f"/api/v1/contacts/{contact['id']}", headers=ws.headers)
    assert again.status_code == 200
    assert again.json()["contact"]["email"] == "jane.doe@example.com"
    [event] = await events_of(db, ws.workspace_id, "contact.created")
    assert set(event.data["contact"]) == CONTACT_EVENT_FIELDS
    assert event.data["contact"]["id"] == contact["id"]


@pytest.mark.parametrize(
    ("language", "stored"),
    [("fr-FR", "fr"), ("pt_BR", "pt"), ("EN", "en"), ("de", "de"), ("", None), (None, None)],
)
async def test_language_is_reduced_to_iso_639_1(client, ws, language, stored):
    contact = await create(client, ws.headers, language=language)
    assert contact["language"] == stored


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "email is required"),
        ({"email": None}, "email is required"),
        ({"email": "   "}, "email is required"),
        ({"email": 42}, "email must be a string"),
        ({"email": "not-an-address"}, "Invalid email address"),
        ({"email": "a@b"}, "Invalid email address"),
        ({"email": "a" * 250 + "@x.io"}, "email must be 254 characters or fewer"),
        (
            {"email": "a@b.co", "first_name": "x" * 101},
            "first_name must be 100 characters or fewer",
        ),
        ({"email": "a@b.co", "last_name": "x" * 101}, "last_name must be 100 characters or fewer"),
        ({"email": "a@b.co", "first_name": 7}, "first_name must be a string"),
        ({"email": "a@b.co", "last_name": ["x"]}, "last_name must be a string"),
        ({"email": "a@b.co", "source": "s" * 41}, "source must be 40 characters or fewer"),
        ({"email": "a@b.co", "custom_fields": []}, "custom_fields must be an object"),
        ({"email": "a@b.co", "custom_fields": "x"}, "custom_fields must be an object"),
        (
            {"email": "a@b.co", "custom_fields": {f"k{i}": i for i in range(51)}},
            "custom_fields may have at most 50 keys",
        ),
        (
            {"email": "a@b.co", "custom_fields": {"bio": "x" * 201}},
            "custom_fields.bio must be 200 characters or fewer",
        ),
        (
            {"email": "a@b.co", "custom_fields": {"list": [1]}},
            "custom_fields.list must be a string, number or boolean",
        ),
        (
            {"email": "a@b.co", "custom_fields": {"obj": {"a": 1}}},
            "custom_fields.obj must be a string, number or boolean",
        ),
        ({"email": "a@b.co", "resubscribe": "yes"}, "resubscribe must be true or false"),
        ({"email": "a@b.co", "resubscribe": 1}, "resubscribe must be true or false"),
    ],
)
async def test_create_refusals_use_the_spec_messages(client, ws, body, message):
    response = await client.post("/api/v1/contacts", json=body, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": message}
    listing = await client.get("/api/v1/contacts", headers=ws.headers)
    assert listing.json()["pagination"]["total"] == 0


async def test_unknown_language_is_400(client, ws):
    response = await client.post(
        "/api/v1/contacts", json={"email": "a@b.co", "language": "xx"}, headers=ws.headers
    )
    assert response.status_code == 400
    assert response.json()["error"].startswith("language must be an ISO 639-1 code")


async def test_email_length_limit_is_254(client, ws):
    email = "a" * 64 + "@" + "b" * 63 + "." + "c" * 63 + "." + "d" * 57 + ".com"
    assert len(email) == 254
    response = await client.post("/api/v1/contacts", json={"email": email}, headers=ws.headers)
    assert response.status_code == 201, response.text
    longer = "a" * 64 + "@" + "b" * 63 + "." + "c" * 63 + "." + "d" * 58 + ".com"
    response = await client.post("/api/v1/contacts", json={"email": longer}, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": "email must be 254 characters or fewer"}


async def test_duplicate_email_is_409(client, ws):
    await create(client, ws.headers, "dup@example.com")
    response = await client.post(
        "/api/v1/contacts", json={"email": "DUP@example.com "}, headers=ws.headers
    )
    assert response.status_code == 409
    assert response.json()["error"] == "A contact with this email already exists"


async def test_duplicate_with_resubscribe_points_at_patch(client, ws):
    existing = await create(client, ws.headers, "dup@example.com")
    response = await client.post(
        "/api/v1/contacts",
        json={"email": "dup@example.com", "resubscribe": True},
        headers=ws.headers,
    )
    assert response.status_code == 409
    message = response.json()["error"]
    assert message.startswith("A contact with this email already exists")
    assert "PATCH" in message and existing["id"] in message and "resubscribe" in message


async def test_nulls_in_custom_fields_are_dropped_on_create(client, ws):
    contact = await create(
        client, ws.headers, custom_fields={"plan": "gold", "gone": None, "n": 3, "ok": True}
    )
    assert contact["custom_fields"] == {"plan": "gold", "n": 3, "ok": True}


@pytest.mark.parametrize("key", ["__proto__", "constructor", "prototype"])
async def test_reserved_custom_field_keys_are_refused(client, ws, key):
    response = await client.post(
        "/api/v1/contacts", json={"email": "a@b.co", "custom_fields": {key: 1}}, headers=ws.headers
    )
    assert response.status_code == 400


async def test_unknown_id_is_404(client, ws):
    for method in ("get", "patch", "delete"):
        kwargs = {"json": {"first_name": "x"}} if method == "patch" else {}
        response = await client.request(
            method.upper(), "/api/v1/contacts/no-such-id", headers=ws.headers, **kwargs
        )
        assert response.status_code == 404
        assert response.json() == {"error": "Contact not found"}


async def test_get_one_carries_tags(client, ws):
    contact = await create(client, ws.headers)
    tag = (await client.post("/api/v1/tags", json={"name": "VIP"}, headers=ws.headers)).json()
    await client.post(
        f"/api/v1/contacts/{contact['id']}/tags",
        json={"tag_id": tag["tag"]["id"]},
        headers=ws.headers,
    )
    body = (await client.get(f"/api/v1/contacts/{contact['id']}", headers=ws.headers)).json()
    [attached] = body["contact"]["tags"]
    assert set(attached) == {"id", "name", "color", "assigned_at"}
    assert attached["name"] == "VIP"


async def test_permissions(client, factory):
    reader = await factory.workspace(permissions="contacts:read")
    response = await client.post(
        "/api/v1/contacts", json={"email": "a@b.co"}, headers=reader.headers
    )
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: contacts:write permission required"}
    writer = await factory.workspace(permissions="contacts:write")
    response = await client.get("/api/v1/contacts", headers=writer.headers)
    assert response.json() == {"error": "Forbidden: contacts:read permission required"}
