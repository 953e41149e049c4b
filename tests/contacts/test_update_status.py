"""PATCH /contacts/{id}: the status machine, its flags and their conflicts."""

from __future__ import annotations

import pytest

from tests.contacts.helpers import create, events_of


async def _patch(client, ws, contact_id, body):
    return await client.patch(f"/api/v1/contacts/{contact_id}", json=body, headers=ws.headers)


async def _get(client, ws, contact_id):
    return (await client.get(f"/api/v1/contacts/{contact_id}", headers=ws.headers)).json()[
        "contact"
    ]


async def _suppression(client, ws, email):
    return (
        await client.get("/api/v1/suppressions", params={"email": email}, headers=ws.headers)
    ).json()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "No updatable fields provided"),
        ({"bogus": 1, "nope": 2}, "Unknown field(s): bogus, nope"),
        ({"id": "x"}, "Unknown field(s): id"),
        ({"tenant_id": "other"}, "tenant_id is read-only"),
        (
            {"status": "pending"},
            "status must be one of subscribed, unsubscribed, bounced, complained",
        ),
        (
            {"status": "deleted"},
            "status must be one of subscribed, unsubscribed, bounced, complained",
        ),
        ({"suppress": True}, "suppress: true requires status: unsubscribed"),
        ({"status": "bounced", "suppress": True}, "suppress: true requires status: unsubscribed"),
        (
            {"status": "unsubscribed", "suppress": True, "resubscribe": True},
            "suppress: true cannot be combined with resubscribe: true",
        ),
        (
            {"resubscribe": True, "status": "unsubscribed"},
            "resubscribe: true cannot be combined with status unsubscribed",
        ),
        (
            {"resubscribe": True, "status": "archived"},
            "resubscribe: true cannot be combined with status archived",
        ),
        ({"replace_custom_fields": True}, "replace_custom_fields: true requires custom_fields"),
        ({"suppress": "yes", "status": "unsubscribed"}, "suppress must be true or false"),
        ({"resubscribe": "true"}, "resubscribe must be true or false"),
        (
            {"replace_custom_fields": 1, "custom_fields": {}},
            "replace_custom_fields must be true or false",
        ),
        ({"first_name": "x" * 101}, "first_name must be 100 characters or fewer"),
        ({"email": "nope"}, "Invalid email address"),
        ({"language": "zz"}, None),
    ],
)
async def test_patch_refusals_change_nothing(client, ws, body, message):
    contact = await create(client, ws.headers, first_name="Jane")
    response = await _patch(client, ws, contact["id"], body)
    assert response.status_code == 400
    if message:
        assert response.json() == {"error": message}
    after = await _get(client, ws, contact["id"])
    assert after["first_name"] == "Jane" and after["status"] == "subscribed"
    assert after["updated_at"] == contact["updated_at"]


async def test_field_updates_and_language_clearing(client, ws, db):
    contact = await create(client, ws.headers, language="fr", source="form")
    response = await _patch(
        client,
        ws,
        contact["id"],
        {"first_name": " Ann ", "last_name": "Lee", "language": "pt_BR", "source": "crm"},
    )
    assert response.status_code == 200
    body = response.json()
    assert "suppressed" not in body
    updated = body["contact"]
    assert (updated["first_name"], updated["last_name"]) == ("Ann", "Lee")
    assert updated["language"] == "pt" and updated["source"] == "crm"
    for cleared in (None, ""):
        await _patch(client, ws, contact["id"], {"language": "de"})
        response = await _patch(client, ws, contact["id"], {"language": cleared})
        assert response.json()["contact"]["language"] is None
    assert len(await events_of(db, ws.workspace_id, "contact.updated")) >= 3


async def test_rename_to_existing_address_is_409(client, ws):
    await create(client, ws.headers, "taken@example.com")
    contact = await create(client, ws.headers, "me@example.com")
    response = await _patch(client, ws, contact["id"], {"email": "TAKEN@example.com"})
    assert response.status_code == 409
    assert response.json()["error"] == "A contact with this email already exists"
    response = await _patch(client, ws, contact["id"], {"email": " New@Example.com"})
    assert response.json()["contact"]["email"] == "new@example.com"


