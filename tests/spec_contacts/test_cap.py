"""Spec, Limits (Contacts, pooled across an account's workspaces) and the 403 message
`Contact limit reached (<n> on the <plan> plan). Upgrade to add more.`"""

from __future__ import annotations

import pytest

from tests.spec_contacts.helpers import (
    CONTACTS,
    create,
    events_of,
    fill,
    get,
    listing,
    patch,
    suppress,
    suppression,
)

FREE_FULL = {"error": "Contact limit reached (500 on the Free plan). Upgrade to add more."}


@pytest.mark.parametrize(("plan", "cap", "label"), [("pro", 10000, "Pro")])
async def test_cap_message_names_the_plan(client, factory, db, plan, cap, label):
    workspace = await factory.workspace(plan, listen=False)
    await fill(db, workspace.workspace_id, cap - 1)
    await create(client, workspace.headers, "last@mailtest.io")
    response = await client.post(
        CONTACTS, json={"email": "over@mailtest.io"}, headers=workspace.headers
    )
    assert response.status_code == 403
    assert response.json() == {
        "error": f"Contact limit reached ({cap} on the {label} plan). Upgrade to add more."
    }
    assert (await listing(client, workspace.headers, q="over@"))["contacts"] == []


async def test_archiving_frees_a_slot_and_unarchiving_needs_one(client, factory, db):
    free = await factory.workspace("free", listen=False)
    await fill(db, free.workspace_id, 499)
    contact = await create(client, free.headers, "a@mailtest.io")
    full = await client.post(CONTACTS, json={"email": "b@mailtest.io"}, headers=free.headers)
    assert full.status_code == 403 and full.json() == FREE_FULL
    archived = await patch(client, free.headers, contact["id"], {"status": "archived"})
    assert archived.status_code == 200
    await create(client, free.headers, "b@mailtest.io")
    back = await patch(client, free.headers, contact["id"], {"status": "subscribed"})
    assert back.status_code == 403
    assert back.json() == FREE_FULL
    assert (await get(client, free.headers, contact["id"]))["status"] == "archived"


async def test_bounced_and_complained_contacts_do_not_count(client, factory, db):
    free = await factory.workspace("free", listen=False)
    await fill(db, free.workspace_id, 498)
    one = await create(client, free.headers, "one@mailtest.io")
    two = await create(client, free.headers, "two@mailtest.io")
    assert (
        await client.post(CONTACTS, json={"email": "x@mailtest.io"}, headers=free.headers)
    ).status_code == 403
    await patch(client, free.headers, one["id"], {"status": "bounced"})
    await patch(client, free.headers, two["id"], {"status": "complained"})
    await create(client, free.headers, "x@mailtest.io")
    await create(client, free.headers, "y@mailtest.io")


async def test_deleting_frees_a_slot(client, factory, db):
    free = await factory.workspace("free", listen=False)
    await fill(db, free.workspace_id, 499)
    contact = await create(client, free.headers, "d@mailtest.io")
    assert (
        await client.delete(f"{CONTACTS}/{contact['id']}", headers=free.headers)
    ).status_code == 200
    await create(client, free.headers, "e@mailtest.io")


async def test_resubscribe_at_the_cap_is_refused_and_keeps_the_suppression(client, factory, db):
    free = await factory.workspace("free", listen=False)
    contact = await create(client, free.headers, "r@mailtest.io")
    await patch(client, free.headers, contact["id"], {"status": "unsubscribed", "suppress": True})
    await suppress(client, free.headers, "new@mailtest.io")
    await fill(db, free.workspace_id, 500)
    refused = await patch(client, free.headers, contact["id"], {"resubscribe": True})
    assert refused.status_code == 403
    assert refused.json() == FREE_FULL
    assert (await get(client, free.headers, contact["id"]))["status"] == "unsubscribed"
    assert (await suppression(client, free.headers, "r@mailtest.io"))["suppressed"] is True
    created = await client.post(
        CONTACTS, json={"email": "new@mailtest.io", "resubscribe": True}, headers=free.headers
    )
    assert created.status_code == 403
    assert created.json() == FREE_FULL
    assert (await suppression(client, free.headers, "new@mailtest.io"))["suppressed"] is True


async def test_cap_refusal_writes_no_event(client, factory, db):
    free = await factory.workspace("free")
    await fill(db, free.workspace_id, 500)
    refused = await client.post(CONTACTS, json={"email": "z@mailtest.io"}, headers=free.headers)
    assert refused.status_code == 403
    assert await events_of(db, free.workspace_id, "contact.created") == []


async def test_pool_is_shared_by_the_workspaces_of_one_account(client, factory, db):
    """A second workspace of the same account shares the cap; unsubscribed rows are free."""
    first = await factory.workspace("starter", listen=False)
    second = await factory.workspace(account_id=first.account_id, listen=False)
    await fill(db, first.workspace_id, 2000)
    await fill(db, second.workspace_id, 499)
    await fill(db, second.workspace_id, 300, status="unsubscribed")
    await create(client, second.headers, "last@mailtest.io")
    for workspace in (first, second):
        refused = await client.post(
            CONTACTS, json={"email": "over@mailtest.io"}, headers=workspace.headers
        )
        assert refused.status_code == 403
        assert refused.json() == {
            "error": "Contact limit reached (2500 on the Starter plan). Upgrade to add more."
        }
