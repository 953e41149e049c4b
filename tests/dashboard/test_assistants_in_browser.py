"""Assistants in a real browser (Chromium through Playwright) against the app on a real port:
an admin finds Settings → Assistants empty, connects an agent with a one-use code (copied,
then exchanged by the agent with no key), approves an MCP client on the OAuth consent page,
sees both listed, revokes one through its confirmation page, and finds the other named in
the audit log; a member's connect page offers no admin-only permission. Each page is
photographed at desktop and phone width (build/screenshots/dashboard/) and checked for
labels, contrast and browser errors."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
from playwright.async_api import FormData

from tests.dashboard.assistant_steps import (
    CALLBACK,
    EXCHANGE,
    authorize_query,
    bearer,
    pkce,
    register_client,
    token_for_code,
)
from tests.dashboard.browsing import checked, choose_password, flashes, submit
from tests.dashboard.helpers import make_person

ADA = "ada@shop.example"
MO = "mo@shop.example"


async def _settings_link(page, name: str) -> None:
    async with page.expect_navigation():
        await page.get_by_role("navigation", name="Settings").get_by_role("link", name=name).click()


async def test_an_admin_connects_approves_lists_and_revokes_assistants(
    live_server, page, db, settings, ws
):
    await choose_password(page, live_server, await make_person(db, settings, ws, ADA))

    # Nothing connected yet: the page says how to connect one.
    await _settings_link(page, "Assistants")
    assert page.url == f"{live_server}/settings/assistants"
    assert await page.title() == "Assistants · Mailroom"
    current = page.get_by_role("navigation", name="Settings").locator("[aria-current=page]")
    assert await current.inner_text() == "Assistants"
    main = await page.inner_text("main")
    assert "No assistant is connected to this workspace yet." in main
    assert f"{live_server}/mcp" in main
    await checked(page, "assistants-empty")

    # A one-use code for a headless agent.
    async with page.expect_navigation():
        await page.get_by_role("link", name="Connect an assistant").first.click()
    assert await page.title() == "Connect an assistant · Mailroom"
    assert await page.get_by_label("The code works for (minutes)").input_value() == "10"
    approval = page.get_by_label("Campaign sends and schedules wait for an admin's approval")
    assert await approval.is_checked()
    await checked(page, "assistant-connect")
    await page.get_by_label("Name", exact=True).fill("Claude Code")
    for permission in ("contacts:read", "contacts:write", "campaigns:send"):
        await page.get_by_label(permission, exact=True).check()
    await page.get_by_label("The code works for (minutes)").fill("15")
    await page.get_by_label("Transactional recipients a day (empty: no budget)").fill("250")
    answer = await submit(page, "Create the code")
    assert answer.status == 201
    created = page.get_by_role("status")
    assert await created.get_by_role("heading").inner_text() == "One-use code for “Claude Code”"
    code = await page.get_by_label("Grant code").input_value()
    assert code.startswith("mr_grant_") and len(code) == len("mr_grant_") + 32
    told = await page.get_by_label("Instructions for the agent").input_value()
    assert f"POST {live_server}/api/v1/assistants/grants/exchange" in told and code in told
    await checked(page, "assistant-code")

    # Copy code: on the clipboard, and the button says so.
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server)
    await page.get_by_role("button", name="Copy code").click()
    await page.get_by_role("button", name="Copied").wait_for()
    assert await page.evaluate("navigator.clipboard.readText()") == code
    assert page.errors == []

    async with httpx.AsyncClient(base_url=live_server) as api:
        exchanged = await api.post(EXCHANGE, json={"grant": code})
        assert exchanged.status_code == 200, exchanged.text
        agent = exchanged.json()
        assert agent["scope"] == "contacts:read contacts:write campaigns:send"
        added = await api.post(
            "/api/v1/contacts", headers=bearer(agent), json={"email": "new@shop.example"}
        )
        assert added.status_code == 201, added.text

        # An MCP client registers and asks; the browser is sent to the consent page.
        client_id = await register_client(api)
        verifier, challenge = pkce()
        query = urlencode(authorize_query(client_id, challenge))
        answer = await page.goto(f"{live_server}/oauth/authorize?{query}")
        assert answer.status == 200 and urlsplit(page.url).path.startswith("/oauth/consent/")
        assert await page.inner_text("h1") == "Connect Test Agent?"
        assert "127.0.0.1:9999" in await page.inner_text("main")
        await checked(page, "consent")
        await page.get_by_label("Name it").fill("Test Agent on my laptop")
        await page.get_by_label("audit:read (admins only)").uncheck()
        # The form as the person left it, posted with the browser's session and "Allow":
        # the page's CSP (form-action 'self') stops Chromium from following the answer's
        # redirect to the client, so the redirect is read, not followed.
        pairs = await page.locator("form[action^='/oauth/consent/']").evaluate(
            "f => [...new FormData(f)].map(([k, v]) => [k, String(v)])"
        )
        posted = FormData()
        for key, value in [*pairs, ("decision", "allow")]:
            posted.append(key, value)
        allowed = await page.request.post(page.url, form=posted, max_redirects=0)
        assert allowed.status == 303
        reached = allowed.headers["location"]
        assert reached.startswith(f"{CALLBACK}?")
        back = parse_qs(urlsplit(reached).query)
        assert back["state"] == ["xyz"]
        tokens = await token_for_code(api, client_id, back["code"][0], verifier)
        assert "audit:read" not in tokens["scope"].split()
        assert "webhooks:write" in tokens["scope"].split()

        # Both listed; the OAuth one under its application's name.
        await page.goto(f"{live_server}/settings/assistants")
        rows = page.locator("table tbody tr")
        assert await rows.count() == 2
        oauth_row = rows.filter(has_text="Test Agent on my laptop")
        oauth_text = await oauth_row.inner_text()
        assert "OAuth: Test Agent" in oauth_text and "all except audit:read" in oauth_text
        grant_row = rows.filter(has_text="Claude Code")
        grant_text = await grant_row.inner_text()
        for shown in ("One-use grant", ADA, "need approval", "250 recipients a day"):
            assert shown in grant_text, shown
        await checked(page, "assistants")

        # Revoked through its confirmation page: its token stops at once.
        async with page.expect_navigation():
            await oauth_row.get_by_role("link", name="Revoke Test Agent on my laptop").click()
        assert await page.inner_text("h1") == "Revoke “Test Agent on my laptop”?"
        assert await page.get_by_role("link", name="Cancel").get_attribute("href") == (
            "/settings/assistants"
        )
        await checked(page, "assistant-revoke")
        assert (await api.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 200
        answer = await submit(page, "Revoke assistant")
        assert answer.url == f"{live_server}/settings/assistants"
        assert await flashes(page) == [
            "Assistant “Test Agent on my laptop” is revoked: its tokens no longer work."
        ]
        assert await rows.count() == 1
        assert (await api.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 401

    # The audit log names the agent and the person it acts for, and filters by it.
    await _settings_link(page, "Audit log")
    who = f"Claude Code (assistant) for {ADA}"
    assert who in await page.locator("table").inner_text()
    await page.get_by_label("Who").select_option(label="Claude Code (assistant)")
    await submit(page, "Filter")
    cells = await page.locator("td[data-label=Who]").all_inner_texts()
    assert cells == [who]
    await checked(page, "audit-log-assistant")


async def test_a_member_connects_with_a_members_permissions(live_server, page, db, settings, ws):
    await choose_password(page, live_server, await make_person(db, settings, ws, MO, "member"))
    await _settings_link(page, "Assistants")
    assert page.url == f"{live_server}/settings/assistants/connect"
    offered = await page.locator("input[name=permission]").evaluate_all(
        "boxes => boxes.map(b => b.value)"
    )
    assert "contacts:read" in offered and len(offered) == 21
    assert not {"webhooks:read", "webhooks:write", "audit:read"} & set(offered)
    await checked(page, "assistant-connect-member")
    answer = await page.goto(f"{live_server}/settings/assistants")
    assert answer.status == 403 and await page.inner_text("h1") == "Admins only"