async def test_custom_fields_merge_remove_and_replace(client, ws):
    contact = await create(client, ws.headers, custom_fields={"a": 1, "b": "x"})
    cid = contact["id"]
    merged = await _patch(client, ws, cid, {"custom_fields": {"c": True, "a": None}})
    assert merged.json()["contact"]["custom_fields"] == {"b": "x", "c": True}
    same = await _patch(client, ws, cid, {"custom_fields": {}})
    assert same.json()["contact"]["custom_fields"] == {"b": "x", "c": True}
    replaced = await _patch(
        client, ws, cid, {"custom_fields": {"z": "only"}, "replace_custom_fields": True}
    )
    assert replaced.json()["contact"]["custom_fields"] == {"z": "only"}
    emptied = await _patch(client, ws, cid, {"custom_fields": {}, "replace_custom_fields": True})
    assert emptied.json()["contact"]["custom_fields"] == {}


async def test_unsubscribe_without_suppress_does_not_block(client, ws, db):
    contact = await create(client, ws.headers, "u@example.com")
    response = await _patch(client, ws, contact["id"], {"status": "unsubscribed"})
    assert response.status_code == 200
    body = response.json()
    assert "suppressed" not in body
    assert body["contact"]["status"] == "unsubscribed"
    assert body["contact"]["unsubscribed_at"] is not None
    assert (await _suppression(client, ws, "u@example.com"))["suppressed"] is False
    [event] = await events_of(db, ws.workspace_id, "contact.unsubscribed")
    assert event.data["contact"]["status"] == "unsubscribed"
    # Not blocked: setting subscribed again is allowed and counts as a resubscription.
    back = await _patch(client, ws, contact["id"], {"status": "subscribed"})
    assert back.status_code == 200
    assert back.json()["contact"]["status"] == "subscribed"
    assert back.json()["contact"]["unsubscribed_at"] is None
    assert len(await events_of(db, ws.workspace_id, "contact.resubscribed")) == 1


async def test_unsubscribe_with_suppress_blocks_and_reports(client, ws):
    contact = await create(client, ws.headers, "s@example.com")
    response = await _patch(client, ws, contact["id"], {"status": "unsubscribed", "suppress": True})
    assert response.status_code == 200
    assert response.json()["suppressed"] is True
    check = await _suppression(client, ws, "s@example.com")
    assert check["suppressed"] is True and check["reason"] == "unsubscribed"
    refused = await _patch(client, ws, contact["id"], {"status": "subscribed"})
    assert refused.status_code == 409
    assert "signup form" in refused.json()["error"]
    assert "resubscribe: true" in refused.json()["error"]
    assert (await _get(client, ws, contact["id"]))["status"] == "unsubscribed"


async def test_resubscribe_lifts_an_unsubscribe_entry(client, ws, db):
    contact = await create(client, ws.headers, "r@example.com", source="form")
    await _patch(client, ws, contact["id"], {"status": "unsubscribed", "suppress": True})
    response = await _patch(client, ws, contact["id"], {"resubscribe": True})
    assert response.status_code == 200
    updated = response.json()["contact"]
    assert updated["status"] == "subscribed"
    assert updated["unsubscribed_at"] is None
    assert updated["subscribed_at"] > contact["subscribed_at"]
    assert updated["source"] == "form"
    assert (await _suppression(client, ws, "r@example.com"))["suppressed"] is False
    assert len(await events_of(db, ws.workspace_id, "contact.resubscribed")) == 1


