"""`/settings/webhooks` (admins): add a server or Slack endpoint with events and filters, its
secret shown once, refusals that change nothing, send a test (plain form and htmx), turn it
off and on (the failure count starts again), rotate the secret, read the delivery log with
payloads, delete it; members get the 403 page and another workspace's endpoint is 404."""

from __future__ import annotations

import json
import re
from contextlib import aclosing

from sqlalchemy import update

from mailroom.models import WebhookEndpoint
from tests.dashboard.helpers import csrf_of, signed_in
from tests.webhooks.conftest import driver, hook_settings, pro, receiver  # noqa: F401
from tests.webhooks.helpers import create_contact, hook_by_id, hook_list, verify_by_hand

SECRET = re.compile(r'id="hook-secret"[^>]*>([^<]+)</textarea>')


def endpoint_id_of(page_url: str) -> str:
    return page_url.rstrip("/").rsplit("/", 1)[1]


async def add(admin, token: str, **fields) -> object:
    data = {"csrf": token, "description": "", "channel": "", **fields}
    return await admin.post("/settings/webhooks", data=data)


async def test_add_a_server_endpoint_and_see_its_secret_once(
    app,
    client,
    db,
    hook_settings,  # noqa: F811
    pro,  # noqa: F811
    receiver,  # noqa: F811
):
    news = await client.post("/api/v1/lists", json={"name": "News"}, headers=pro.headers)
    list_id = news.json()["list"]["id"]
    admin = await signed_in(app, db, hook_settings, pro, "ada@shop.example")
    async with aclosing(admin):
        page = await admin.get("/settings/webhooks")
        assert page.status_code == 200 and "No endpoints yet." in page.text
        assert 'value="contact.created"' in page.text and f'value="{list_id}"' in page.text
        token = csrf_of(page.text)
        added = await add(
            admin,
            token,
            url=receiver.url("ok/crm"),
            description="CRM sync",
            event=["contact.created", "contact.list_joined"],
            list_ids=[list_id],
        )
        assert added.status_code == 201, added.text
        secret = SECRET.search(added.text).group(1)
        assert secret.startswith("whsec_") or len(secret) >= 32
        [hook] = await hook_list(client, pro)
        assert hook["url"] == receiver.url("ok/crm") and hook["description"] == "CRM sync"
        assert hook["event_types"] == ["contact.created", "contact.list_joined"]
        assert hook["filters"] == {"list_ids": [list_id]} and hook["channel"] == "server"

        shown = await admin.get(f"/settings/webhooks/{hook['id']}")
        assert shown.status_code == 200 and "CRM sync" in shown.text
        assert secret not in shown.text and 'id="hook-secret"' not in shown.text
        listed = await admin.get("/settings/webhooks")
        assert (
            f'href="/settings/webhooks/{hook["id"]}"' in listed.text and "2 events" in listed.text
        )

        # The test delivery is signed with that secret.
        tested = await admin.post(
            f"/settings/webhooks/{hook['id']}/test",
            data={"csrf": token, "event_type": "contact.created"},
        )
        assert tested.status_code == 303, tested.text[-1500:]
        after = await admin.get(f"/settings/webhooks/{hook['id']}")
        assert "Test delivered: the endpoint answered 200." in after.text
        [sent] = receiver.at("ok/crm")
        assert sent.json["data"]["test"] is True and sent.json["event"] == "contact.created"
        assert verify_by_hand(secret, sent.body, sent.header("X-Mailroom-Signature"))


async def test_refusals_change_nothing_and_keep_what_was_typed(
    app,
    client,
    db,
    hook_settings,  # noqa: F811
    pro,  # noqa: F811
    receiver,  # noqa: F811
):
    admin = await signed_in(app, db, hook_settings, pro, "ada@shop.example")
    async with aclosing(admin):
        token = csrf_of((await admin.get("/settings/webhooks")).text)
        no_events = await add(admin, token, url=receiver.url("ok/a"), description="Kept")
        assert no_events.status_code == 400
        assert "event_types must be a non-empty array of event names" in no_events.text
        assert 'value="Kept"' in no_events.text
        credentials = await add(
            admin, token, url="https://user:pw@127.0.0.1/hook", event=["contact.created"]
        )
        assert credentials.status_code == 400
        assert "url is not allowed: URLs must not contain credentials" in credentials.text
        assert 'value="contact.created" checked' in credentials.text
        slack = await add(
            admin,
            token,
            url=receiver.url("ok/slack"),
            channel="slack",
            event=["contact.created", "campaign.sent"],
        )
        assert slack.status_code == 400
        assert "Slack endpoints receive only" in slack.text and "not contact.created" in slack.text
        assert await hook_list(client, pro) == []
        # The form's CSRF token is required.
        forged = await admin.post(
            "/settings/webhooks", data={"url": receiver.url("ok/b"), "event": "contact.created"}
        )
        assert forged.status_code == 403 and await hook_list(client, pro) == []


