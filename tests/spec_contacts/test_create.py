"""Spec, Resources (Contact) and Endpoints (POST /api/v1/contacts): the gaps the existing
contact tests leave, checked through the API the way a new user would try them."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from tests.spec_contacts.helpers import (
    CONTACT_FIELDS,
    CONTACTS,
    EVENT_CONTACT_FIELDS,
    create,
    events_of,
    get,
    listing,
    patch,
    suppress,
    suppression,
)


def _ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def test_create_answers_201_with_every_contact_field(client, ws):
    before = datetime.now(UTC)
    response = await client.post(CONTACTS, json={"email": "new@mailtest.io"}, headers=ws.headers)
    assert response.status_code == 201
    assert set(response.json()) == {"contact"}
    contact = response.json()["contact"]
    assert set(contact) >= CONTACT_FIELDS
    uuid.UUID(contact["id"])
    uuid.UUID(contact["tenant_id"])
    assert contact["tenant_id"] == ws.workspace_id
    for name in ("subscribed_at", "created_at"):
        stamp = _ts(contact[name])
        assert stamp.tzinfo is not None
        assert before - timedelta(seconds=5) <= stamp <= datetime.now(UTC) + timedelta(seconds=5)
    assert contact["status"] == "subscribed"
    assert contact["first_name"] == "" or contact["first_name"] is None
    assert contact["custom_fields"] == {}


async def test_status_sent_on_create_is_not_used(client, ws):
    """ "The contact is created `subscribed`": a status in the body does not change that."""
    response = await client.post(
        CONTACTS, json={"email": "s@mailtest.io", "status": "unsubscribed"}, headers=ws.headers
    )
    assert response.status_code in (201, 400)
    if response.status_code == 201:
        contact = response.json()["contact"]
        assert contact["status"] == "subscribed"
        assert (await get(client, ws.headers, contact["id"]))["status"] == "subscribed"


async def test_tenant_id_sent_on_create_never_moves_the_contact(client, ws, factory):
    other = await factory.workspace("pro")
    response = await client.post(
        CONTACTS,
        json={"email": "t@mailtest.io", "tenant_id": other.workspace_id},
        headers=ws.headers,
    )
    assert response.status_code in (201, 400)
    if response.status_code == 201:
        assert response.json()["contact"]["tenant_id"] == ws.workspace_id
    theirs = await listing(client, other.headers)
    assert theirs["contacts"] == [] and theirs["pagination"]["total"] == 0


async def test_email_is_trimmed_before_the_254_limit(client, ws):
    email = "a" * 64 + "@" + "b" * 63 + "." + "c" * 63 + "." + "d" * 57 + ".com"
    assert len(email) == 254
    contact = await create(client, ws.headers, f"   {email.upper()}\t ")
    assert contact["email"] == email


async def test_names_and_source_at_their_limits_are_accepted(client, ws):
    contact = await create(
        client,
        ws.headers,
        "limits@mailtest.io",
        first_name="F" * 100,
        last_name="L" * 100,
        source="s" * 40,
    )
    stored = await get(client, ws.headers, contact["id"])
    assert stored["first_name"] == "F" * 100
    assert stored["last_name"] == "L" * 100
    assert stored["source"] == "s" * 40


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"source": 5}, "source must be a string"),
        ({"source": "s" * 41}, "source must be 40 characters or fewer"),
        ({"custom_fields": 3}, "custom_fields must be an object"),
        ({"resubscribe": None}, "resubscribe must be true or false"),
        ({"resubscribe": "false"}, "resubscribe must be true or false"),
    ],
)
async def test_more_create_refusals(client, ws, body, message):
    response = await client.post(
        CONTACTS, json={"email": "x@mailtest.io", **body}, headers=ws.headers
    )
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert (await listing(client, ws.headers))["pagination"]["total"] == 0


@pytest.mark.parametrize(
    ("language", "stored"),
    [("en-US", "en"), ("zh-Hant-TW", "zh"), ("EN_gb", "en"), ("pt_BR", "pt"), ("fr-FR", "fr")],
)
async def test_regional_language_tags_reduce_to_the_primary_code(client, ws, language, stored):
    contact = await create(client, ws.headers, "lang@mailtest.io", language=language)
    assert contact["language"] == stored
    assert (await get(client, ws.headers, contact["id"]))["language"] == stored


@pytest.mark.parametrize("language", ["fra", "xx", "zz-ZZ", "english", "e"])
async def test_unknown_language_codes_are_400_and_store_nothing(client, ws, language):
    response = await client.post(
        CONTACTS, json={"email": "lang@mailtest.io", "language": language}, headers=ws.headers
    )
    assert response.status_code == 400
    assert set(response.json()) == {"error"}
    assert (await listing(client, ws.headers))["pagination"]["total"] == 0


@pytest.mark.parametrize(
    "email",
    [
        # Placeholder-looking addresses are skipped by the importer only (Import rule 10);
        # normal creation takes every valid address.
        "someone@example.com",
        "abuse@example.org",
        "postmaster@sub.example.net",
        "user@shop.test",
        "user@shop.invalid",
        "user@shop.example",
        # Internationalised local parts are valid: the service takes them at example.com...
        "josé@example.com",
        # ...so they are equally valid on any other domain.
        "josé@shop.test",
        "ünal@shop.invalid",
    ],
)
async def test_every_valid_address_is_accepted_on_create(client, ws, email):
    response = await client.post(CONTACTS, json={"email": email}, headers=ws.headers)
    assert response.status_code == 201, response.text
    assert response.json()["contact"]["email"] == email


async def test_archived_contact_still_holds_its_address(client, ws):
    contact = await create(client, ws.headers, "arch@mailtest.io")
    assert (
        await patch(client, ws.headers, contact["id"], {"status": "archived"})
    ).status_code == 200
    response = await client.post(CONTACTS, json={"email": "ARCH@mailtest.io"}, headers=ws.headers)
    assert response.status_code == 409
    assert response.json()["error"] == "A contact with this email already exists"


@pytest.mark.parametrize(
    ("reason", "phrase"),
    [
        ("bounced", "previously bounced and cannot be re-added"),
        ("complained", "previously reported spam and cannot be re-added"),
    ],
)
async def test_create_over_bounce_or_complaint_messages(client, ws, reason, phrase):
    await suppress(client, ws.headers, "blocked@mailtest.io", reason)
    response = await client.post(
        CONTACTS, json={"email": " Blocked@MailTest.io"}, headers=ws.headers
    )
    assert response.status_code == 409
    assert phrase in response.json()["error"]
    assert (await listing(client, ws.headers))["pagination"]["total"] == 0


async def test_create_over_unsubscribe_names_both_ways_back(client, ws):
    await suppress(client, ws.headers, "u@mailtest.io")
    response = await client.post(CONTACTS, json={"email": "u@mailtest.io"}, headers=ws.headers)
    assert response.status_code == 409
    message = response.json()["error"]
    assert "signup form" in message and "resubscribe: true" in message
    assert (await suppression(client, ws.headers, "u@mailtest.io"))["suppressed"] is True


async def test_erased_address_can_only_return_through_a_form(client, ws):
    contact = await create(client, ws.headers, "erased@mailtest.io")
    erased = await client.delete(
        f"{CONTACTS}/{contact['id']}", params={"mode": "erase"}, headers=ws.headers
    )
    assert erased.status_code == 200
    for resubscribe in (False, True):
        response = await client.post(
            CONTACTS,
            json={"email": "erased@mailtest.io", "resubscribe": resubscribe},
            headers=ws.headers,
        )
        assert response.status_code == 409
        assert "signup form" in response.json()["error"]
    assert (await listing(client, ws.headers))["pagination"]["total"] == 0


async def test_plain_delete_lifted_lets_the_address_back(client, ws):
    contact = await create(client, ws.headers, "back@mailtest.io")
    assert (
        await client.delete(f"{CONTACTS}/{contact['id']}", headers=ws.headers)
    ).status_code == 200
    lift = await client.post(
        "/api/v1/suppressions/lift", json={"email": "back@mailtest.io"}, headers=ws.headers
    )
    assert lift.status_code == 200
    assert lift.json() == {"lifted": True, "reason": "deleted"}
    again = await create(client, ws.headers, "back@mailtest.io")
    assert again["status"] == "subscribed" and again["id"] != contact["id"]


async def test_resubscribe_create_writes_contact_created(client, ws, db):
    await suppress(client, ws.headers, "re@mailtest.io")
    contact = await create(client, ws.headers, "re@mailtest.io", resubscribe=True)
    assert contact["status"] == "subscribed"
    [event] = await events_of(db, ws.workspace_id, "contact.created")
    assert set(event.data["contact"]) == EVENT_CONTACT_FIELDS
    assert event.data["contact"]["email"] == "re@mailtest.io"
    assert event.data["contact"]["status"] == "subscribed"


async def test_refused_create_writes_no_event(client, ws, db):
    await create(client, ws.headers, "dup@mailtest.io")
    await suppress(client, ws.headers, "b@mailtest.io", "bounced")
    for body in (
        {"email": "dup@mailtest.io"},
        {"email": "b@mailtest.io"},
        {"email": "bad"},
        {"email": "ok@mailtest.io", "custom_fields": {"a": [1]}},
    ):
        response = await client.post(CONTACTS, json=body, headers=ws.headers)
        assert response.status_code in (400, 409)
    assert len(await events_of(db, ws.workspace_id, "contact.created")) == 1


async def test_single_get_returns_tags_in_the_tag_shape(client, ws):
    contact = await create(client, ws.headers, "tagged@mailtest.io")
    tag = (await client.post("/api/v1/tags", json={"name": "VIP"}, headers=ws.headers)).json()[
        "tag"
    ]
    attached = await client.post(
        f"{CONTACTS}/{contact['id']}/tags", json={"tag_id": tag["id"]}, headers=ws.headers
    )
    assert attached.status_code == 201
    assert set(attached.json()) == {"contact_tag"}
    assert set(attached.json()["contact_tag"]) == {"contact_id", "tag_id", "created_at"}
    one = await get(client, ws.headers, contact["id"])
    [element] = one["tags"]
    assert element["id"] == tag["id"] and element["name"] == "VIP"
    assert element["color"].startswith("#") and len(element["color"]) in (4, 7)
    int(element["color"][1:], 16)
    _ts(element["assigned_at"])
    listed = await client.get(f"{CONTACTS}/{contact['id']}/tags", headers=ws.headers)
    assert listed.status_code == 200
    assert listed.json() == {"tags": [element]}
