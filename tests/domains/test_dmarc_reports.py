"""DMARC aggregate reports mailed to `dmarc@<return-path domain>` over a real SMTP conversation
with the inbound listener, shaped as Google (a zip) and Microsoft (a gzip) send them: stored for
the sending domain they are about, once each, shown per day and source by
`GET /domains/{id}/dmarc` with the unknown sources flagged; never another workspace's."""

from __future__ import annotations

import gzip
import io
import zipfile
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage

import aiosmtplib
import pytest
from sqlalchemy import func, select, update

from mailroom.core.clock import utcnow
from mailroom.domains import dmarc
from mailroom.models import DmarcRecord, DmarcReport, SendingDomain
from tests.bounces.conftest import bounce_listener  # noqa: F401 (fixture)
from tests.domains.conftest import BOUNCE_HOST, add_domain
from tests.sending.helpers import ok

DOMAIN = "news.acme-mail.com"
DAY_BEGIN, DAY_END = 1_764_201_600, 1_764_287_999  # 2025-11-27 UTC
MAILROOM_IP, FORGER_IP = "203.0.113.10", "198.51.100.7"


def _record(ip: str, count: int, dkim: str, spf: str) -> str:
    return (
        f"<record><row><source_ip>{ip}</source_ip><count>{count}</count><policy_evaluated>"
        f"<disposition>none</disposition><dkim>{dkim}</dkim><spf>{spf}</spf>"
        f"</policy_evaluated></row><identifiers><header_from>{DOMAIN}</header_from>"
        f"</identifiers><auth_results><spf><domain>{DOMAIN}</domain><result>{spf}</result>"
        "</spf></auth_results></record>"
    )


def _xml(org: str, email: str, report_id: str, records: list[str], domain: str = DOMAIN) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8" ?>\n<feedback><report_metadata>'
        f"<org_name>{org}</org_name><email>{email}</email><report_id>{report_id}</report_id>"
        f"<date_range><begin>{DAY_BEGIN}</begin><end>{DAY_END}</end></date_range>"
        f"</report_metadata><policy_published><domain>{domain}</domain><adkim>r</adkim>"
        "<aspf>r</aspf><p>none</p><sp>none</sp><pct>100</pct></policy_published>"
        + "".join(records)
        + "</feedback>"
    ).encode()


def google_mail(report_id: str, records: list[str], domain: str = DOMAIN) -> bytes:
    name = f"google.com!{domain}!{DAY_BEGIN}!{DAY_END}"
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr(
            f"{name}.xml",
            _xml("google.com", "noreply-dmarc-support@google.com", report_id, records, domain),
        )
    mail = EmailMessage()
    mail["From"] = "noreply-dmarc-support@google.com"
    mail["To"] = f"dmarc@{BOUNCE_HOST}"
    mail["Subject"] = f"Report domain: {domain} Submitter: google.com Report-ID: {report_id}"
    mail.set_content("")
    mail.add_attachment(
        archive.getvalue(), maintype="application", subtype="zip", filename=f"{name}.zip"
    )
    return mail.as_bytes()


def microsoft_mail(report_id: str, records: list[str]) -> bytes:
    name = f"protection.outlook.com!{DOMAIN}!{DAY_BEGIN}!{DAY_END}.xml.gz"
    xml = _xml("Outlook.com", "dmarcreport@microsoft.com", report_id, records)
    mail = EmailMessage()
    mail["From"] = "dmarcreport@microsoft.com"
    mail["To"] = f"dmarc@{BOUNCE_HOST}"
    mail["Subject"] = (
        f"Report Domain: {DOMAIN} Submitter: protection.outlook.com Report-ID: <{report_id}>"
    )
    mail.set_content("This is a DMARC aggregate report from Microsoft Corporation.")
    mail.add_attachment(gzip.compress(xml), maintype="application", subtype="gzip", filename=name)
    return mail.as_bytes()


async def _deliver(where, data: bytes, to: str = f"dmarc@{BOUNCE_HOST}") -> None:
    host, port = where
    async with aiosmtplib.SMTP(hostname=host, port=port, start_tls=False) as smtp:
        await smtp.sendmail("noreply-dmarc-support@google.com", [to], data)


async def _verified(client, db, ws, name: str) -> dict:
    """A sending domain as a passing DNS check leaves it (reports go to verified ones only)."""
    domain = await add_domain(client, ws, name)
    async with db.transaction() as session:
        await session.execute(
            update(SendingDomain)
            .where(SendingDomain.id == domain["id"])
            .values(status="verified", verified_at=utcnow())
        )
    return domain


async def _stored(db) -> tuple[int, int]:
    async with db.session(write=False) as session:
        reports = await session.scalar(select(func.count()).select_from(DmarcReport))
        rows = await session.scalar(select(func.count()).select_from(DmarcRecord))
    return int(reports or 0), int(rows or 0)