@pytest.mark.parametrize(
    ("status", "phrase"),
    [("bounced", "previously bounced"), ("complained", "reported spam")],
)
async def test_bounce_and_complaint_are_permanent(client, ws, db, status, phrase):
    contact = await create(client, ws.headers, f"{status}@example.com")
    response = await _patch(client, ws, contact["id"], {"status": status})
    assert response.status_code == 200
    assert response.json()["contact"]["status"] == status
    assert (await _suppression(client, ws, f"{status}@example.com"))["reason"] == status
    assert len(await events_of(db, ws.workspace_id, f"contact.{status}")) == 1
    for body in ({"resubscribe": True}, {"status": "subscribed"}):
        refused = await _patch(client, ws, contact["id"], body)
        assert refused.status_code == 409
        assert phrase in refused.json()["error"]
        assert refused.json()["reason"] == status
    # A weaker reason never downgrades it.
    await _patch(client, ws, contact["id"], {"status": "unsubscribed", "suppress": True})
    assert (await _suppression(client, ws, f"{status}@example.com"))["reason"] == status


async def test_suppress_reports_false_when_already_stronger(client, ws):
    contact = await create(client, ws.headers, "x@example.com")
    await _patch(client, ws, contact["id"], {"status": "complained"})
    response = await _patch(client, ws, contact["id"], {"status": "unsubscribed", "suppress": True})
    assert response.status_code == 200
    assert response.json()["suppressed"] is False
    assert (await _suppression(client, ws, "x@example.com"))["reason"] == "complained"


async def test_rename_to_suppressed_address_is_409(client, ws):
    await client.post(
        "/api/v1/suppressions",
        json={"entries": ["blocked@example.com"], "reason": "bounced"},
        headers=ws.headers,
    )
    contact = await create(client, ws.headers, "free@example.com")
    response = await _patch(client, ws, contact["id"], {"email": "blocked@example.com"})
    assert response.status_code == 409
    assert "previously bounced" in response.json()["error"]
    assert (await _get(client, ws, contact["id"]))["email"] == "free@example.com"


async def test_archive_hides_and_keeps_previous_status(client, ws):
    contact = await create(client, ws.headers, "arch@example.com")
    await _patch(client, ws, contact["id"], {"status": "unsubscribed"})
    response = await _patch(client, ws, contact["id"], {"status": "archived"})
    assert response.json()["contact"]["status"] == "archived"
    listing = (await client.get("/api/v1/contacts", headers=ws.headers)).json()
    assert listing["pagination"]["total"] == 0
    archived = (
        await client.get("/api/v1/contacts", params={"status": "archived"}, headers=ws.headers)
    ).json()
    assert [c["id"] for c in archived["contacts"]] == [contact["id"]]
    assert (await _suppression(client, ws, "arch@example.com"))["suppressed"] is False


async def test_create_over_suppressed_addresses(client, ws):
    for reason in ("bounced", "complained"):
        await client.post(
            "/api/v1/suppressions",
            json={"entries": [f"{reason}@example.com"], "reason": reason},
            headers=ws.headers,
        )
        for resubscribe in (False, True):
            response = await client.post(
                "/api/v1/contacts",
                json={"email": f"{reason}@example.com", "resubscribe": resubscribe},
                headers=ws.headers,
            )
            assert response.status_code == 409
            assert response.json()["reason"] == reason
    await client.post(
        "/api/v1/suppressions", json={"entries": ["u@example.com"]}, headers=ws.headers
    )
    refused = await client.post(
        "/api/v1/contacts", json={"email": "u@example.com"}, headers=ws.headers
    )
    assert refused.status_code == 409
    assert "resubscribe: true" in refused.json()["error"]
    accepted = await client.post(
        "/api/v1/contacts", json={"email": "u@example.com", "resubscribe": True}, headers=ws.headers
    )
    assert accepted.status_code == 201
    assert (await _suppression(client, ws, "u@example.com"))["suppressed"] is False
    deleted = await create(client, ws.headers, "gone@example.com")
    await client.delete(f"/api/v1/contacts/{deleted['id']}", headers=ws.headers)
    for resubscribe in (False, True):
        response = await client.post(
            "/api/v1/contacts",
            json={"email": "gone@example.com", "resubscribe": resubscribe},
            headers=ws.headers,
        )
        assert response.status_code == 409
        assert "signup form" in response.json()["error"]
