"""The settings side of the dashboard end to end, in Chromium, against a real `mailroom serve`
process (its own worker loops sending through the SMTP sink, the test DNS server answering its
look-ups, a webhook receiver on 127.0.0.1): the first admin's link, an invitation the member
signs up from (the link taken from the email), the member refused admin pages, a key made,
used and revoked, a Slack endpoint with a test shown in place, a sending domain verified, a
pause and resume, the suppression list, and the audit log naming the person. Every page is
photographed at desktop and phone width (build/screenshots/dashboard/) and checked for labels,
contrast and browser errors."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time

import httpx
import pytest
from sqlalchemy import select

from mailroom.models import SendingDomain
from mailroom.people import totp
from tests.dashboard.browsing import checked, choose_password, flashes, sign_in, submit
from tests.dashboard.helpers import PASSWORD, make_person
from tests.domains.conftest import BOUNCE_HOST, SPF_INCLUDE, domain_settings, zone  # noqa: F401
from tests.sending.sink import Sink
from tests.webhooks.helpers import Receiver

ADA = "ada@shop.example"
MO = "mo@shop.example"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _until(check, what: str, seconds: float = 30.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
async def served(cli_env, zone):  # noqa: F811
    """`mailroom serve` on a free port with the sink as its relay; (base URL, sink, receiver)."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    async with Sink() as sink, Receiver() as receiver:
        env = {
            **os.environ,
            **cli_env,
            "MAILROOM_PUBLIC_URL": base,
            "MAILROOM_SMTP_URL": sink.url,
            "MAILROOM_SEND_PROCESSES": "0",
            "MAILROOM_WORKER_POLL_INTERVAL": "0.1",
            "MAILROOM_SYSTEM_FROM": "mailroom@ops.example",
            "MAILROOM_DNS_NAMESERVERS": zone.address,
            "MAILROOM_SPF_INCLUDE": SPF_INCLUDE,
            "MAILROOM_RETURN_PATH_DOMAIN": BOUNCE_HOST,
            "MAILROOM_RETURN_PATH_SUBDOMAIN": "rp",
            "MAILROOM_WEBHOOK_ALLOW_NETWORKS": "127.0.0.0/8",
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "mailroom", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            async with httpx.AsyncClient(base_url=base) as probe:

                async def up() -> bool:
                    if process.poll() is not None:
                        raise AssertionError(process.stderr.read().decode()[-2000:])
                    try:
                        return (await probe.get("/healthz")).status_code == 200
                    except httpx.TransportError:
                        return False

                await _until(up, "mailroom serve to answer", 60)
            yield base, sink, receiver, zone
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def _go(page, base: str, name: str):
    async with page.expect_navigation():
        await page.locator("header.top").get_by_role("link", name=name, exact=True).click()
    assert page.errors == []
    return page


async def test_the_settings_pages_end_to_end(served, browser, page, db, settings, ws):
    base, sink, receiver, dns = served
    await choose_password(page, base, await make_person(db, settings, ws, ADA))

    # People: invite a member; the invitation goes out through the server's own engine.
    await _go(page, base, "People")
    await checked(page, "people")
    await page.get_by_label("Email", exact=True).fill(MO)
    await page.get_by_label("Member: marketing work").check()
    await submit(page, "Send invitation")
    assert await flashes(page) == [f"Invitation sent to {MO}."]

    async def invitation():
        mails = [m.parsed() for m in sink.received]
        return next((m for m in mails if m["To"] == MO), None)

    mail = await _until(invitation, "the invitation email")
    assert "mailroom@ops.example" in mail["From"]
    link = re.search(r"(http\S+/app/link/\S+)", mail.get_body(("plain",)).get_content()).group(1)
    assert link.startswith(base)

    # The member signs up from the emailed link, in a browser of their own.
    member_context = await browser.new_context(viewport={"width": 1280, "height": 800})
    member = await member_context.new_page()
    member.errors = []
    await choose_password(member, base, link[len(base) :])
    assert f"Signed in as {MO}, member of this workspace." in await member.inner_text("main")
    for path in ("/settings/api-keys", "/settings/webhooks", "/settings/sending"):
        answer = await member.goto(base + path)
        assert answer.status == 403 and await member.inner_text("h1") == "Admins only"
    await member_context.close()

    # API keys: made, used, revoked.
    await _go(page, base, "API keys")
    await page.get_by_label("Name").fill("Checkout")
    assert (await submit(page, "Create key")).status == 201
    secret = await page.get_by_label("The new API key").input_value()
    async with httpx.AsyncClient(base_url=base, headers={"x-api-key": secret}) as api:
        assert (await api.get("/api/v1/contacts")).status_code == 200
        async with page.expect_navigation():
            await page.get_by_role("link", name="Revoke Checkout").click()
        await submit(page, "Revoke key")
        assert (await api.get("/api/v1/contacts")).status_code == 401

    # Webhooks: a Slack endpoint, a test sent and shown in place (no new page).
    await _go(page, base, "Webhooks")
    await checked(page, "webhooks")
    await page.get_by_label("URL").fill(receiver.url("ok/slack"))
    await page.get_by_label("Description (optional)").fill("#marketing")
    await page.get_by_label("Kind").select_option("slack")
    await page.get_by_label("campaign.sent").check()
    await page.get_by_label("domain.verified").check()
    answer = await submit(page, "Add endpoint")
    assert answer.status == 201
    assert await page.get_by_label("The signing secret").input_value()
    await checked(page, "webhook-added")
    url_before = page.url
    await page.get_by_label("Event").select_option("campaign.sent")
    await page.get_by_role("button", name="Send test").click()
    result = page.locator("#test-result")
    await result.get_by_text("Test delivered: the endpoint answered 200.").wait_for()
    assert page.url == url_before
    assert "#marketing" in await page.inner_text("h1")
    [message] = receiver.at("ok/slack")
    assert "campaign" in message.body.decode().lower()
    await checked(page, "webhook-tested")
    for link, name in (
        ("Rotate the signing secret…", "webhook-rotate"),
        ("Delete this endpoint…", "webhook-delete"),
    ):
        async with page.expect_navigation():
            await page.get_by_role("link", name=link).click()
        await checked(page, name)
        async with page.expect_navigation():
            await page.get_by_role("link", name="Cancel").click()

    # Sending: a domain checked before and after its records are published; pause, resume.
    await _go(page, base, "Sending")
    await page.get_by_label("Add a domain").fill("shop.example")
    await submit(page, "Add domain")
    await submit(page, "Check DNS now")
    assert any("not verified yet" in f for f in await flashes(page))
    async with db.session() as session:
        domain = await session.scalar(
            select(SendingDomain).where(SendingDomain.workspace_id == ws.workspace_id)
        )
    async with httpx.AsyncClient(base_url=base, headers=ws.headers) as api:
        shown = (await api.get(f"/api/v1/domains/{domain.id}")).json()["domain"]
    for item in shown["records"]:
        if item["type"] == "CNAME":
            dns.cname(item["host"], item["value"])
        else:
            dns.txt(item["host"], item["value"])
    await submit(page, "Check DNS now")
    assert "shop.example is verified." in await flashes(page)
    await checked(page, "sending")
    await page.get_by_label("Why (optional)").fill("Checking the list")
    await submit(page, "Pause sending")
    assert "Sending is paused." in await flashes(page)
    assert "Checking the list" in await page.inner_text("main")
    await checked(page, "sending-paused")
    await submit(page, "Resume sending")
    assert "Sending is on again." in await flashes(page)

    # Suppressions: check an address, import two.
    await _go(page, base, "Suppressions")
    await page.get_by_label("Addresses, one per line").fill("gone@old.example\nx@old.example")
    await page.get_by_label("Reason for these addresses").select_option("bounced")
    await submit(page, "Import")
    assert (await flashes(page))[0].startswith("Imported 2 addresses: 2 added")
    await page.get_by_label("Email address").fill("gone@old.example")
    await submit(page, "Check")
    assert "gone@old.example is suppressed" in await page.locator("#check-result").inner_text()
    await checked(page, "suppressions")

    # The audit log names the person for what they did here.
    await _go(page, base, "Audit log")
    text = await page.inner_text("main")
    for operation in ("create_webhook", "test_webhook", "pause_sending", "resume_sending"):
        assert operation in text
    assert ADA in text
    await checked(page, "audit-log")
    await _go(page, base, "Account")
    await checked(page, "account")

    # People: the member who signed up is listed; removing asks first.
    await _go(page, base, "People")
    assert MO in await page.inner_text("table")
    async with page.expect_navigation():
        await page.get_by_role("link", name=f"Remove {MO}").click()
    assert await page.inner_text("h1") == f"Remove {MO} from Workspace {ws.workspace_id[:8]}?"
    await checked(page, "people-remove")

    # Security: two-step sign-in turned on with the app's code; the next sign-in asks for one.
    await _go(page, base, "Security")
    await checked(page, "security")
    await submit(page, "Set up two-step sign-in")
    await checked(page, "security-setup")
    key = await page.get_by_label("Set-up key").input_value()
    await page.get_by_label("The 6-digit code the app shows").fill(totp.code_at(key))
    await submit(page, "Turn on two-step sign-in")
    assert "Keep these recovery codes somewhere safe." in await page.inner_text("main")
    await checked(page, "security-codes")
    await submit(page, "Sign out")
    async with page.expect_navigation():
        await page.get_by_role("link", name="Forgot your password?").click()
    await checked(page, "forgot")
    await page.goto(f"{base}/app/sign-in")
    await sign_in(page, ADA, PASSWORD)
    assert await page.inner_text("h1") == "Two-step sign-in"
    await checked(page, "sign-in-code")
    await page.get_by_label("Code").fill(totp.code_at(key, time.time() + totp.STEP))
    answer = await submit(page, "Continue")
    assert answer.url == f"{base}/app"