async def test_slack_endpoint_test_in_place_off_and_on_rotate_and_delete(
    app,
    client,
    db,
    hook_settings,  # noqa: F811
    pro,  # noqa: F811
    receiver,  # noqa: F811
):
    admin = await signed_in(app, db, hook_settings, pro, "ada@shop.example")
    async with aclosing(admin):
        token = csrf_of((await admin.get("/settings/webhooks")).text)
        added = await add(
            admin,
            token,
            url=receiver.url("ok/slack"),
            channel="slack",
            description="#marketing",
            event=["campaign.sent", "workspace.paused"],
        )
        assert added.status_code == 201, added.text
        [hook] = await hook_list(client, pro)
        assert hook["channel"] == "slack"
        page = await admin.get(f"/settings/webhooks/{hook['id']}")
        # Only the seven chat events can be tested on a chat endpoint.
        assert 'value="campaign.sent"' in page.text and ">contact.created</option>" not in page.text

        # htmx asks for the result alone, shown in place.
        fragment = await admin.post(
            f"/settings/webhooks/{hook['id']}/test",
            data={"csrf": token, "event_type": "campaign.sent"},
            headers={"HX-Request": "true"},
        )
        assert fragment.status_code == 200 and "<html" not in fragment.text
        assert "Test delivered: the endpoint answered 200." in fragment.text
        [message] = receiver.at("ok/slack")
        assert "Acme Shop" in json.dumps(message.json)  # a readable message naming the workspace

        off = await admin.post(
            f"/settings/webhooks/{hook['id']}/enabled", data={"csrf": token, "enabled": "off"}
        )
        assert off.status_code == 303
        assert (await hook_by_id(client, pro, hook["id"]))["enabled"] is False
        async with db.transaction() as session:
            await session.execute(
                update(WebhookEndpoint)
                .where(WebhookEndpoint.id == hook["id"])
                .values(consecutive_failures=7, disabled_reason="Too many failures")
            )
        shown = await admin.get(f"/settings/webhooks/{hook['id']}")
        assert "Too many failures" in shown.text and "Turn on again" in shown.text
        await admin.post(
            f"/settings/webhooks/{hook['id']}/enabled", data={"csrf": token, "enabled": "on"}
        )
        again = await hook_by_id(client, pro, hook["id"])
        assert again["enabled"] is True
        assert again["health"]["consecutive_failures"] == 0
        assert again["health"]["disabled_reason"] is None

        confirm = await admin.get(f"/settings/webhooks/{hook['id']}/rotate")
        assert confirm.status_code == 200 and "stops signing at once" in confirm.text
        rotated = await admin.post(f"/settings/webhooks/{hook['id']}/rotate", data={"csrf": token})
        new_secret = SECRET.search(rotated.text).group(1)
        assert new_secret != SECRET.search(added.text).group(1)

        gone = await admin.post(f"/settings/webhooks/{hook['id']}/delete", data={"csrf": token})
        assert gone.status_code == 303
        listed = await admin.get("/settings/webhooks")
        assert "“#marketing” is deleted" in listed.text
        assert await hook_list(client, pro) == []

        audit = await admin.get("/settings/audit-log")
        for operation in ("create_webhook", "test_webhook", "rotate_webhook_secret"):
            assert operation in audit.text
        assert "ada@shop.example" in audit.text


async def test_the_delivery_log_shows_codes_and_payloads(
    app,
    client,
    db,
    hook_settings,  # noqa: F811
    pro,  # noqa: F811
    receiver,  # noqa: F811
    driver,  # noqa: F811
):
    admin = await signed_in(app, db, hook_settings, pro, "ada@shop.example")
    async with aclosing(admin):
        token = csrf_of((await admin.get("/settings/webhooks")).text)
        await add(admin, token, url=receiver.url("fail/x"), event=["contact.created"])
        [hook] = await hook_list(client, pro)
        await create_contact(client, pro, "logged@example.com")
        await driver.drain()  # every retry fails: the delivery ends failed
        page = await admin.get(f"/settings/webhooks/{hook['id']}")
        assert "HTTP 500" in page.text and "contact.created" in page.text
        assert "logged@example.com" in page.text  # the payload, under "Show"
        assert "failed</span>" in page.text and "1 failed delivery in a row." in page.text


async def test_members_are_refused_and_foreign_endpoints_are_not_found(
    app,
    client,
    db,
    factory,
    hook_settings,  # noqa: F811
    pro,  # noqa: F811
    receiver,  # noqa: F811
):
    other = await factory.workspace("pro", listen=False)
    theirs = await client.post(
        "/api/v1/webhooks",
        json={"url": receiver.url("ok/theirs"), "event_types": ["contact.created"]},
        headers=other.headers,
    )
    assert theirs.status_code == 201
    member = await signed_in(app, db, hook_settings, pro, "mo@shop.example", role="member")
    async with aclosing(member):
        refused = await member.get("/settings/webhooks")
        assert refused.status_code == 403 and "Admins only" in refused.text
        assert 'href="/settings/webhooks"' not in (await member.get("/app")).text
    admin = await signed_in(app, db, hook_settings, pro, "ada@shop.example")
    async with aclosing(admin):
        foreign = await admin.get(f"/settings/webhooks/{theirs.json()['id']}")
        assert foreign.status_code == 404 and "Webhook not found" in foreign.text
        assert receiver.url("ok/theirs") not in foreign.text


async def test_only_known_actions_are_asked_about(
    app,
    db,
    hook_settings,  # noqa: F811
    pro,  # noqa: F811
    receiver,  # noqa: F811
):
    admin = await signed_in(app, db, hook_settings, pro, "ada@shop.example")
    async with aclosing(admin):
        token = csrf_of((await admin.get("/settings/webhooks")).text)
        added = await add(admin, token, url=receiver.url("ok/a"), event=["contact.created"])
        hook_id = re.search(r'action="/settings/webhooks/([^"/]+)/test"', added.text).group(1)
        assert (await admin.get(f"/settings/webhooks/{hook_id}/rotate")).status_code == 200
        unknown = await admin.get(f"/settings/webhooks/{hook_id}/explode")
        assert unknown.status_code == 404 and "Page not found" in unknown.text
