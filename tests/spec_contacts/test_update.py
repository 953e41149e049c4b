"""Spec, PATCH /api/v1/contacts/{id} and States and transitions (Contact status): rules the
existing tests leave unchecked."""

from __future__ import annotations

import pytest

from tests.spec_contacts.helpers import (
    CONTACTS,
    create,
    events_of,
    get,
    ids,
    patch,
    suppress,
    suppression,
)

STATUS_MESSAGE = "status must be one of subscribed, unsubscribed, bounced, complained"


@pytest.mark.parametrize("status", ["", "SUBSCRIBED", "pending", "erased", None])
async def test_bad_status_uses_the_spec_message(client, ws, status):
    contact = await create(client, ws.headers, "st@mailtest.io")
    response = await patch(client, ws.headers, contact["id"], {"status": status})
    assert response.status_code == 400
    assert response.json() == {"error": STATUS_MESSAGE}
    assert (await get(client, ws.headers, contact["id"]))["status"] == "subscribed"


@pytest.mark.parametrize("status", [5, True, ["subscribed"]])
async def test_non_string_status_uses_the_spec_message(client, ws, status):
    """The spec's one message for a status PATCH cannot accept."""
    contact = await create(client, ws.headers, "st@mailtest.io")
    response = await patch(client, ws.headers, contact["id"], {"status": status})
    assert response.status_code == 400
    assert response.json() == {"error": STATUS_MESSAGE}
    assert (await get(client, ws.headers, contact["id"]))["status"] == "subscribed"


async def test_tenant_id_is_refused_even_when_it_is_the_own_workspace(client, ws):
    contact = await create(client, ws.headers, "t@mailtest.io", first_name="Ann")
    response = await patch(
        client, ws.headers, contact["id"], {"tenant_id": ws.workspace_id, "first_name": "Bo"}
    )
    assert response.status_code == 400
    assert set(response.json()) == {"error"}
    assert (await get(client, ws.headers, contact["id"]))["first_name"] == "Ann"


async def test_unknown_keys_are_listed(client, ws):
    contact = await create(client, ws.headers, "u@mailtest.io")
    response = await patch(
        client, ws.headers, contact["id"], {"first_name": "A", "tags": ["x"], "lists": []}
    )
    assert response.status_code == 400
    message = response.json()["error"]
    assert message.startswith("Unknown field(s): ")
    assert "tags" in message and "lists" in message
    assert (await get(client, ws.headers, contact["id"]))["first_name"] == ""


@pytest.mark.parametrize(
    "body",
    [{"resubscribe": False}, {"suppress": False}, {"replace_custom_fields": False}],
)
async def test_flags_alone_are_not_an_update(client, ws, body):
    contact = await create(client, ws.headers, "f@mailtest.io")
    response = await patch(client, ws.headers, contact["id"], body)
    assert response.status_code == 400
    assert response.json() == {"error": "No updatable fields provided"}


async def test_empty_custom_fields_without_flag_changes_nothing_and_emits_nothing(client, ws, db):
    contact = await create(client, ws.headers, "cf@mailtest.io", custom_fields={"a": "1"})
    response = await patch(client, ws.headers, contact["id"], {"custom_fields": {}})
    assert response.status_code == 200
    assert response.json()["contact"]["custom_fields"] == {"a": "1"}
    assert await events_of(db, ws.workspace_id, "contact.updated") == []


async def test_suppress_on_an_already_unsubscribed_contact_blocks_the_address(client, ws):
    contact = await create(client, ws.headers, "later@mailtest.io")
    await patch(client, ws.headers, contact["id"], {"status": "unsubscribed"})
    assert (await suppression(client, ws.headers, "later@mailtest.io"))["suppressed"] is False
    response = await patch(
        client, ws.headers, contact["id"], {"status": "unsubscribed", "suppress": True}
    )
    assert response.status_code == 200
    assert response.json()["suppressed"] is True
    check = await suppression(client, ws.headers, "later@mailtest.io")
    assert check["suppressed"] is True and check["reason"] == "unsubscribed"


async def test_suppress_is_written_only_after_the_update_succeeds(client, ws):
    await create(client, ws.headers, "taken@mailtest.io")
    contact = await create(client, ws.headers, "me@mailtest.io")
    await client.post(
        "/api/v1/custom-fields", json={"key": "n", "type": "number"}, headers=ws.headers
    )
    for body, status in (
        ({"email": "taken@mailtest.io"}, 409),
        ({"custom_fields": {"n": "not a number"}}, 400),
        ({"first_name": "x" * 101}, 400),
    ):
        response = await patch(
            client,
            ws.headers,
            contact["id"],
            {"status": "unsubscribed", "suppress": True, **body},
        )
        assert response.status_code == status, response.text
    for email in ("me@mailtest.io", "taken@mailtest.io"):
        assert (await suppression(client, ws.headers, email))["suppressed"] is False
    assert (await get(client, ws.headers, contact["id"]))["status"] == "subscribed"


