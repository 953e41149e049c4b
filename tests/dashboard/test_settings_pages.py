"""The account page (plan, limits, usage, sending health) for everyone, and the audit log for
admins: who did what (a person or a key, by name), filtered by who, operation and dates."""

from __future__ import annotations

import re
from contextlib import aclosing

from tests.dashboard.helpers import csrf_of, signed_in
from tests.sending.helpers import ok


async def test_the_account_page_shows_the_plan_and_usage(app, client, db, settings, ws):
    await ok(
        await client.post("/api/v1/contacts", json={"email": "a@shop.example"}, headers=ws.headers),
        201,
    )
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/settings/account")
    assert page.status_code == 200 and "Pro plan" in page.text
    assert re.search(
        r'Subscribed contacts \(all workspaces\)</td><td data-label="Used">1</td>', page.text
    )
    assert "Emails this month" in page.text and "Sending is on." in page.text


async def test_the_audit_log_names_people_and_keys_and_filters(app, client, db, settings, ws):
    await ok(
        await client.post("/api/v1/contacts", json={"email": "a@shop.example"}, headers=ws.headers),
        201,
    )
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        keys = await admin.get("/settings/api-keys")
        await admin.post("/settings/api-keys", data={"csrf": csrf_of(keys.text), "name": "Sync"})
        log = await admin.get("/settings/audit-log")
        assert log.status_code == 200
        assert (
            "<code>create_contact</code>" in log.text and "<code>create_api_key</code>" in log.text
        )
        assert (
            "ada@shop.example" in log.text and f"mr_live_{ws.api_key.split('_')[2]}_…" in log.text
        )
        person = re.search(
            r'<option value="(person:[^"]+)">ada@shop.example</option>', log.text
        ).group(1)
        mine = await admin.get("/settings/audit-log", params={"who": person})
        assert (
            "<code>create_api_key</code>" in mine.text
            and "<code>create_contact</code>" not in mine.text
        )
        by_op = await admin.get("/settings/audit-log", params={"operation": "create_contact"})
        assert (
            "<code>create_api_key</code>" not in by_op.text
            and "<code>create_contact</code>" in by_op.text
        )
        later = await admin.get("/settings/audit-log", params={"since": "2999-01-01"})
        assert "Nothing matches." in later.text
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        assert (await member.get("/settings/audit-log")).status_code == 403
