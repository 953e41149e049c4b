"""An assistant a person connected acts within what that person's role allows: a member never
grants the admin-only permissions (whatever the consent form posts), and the assistant follows
the person's role after connecting (removed: it stops; demoted: the admin's permissions go)."""

from __future__ import annotations

import pytest

from mailroom.core.auth import PERMISSIONS
from tests.assistants.oauth_steps import (
    ADMIN_ONLY,
    ask,
    bearer,
    browser_fixture,  # noqa: F401 (the `browser` fixture)
    connected,
    consent,
    public_client,
    ticked_permissions,
)
from tests.dashboard.helpers import csrf_of, signed_in

ASSISTANTS = "/api/v1/assistants"
MEMBERS_SHARE = [p for p in PERMISSIONS if p not in ADMIN_ONLY]


@pytest.fixture
async def member(app, db, settings, ws):
    person = await signed_in(app, db, settings, ws, "mel@example.com", role="member")
    yield person
    await person.aclose()


async def _reaches(client, tokens) -> dict[str, int]:
    """What the token may do now: an admin-only read and an ordinary one."""
    return {
        "webhooks": (await client.get("/api/v1/webhooks", headers=bearer(tokens))).status_code,
        "audit": (
            await client.get("/api/v1/account/audit-log", headers=bearer(tokens))
        ).status_code,
        "contacts": (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code,
    }


async def _person_id(client, ws) -> str:
    (assistant,) = (await client.get(ASSISTANTS, headers=ws.headers)).json()["assistants"]
    return str(assistant["connected_by"]["id"])


async def test_the_consent_page_tells_a_member_what_is_left_out(client, member):
    registered = await public_client(client)
    asked = await ask(client, registered)
    page = await member.get(asked.response.headers["location"])
    assert page.status_code == 200
    assert "Admins-only permissions are left out in workspaces where you are a member." in (
        page.text
    )
    assert "Desk Agent" in page.text and "127.0.0.1:33418" in page.text
    assert ticked_permissions(page.text) == MEMBERS_SHARE
    for permission in ADMIN_ONLY:
        assert f'value="{permission}"' not in page.text


async def test_a_member_granting_what_the_page_offers_gets_the_members_share(client, member):
    tokens = await connected(client, member)
    assert tokens["scope"] == " ".join(MEMBERS_SHARE)


async def test_an_admin_is_offered_everything(client, browser):
    registered = await public_client(client)
    asked = await ask(client, registered)
    page = await browser.get(asked.response.headers["location"])
    assert ticked_permissions(page.text) == list(PERMISSIONS)


async def test_a_members_consent_never_grants_the_admin_only_permissions(client, ws, member):
    # The form posts all 24, as a tampered (or an admin's stale) page would.
    tokens = await connected(client, member, permissions=list(PERMISSIONS))
    assert tokens["scope"] == " ".join(MEMBERS_SHARE)
    (shown,) = (await client.get(ASSISTANTS, headers=ws.headers)).json()["assistants"]
    assert shown["permissions"] == MEMBERS_SHARE
    assert await _reaches(client, tokens) == {"webhooks": 403, "audit": 403, "contacts": 200}
    refused = await client.get("/api/v1/webhooks", headers=bearer(tokens))
    assert refused.json() == {"error": "Forbidden: webhooks:read permission required"}


async def test_a_member_asking_only_admin_permissions_grants_nothing(client, member):
    registered = await public_client(client)
    asked = await ask(client, registered, scope=" ".join(ADMIN_ONLY))
    answered = await consent(member, asked.response.headers["location"], permissions=ADMIN_ONLY)
    assert answered.status_code == 400
    assert "location" not in answered.headers


async def test_an_admin_can_grant_them(client, browser):
    tokens = await connected(client, browser, permissions=list(PERMISSIONS))
    assert tokens["scope"] == " ".join(PERMISSIONS)
    assert await _reaches(client, tokens) == {"webhooks": 200, "audit": 200, "contacts": 200}


async def test_only_what_the_client_asked_is_granted(client, browser):
    registered = await public_client(client)
    tokens = await connected(
        client,
        browser,
        registered,
        scope="contacts:read",
        permissions=["contacts:read", "contacts:write", "webhooks:read"],
    )
    assert tokens["scope"] == "contacts:read"


async def test_a_person_consents_only_for_their_own_workspaces(client, browser, factory):
    other = await factory.workspace("pro")
    registered = await public_client(client)
    asked = await ask(client, registered)
    answered = await consent(
        browser, asked.response.headers["location"], workspace_id=other.workspace_id
    )
    assert answered.status_code == 404
    assert "location" not in answered.headers
    listed = await client.get(ASSISTANTS, headers=other.headers)
    assert listed.json()["assistants"] == []


async def test_removing_the_person_stops_their_assistant(app, db, settings, client, ws, member):
    tokens = await connected(client, member)
    assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 200
    person_id = await _person_id(client, ws)
    boss = await signed_in(app, db, settings, ws, "boss@example.com")
    page = await boss.get(f"/settings/people/{person_id}/remove")
    removed = await boss.post(
        f"/settings/people/{person_id}/remove", data={"csrf": csrf_of(page.text)}
    )
    await boss.aclose()
    assert removed.status_code == 303, removed.text
    assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 401
    answer = await client.post(
        "/mcp",
        headers={**bearer(tokens), "accept": "application/json, text/event-stream"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
    assert answer.status_code == 401


async def test_demoting_the_person_takes_the_admins_permissions(
    app, db, settings, client, ws, browser
):
    tokens = await connected(client, browser, permissions=list(PERMISSIONS))
    assert await _reaches(client, tokens) == {"webhooks": 200, "audit": 200, "contacts": 200}
    person_id = await _person_id(client, ws)
    boss = await signed_in(app, db, settings, ws, "boss@example.com")
    page = await boss.get("/settings/people")
    demoted = await boss.post(
        f"/settings/people/{person_id}/role", data={"csrf": csrf_of(page.text), "role": "member"}
    )
    await boss.aclose()
    assert demoted.status_code == 303, demoted.text
    assert await _reaches(client, tokens) == {"webhooks": 403, "audit": 403, "contacts": 200}
