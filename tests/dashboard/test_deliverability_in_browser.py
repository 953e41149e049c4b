"""The Sending page's deliverability side in Chromium: each domain's bulk-sender rules as "met"
or "to fix" with what to do, a link host saved (its CNAME then listed), and its DMARC aggregate reports (Google's and Microsoft's, as they
mail them) per day and source with the unknown source flagged; screenshots at both widths."""

from __future__ import annotations

from playwright.async_api import expect

from mailroom.domains import dmarc
from tests.dashboard.browsing import checked, choose_password, flashes, submit
from tests.dashboard.helpers import make_person
from tests.domains.conftest import add_domain, domain_settings, publish, verify, zone  # noqa: F401
from tests.domains.test_dmarc_reports import (
    DOMAIN,
    FORGER_IP,
    MAILROOM_IP,
    _record,
    google_mail,
    microsoft_mail,
)


async def test_the_rules_and_the_dmarc_reports_of_a_domain(
    live_server,
    page,
    client,
    db,
    settings,
    ws,
    zone,  # noqa: F811
):
    settings.smtp_url = "smtp://relay.example.net:587"  # STARTTLS only when offered: to fix
    settings.smtp_helo = "mail.shop.example"
    domain = await add_domain(client, ws, DOMAIN)
    publish(zone, domain)
    await verify(client, ws, domain["id"])
    google = [_record(MAILROOM_IP, 40, "pass", "pass"), _record(FORGER_IP, 3, "fail", "fail")]
    assert await dmarc.receive(db, google_mail("949348866075514174", google)) == "dmarc"
    microsoft = [_record(MAILROOM_IP, 9, "pass", "fail")]
    assert await dmarc.receive(db, microsoft_mail("cfeafefe41", microsoft)) == "dmarc"

    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@shop.example")
    )
    settings.public_url = "http://mailroom.test"  # a host a link host's CNAME can name
    await page.goto(f"{live_server}/settings/sending")
    rules = page.locator(".checklist li")
    await expect(rules).to_have_count(7)
    await expect(page.locator(".checklist li.off")).to_have_count(1)
    await expect(page.locator(".checklist li.off")).to_contain_text(
        "TLS to the relay: TLS to relay.example.net only when it offers STARTTLS"
    )
    await expect(rules.first).to_contain_text("met DKIM, aligned: Mail is signed with d=")
    await page.get_by_label("Link host for this domain's campaign links").fill(f"links.{DOMAIN}")
    await submit(page, "Save link host")
    assert f"Link host links.{DOMAIN} saved" in (await flashes(page))[0]
    await expect(page.locator("section.domain tbody tr").last).to_have_text(
        f"CNAMElinks.{DOMAIN}mailroom.testpending"
    )
    await checked(page, "sending-deliverability")

    await page.get_by_role("link", name=f"DMARC reports for {DOMAIN}").click()
    await expect(page.locator("h1")).to_have_text(f"DMARC reports: {DOMAIN}")
    await page.goto(f"{live_server}/settings/sending/domains/{domain['id']}/dmarc?days=400")
    summary = page.locator("main .card p").first
    await expect(summary).to_contain_text("52 messages reported: 94.2 % passed DMARC")
    await expect(summary).to_contain_text("1 unknown source")
    rows = page.locator("tbody tr")
    await expect(rows).to_have_count(3)
    await expect(page.locator("tbody tr.unknown")).to_contain_text(FORGER_IP)
    await checked(page, "sending-dmarc-reports")