async def test_google_and_microsoft_reports_are_shown_per_day_and_source(
    client,
    db,
    ws,
    factory,
    domain_settings,
    bounce_listener,  # noqa: F811
):
    other_ws = await factory.workspace("pro")
    domain = await _verified(client, db, ws, DOMAIN)
    # Another workspace that merely typed the same name (never verified it) learns nothing.
    elsewhere = await add_domain(client, other_ws, DOMAIN)
    google = google_mail(
        "949348866075514174",
        [_record(MAILROOM_IP, 40, "pass", "pass"), _record(FORGER_IP, 3, "fail", "fail")],
    )
    await _deliver(bounce_listener, google)
    await _deliver(bounce_listener, google)  # sent again: counted once
    await _deliver(
        bounce_listener,
        microsoft_mail(
            "cfeafefe4129445e8c81018bd9177197", [_record(MAILROOM_IP, 9, "pass", "fail")]
        ),
    )
    assert await _stored(db) == (2, 3)

    found = await ok(
        await client.get(f"/api/v1/domains/{domain['id']}/dmarc?days=400", headers=ws.headers)
    )
    assert found["reports"] == [
        {
            "day": "2025-11-27",
            "source_ip": MAILROOM_IP,
            "reporter": "google.com",
            "count": 40,
            "spf_pass": 40,
            "dkim_pass": 40,
            "dmarc_pass": 40,
            "known": True,
        },
        {
            "day": "2025-11-27",
            "source_ip": MAILROOM_IP,
            "reporter": "Outlook.com",
            "count": 9,
            "spf_pass": 0,
            "dkim_pass": 9,
            "dmarc_pass": 9,
            "known": True,
        },
        {
            "day": "2025-11-27",
            "source_ip": FORGER_IP,
            "reporter": "google.com",
            "count": 3,
            "spf_pass": 0,
            "dkim_pass": 0,
            "dmarc_pass": 0,
            "known": False,
        },
    ]
    assert found["summary"] == {
        "messages": 52,
        "spf_pass_rate": round(40 / 52, 4),
        "dkim_pass_rate": round(49 / 52, 4),
        "dmarc_pass_rate": round(49 / 52, 4),
        "unknown_sources": 1,
    }
    # A window that ends before the report's day shows nothing.
    recent = await ok(
        await client.get(f"/api/v1/domains/{domain['id']}/dmarc?days=1", headers=ws.headers)
    )
    assert recent["reports"] == [] and recent["summary"]["messages"] == 0

    # The other workspace sees none of it (its own unverified domain of that name included),
    # and not this domain at all.
    theirs = await ok(
        await client.get(
            f"/api/v1/domains/{elsewhere['id']}/dmarc?days=400", headers=other_ws.headers
        )
    )
    assert theirs["reports"] == []
    foreign = await client.get(f"/api/v1/domains/{domain['id']}/dmarc", headers=other_ws.headers)
    assert (foreign.status_code, foreign.json()) == (404, {"error": "Domain not found"})


async def test_reports_for_unknown_domains_and_other_mail_store_nothing(
    client,
    db,
    ws,
    domain_settings,
    bounce_listener,  # noqa: F811
):
    await _verified(client, db, ws, DOMAIN)
    await _deliver(
        bounce_listener,
        google_mail("1", [_record(MAILROOM_IP, 5, "pass", "pass")], domain="nobody-added.example"),
    )
    plain = EmailMessage()
    plain["From"] = "someone@example.net"
    plain["Subject"] = "hello"
    plain.set_content("Not a report.")
    await _deliver(bounce_listener, plain.as_bytes())
    assert await _stored(db) == (0, 0)


@pytest.mark.parametrize("days", ["0", "401", "x"])
async def test_the_window_is_checked(client, ws, domain_settings, days):
    domain = await add_domain(client, ws, DOMAIN)
    answer = await client.get(
        f"/api/v1/domains/{domain['id']}/dmarc?days={days}", headers=ws.headers
    )
    assert answer.status_code == 400
    assert "days" in answer.json()["error"]


async def test_an_organisational_report_counts_each_subdomains_rows_for_it(
    client,
    db,
    ws,
    domain_settings,
    bounce_listener,  # noqa: F811
):
    # The DMARC record is published at acme-mail.com only: Google reports about it, each row
    # naming the From domain it saw (the sending subdomain, the organisation, a stranger).
    domain = await _verified(client, db, ws, DOMAIN)

    def row(ip: str, count: int, header_from: str) -> str:
        return _record(ip, count, "pass", "pass").replace(
            f"<header_from>{DOMAIN}</header_from>", f"<header_from>{header_from}</header_from>"
        )

    mail = google_mail(
        "5551212",
        [
            row(MAILROOM_IP, 12, DOMAIN),
            row(FORGER_IP, 4, "acme-mail.com"),
            row(FORGER_IP, 2, "unrelated.example"),
        ],
        domain="acme-mail.com",
    )
    await _deliver(bounce_listener, mail)
    found = await ok(
        await client.get(f"/api/v1/domains/{domain['id']}/dmarc?days=400", headers=ws.headers)
    )
    assert [(r["source_ip"], r["count"]) for r in found["reports"]] == [(MAILROOM_IP, 12)]
    assert await _stored(db) == (1, 1)

    # The organisational domain, once verified, gets its own rows (and the stranger's,
    # which it was the report's to tell), not the subdomain's.
    org = await _verified(client, db, ws, "acme-mail.com")
    await _deliver(bounce_listener, mail.replace(b"5551212", b"5551213"))
    found = await ok(
        await client.get(f"/api/v1/domains/{org['id']}/dmarc?days=400", headers=ws.headers)
    )
    assert [(r["source_ip"], r["count"]) for r in found["reports"]] == [(FORGER_IP, 6)]


async def test_reports_older_than_the_longest_period_shown_are_pruned(
    client,
    db,
    ws,
    domain_settings,
    bounce_listener,  # noqa: F811
):
    await _verified(client, db, ws, DOMAIN)
    await _deliver(bounce_listener, google_mail("77", [_record(MAILROOM_IP, 5, "pass", "pass")]))
    assert await _stored(db) == (1, 1)
    begin = datetime.fromtimestamp(DAY_BEGIN, UTC)
    async with db.transaction() as session:
        assert await dmarc.prune(session, begin + timedelta(days=dmarc.MAX_DAYS)) == 0
    assert await _stored(db) == (1, 1)
    async with db.transaction() as session:
        assert await dmarc.prune(session, begin + timedelta(days=dmarc.MAX_DAYS + 2)) == 1
    assert await _stored(db) == (0, 0)