async def test_rename_to_an_unsubscribed_address_needs_resubscribe(client, ws):
    await suppress(client, ws.headers, "gone@mailtest.io")
    contact = await create(client, ws.headers, "here@mailtest.io")
    refused = await patch(client, ws.headers, contact["id"], {"email": "Gone@mailtest.io"})
    assert refused.status_code == 409
    assert "signup form" in refused.json()["error"]
    assert "resubscribe: true" in refused.json()["error"]
    assert (await get(client, ws.headers, contact["id"]))["email"] == "here@mailtest.io"
    accepted = await patch(
        client, ws.headers, contact["id"], {"email": "gone@mailtest.io", "resubscribe": True}
    )
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["contact"]["email"] == "gone@mailtest.io"
    assert accepted.json()["contact"]["status"] == "subscribed"
    assert (await suppression(client, ws.headers, "gone@mailtest.io"))["suppressed"] is False


async def test_rename_to_a_deleted_address_is_409(client, ws):
    old = await create(client, ws.headers, "old@mailtest.io")
    await client.delete(f"{CONTACTS}/{old['id']}", headers=ws.headers)
    contact = await create(client, ws.headers, "new@mailtest.io")
    for extra in ({}, {"resubscribe": True}):
        response = await patch(
            client, ws.headers, contact["id"], {"email": "old@mailtest.io", **extra}
        )
        assert response.status_code == 409
        assert "signup form" in response.json()["error"]
    assert (await get(client, ws.headers, contact["id"]))["email"] == "new@mailtest.io"


async def test_rename_to_own_address_in_other_case_is_no_conflict(client, ws):
    contact = await create(client, ws.headers, "same@mailtest.io")
    response = await patch(client, ws.headers, contact["id"], {"email": "  SAME@MailTest.io "})
    assert response.status_code == 200
    assert response.json()["contact"]["email"] == "same@mailtest.io"


async def test_resubscribe_flag_on_unsubscribed_contact(client, ws, db):
    contact = await create(client, ws.headers, "r@mailtest.io", source="form")
    unsub = await patch(client, ws.headers, contact["id"], {"status": "unsubscribed"})
    assert unsub.json()["contact"]["unsubscribed_at"] is not None
    response = await patch(client, ws.headers, contact["id"], {"resubscribe": True})
    assert response.status_code == 200
    back = response.json()["contact"]
    assert back["status"] == "subscribed"
    assert back["unsubscribed_at"] is None
    assert back["subscribed_at"] > contact["subscribed_at"]
    assert back["source"] == "form"
    [event] = await events_of(db, ws.workspace_id, "contact.resubscribed")
    assert event.data["contact"]["status"] == "subscribed"


async def test_resubscribe_with_status_subscribed_is_not_another_status(client, ws):
    contact = await create(client, ws.headers, "rs@mailtest.io")
    await patch(client, ws.headers, contact["id"], {"status": "unsubscribed", "suppress": True})
    response = await patch(
        client, ws.headers, contact["id"], {"resubscribe": True, "status": "subscribed"}
    )
    assert response.status_code == 200
    assert response.json()["contact"]["status"] == "subscribed"


@pytest.mark.parametrize("status", ["bounced", "complained"])
async def test_resubscribe_cannot_be_combined_with_other_statuses(client, ws, status):
    contact = await create(client, ws.headers, "c@mailtest.io")
    response = await patch(
        client, ws.headers, contact["id"], {"resubscribe": True, "status": status}
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": f"resubscribe: true cannot be combined with status {status}"
    }


async def test_unsubscribe_sets_unsubscribed_at_and_emits_one_event(client, ws, db):
    contact = await create(client, ws.headers, "un@mailtest.io")
    response = await patch(client, ws.headers, contact["id"], {"status": "unsubscribed"})
    assert response.status_code == 200
    body = response.json()["contact"]
    assert body["status"] == "unsubscribed"
    assert body["unsubscribed_at"] >= body["subscribed_at"]
    stored = await get(client, ws.headers, contact["id"])
    assert stored["unsubscribed_at"] == body["unsubscribed_at"]
    assert len(await events_of(db, ws.workspace_id, "contact.unsubscribed")) == 1
    # Sending the same status again is no new unsubscription.
    again = await patch(client, ws.headers, contact["id"], {"status": "unsubscribed"})
    assert again.status_code == 200
    assert again.json()["contact"]["unsubscribed_at"] == body["unsubscribed_at"]
    assert len(await events_of(db, ws.workspace_id, "contact.unsubscribed")) == 1


async def test_complaint_outranks_a_bounce_on_the_list(client, ws):
    contact = await create(client, ws.headers, "bc@mailtest.io")
    await patch(client, ws.headers, contact["id"], {"status": "bounced"})
    assert (await suppression(client, ws.headers, "bc@mailtest.io"))["reason"] == "bounced"
    await patch(client, ws.headers, contact["id"], {"status": "complained"})
    assert (await suppression(client, ws.headers, "bc@mailtest.io"))["reason"] == "complained"
    await patch(client, ws.headers, contact["id"], {"status": "bounced"})
    assert (await suppression(client, ws.headers, "bc@mailtest.io"))["reason"] == "complained"


async def test_delete_never_downgrades_an_unsubscribe(client, ws):
    contact = await create(client, ws.headers, "ud@mailtest.io")
    await patch(client, ws.headers, contact["id"], {"status": "unsubscribed", "suppress": True})
    assert (
        await client.delete(f"{CONTACTS}/{contact['id']}", headers=ws.headers)
    ).status_code == 200
    check = await suppression(client, ws.headers, "ud@mailtest.io")
    assert check["suppressed"] is True and check["reason"] == "unsubscribed"
    lift = await client.post(
        "/api/v1/suppressions/lift", json={"email": "ud@mailtest.io"}, headers=ws.headers
    )
    assert lift.status_code == 409
    assert lift.json()["reason"] == "unsubscribed"


async def test_erase_after_unsubscribe_keeps_only_the_hash(client, ws):
    contact = await create(client, ws.headers, "eu@mailtest.io")
    await patch(client, ws.headers, contact["id"], {"status": "unsubscribed", "suppress": True})
    erased = await client.delete(
        f"{CONTACTS}/{contact['id']}", params={"mode": "erase"}, headers=ws.headers
    )
    assert erased.status_code == 200
    [row] = (await client.get("/api/v1/suppressions/list", headers=ws.headers)).json()[
        "suppressions"
    ]
    assert row["email_masked"] is None and row["email_domain"] is None
    assert row["contact"] is None and row["liftable"] is False


async def test_archive_from_bounced_keeps_the_address_blocked(client, ws):
    contact = await create(client, ws.headers, "ab@mailtest.io")
    await patch(client, ws.headers, contact["id"], {"status": "bounced"})
    archived = await patch(client, ws.headers, contact["id"], {"status": "archived"})
    assert archived.status_code == 200
    assert archived.json()["contact"]["status"] == "archived"
    assert await ids(client, ws.headers, status="bounced") == []
    assert await ids(client, ws.headers, status="archived") == [contact["id"]]
    refused = await patch(client, ws.headers, contact["id"], {"status": "subscribed"})
    assert refused.status_code == 409
    assert "previously bounced" in refused.json()["error"]
    assert (await get(client, ws.headers, contact["id"]))["status"] == "archived"


async def test_archive_keeps_the_previous_status_for_restore(client, ws):
    contact = await create(client, ws.headers, "ar@mailtest.io")
    await patch(client, ws.headers, contact["id"], {"status": "unsubscribed"})
    await patch(client, ws.headers, contact["id"], {"status": "archived"})
    restored = await client.post(
        f"{CONTACTS}/bulk",
        json={"action": "restore", "contact_ids": [contact["id"]]},
        headers=ws.headers,
    )
    assert restored.status_code == 200, restored.text
    assert (await get(client, ws.headers, contact["id"]))["status"] == "unsubscribed"


async def test_patch_answers_contact_with_tags_and_suppressed_only_with_suppress(client, ws):
    contact = await create(client, ws.headers, "shape@mailtest.io")
    plain = await patch(client, ws.headers, contact["id"], {"first_name": "A"})
    assert set(plain.json()) == {"contact"}
    assert plain.json()["contact"]["tags"] == []
    suppressed = await patch(
        client, ws.headers, contact["id"], {"status": "unsubscribed", "suppress": True}
    )
    assert set(suppressed.json()) == {"contact", "suppressed"}
    assert suppressed.json()["suppressed"] is True
