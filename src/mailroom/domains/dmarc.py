"""DMARC aggregate reports (RFC 7489): mailbox providers mail them, daily, to the `rua`
address a domain's DMARC record names. Mailroom asks for `dmarc@<return-path domain>` (see
`dns.expected_records`); the inbound listener hands such mail here.

Each report is about one domain (`policy_published/domain`), its rows each about the domain
of their `header_from` (that domain or a subdomain of it): it is stored for every verified
sending domain of that name once per (reporter, report id), so a report sent again counts
once. Verified only: anyone may add a domain, only its owner can publish its DKIM key, and a
report says who sends as the domain (which must not reach a workspace that merely typed it). Its rows say, per source IP, how many messages came and how
many passed SPF and DKIM aligned (DMARC passes when either does). A source whose mail never
passes DKIM did not send through Mailroom (which signs everything): `known` is false.

The mail is parsed off the event loop (decompression and XML, `dmarc_parse`), then written in
one short transaction; a report for a domain nobody added is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.ids import new_id
from mailroom.db import Database
from mailroom.domains.dmarc_parse import AggregateReport, DmarcRow, reports_in_mail
from mailroom.models import DmarcRecord, DmarcReport, SendingDomain

log = logging.getLogger("mailroom.dmarc")

DEFAULT_DAYS = 30
MAX_DAYS = 400
MAX_ROWS_SHOWN = 2000


async def receive(db: Database, data: bytes) -> str:
    """Store the reports a mail carries; a word for the log: `dmarc` (stored), `dmarc-known`
    (each one stored before), `dmarc-unmatched` (no sending domain of that name), `ignored`
    (no report in it)."""
    reports = await asyncio.to_thread(_one_at_a_time, data)
    if not reports:
        return "ignored"
    words = [await store(db, report) for report in reports]
    for word in ("dmarc", "dmarc-known", "dmarc-unmatched"):
        if word in words:
            return word
    return "ignored"


_PARSING = threading.Lock()


def _one_at_a_time(data: bytes) -> list[AggregateReport]:
    """One mail parsed at a time per process, however many arrive together: a parse may take
    a good share of a second and tens of MB (the caps in dmarc_parse)."""
    with _PARSING:
        return reports_in_mail(data)


def _about(report: AggregateReport) -> dict[str, list[DmarcRow]]:
    """The report's rows per domain they are about: a row's `header_from` (a subdomain that
    sends, when the DMARC record is published only at the organisational domain), or the
    report's domain. A header_from outside the report's domain is not the report's to tell."""
    rows: dict[str, list[DmarcRow]] = {report.domain: []}
    for row in report.rows:
        name = row.header_from.rstrip(".") or report.domain
        if name != report.domain and not name.endswith("." + report.domain):
            name = report.domain
        rows.setdefault(name, []).append(row)
    return rows


async def store(db: Database, report: AggregateReport) -> str:
    by_domain = _about(report)
    async with db.transaction() as session:
        found = (
            await session.execute(
                select(SendingDomain.id, SendingDomain.workspace_id, SendingDomain.domain).where(
                    SendingDomain.domain.in_(sorted(by_domain)),
                    SendingDomain.status == "verified",
                )
            )
        ).all()
        # A subdomain gets the report only with rows of its own.
        domains = [(d, w) for d, w, name in found if by_domain[name] or name == report.domain]
        rows_for = {d: by_domain[name] for d, _w, name in found}
        if not domains:
            log.info(
                "DMARC report from %s about %s: no such verified sending domain",
                report.reporter,
                report.domain,
            )
            return "dmarc-unmatched"
        known = set(
            (
                await session.scalars(
                    select(DmarcReport.domain_id).where(
                        DmarcReport.domain_id.in_([d for d, _ in domains]),
                        DmarcReport.reporter == report.reporter,
                        DmarcReport.report_id == report.report_id,
                    )
                )
            ).all()
        )
        fresh = [(d, w) for d, w in domains if d not in known]
        if not fresh:
            return "dmarc-known"
        now = utcnow()
        day = report.begin.date()
        for domain_id, workspace_id in fresh:
            report_row = new_id()
            await session.execute(
                insert(DmarcReport).values(
                    id=report_row,
                    workspace_id=workspace_id,
                    domain_id=domain_id,
                    reporter=report.reporter,
                    reporter_email=report.reporter_email,
                    report_id=report.report_id,
                    begin_at=report.begin,
                    end_at=report.end,
                    received_at=now,
                )
            )
            rows = [
                {
                    "id": new_id(),
                    "workspace_id": workspace_id,
                    "domain_id": domain_id,
                    "report_id": report_row,
                    "day": day,
                    "source_ip": row.source_ip,
                    "count": row.count,
                    "spf_pass": row.count if row.spf_aligned_pass else 0,
                    "dkim_pass": row.count if row.dkim_aligned_pass else 0,
                    "dmarc_pass": row.count if row.spf_aligned_pass or row.dkim_aligned_pass else 0,
                    "disposition": row.disposition[:16],
                }
                for row in rows_for[domain_id]
            ]
            if rows:
                await session.execute(insert(DmarcRecord), rows)
        return "dmarc"


async def rows_of(ctx: Context, domain_id: str, days: int) -> list[dict[str, Any]]:
    """Per day, source IP and reporter, newest day first: messages and how many passed
    (`known`: some passed DKIM, so Mailroom, or a forwarder that kept its signature, sent
    them). The caller has checked the domain is the workspace's."""
    since = utcnow().date() - timedelta(days=days - 1)
    total = func.sum(DmarcRecord.count)
    found = await ctx.session.execute(
        select(
            DmarcRecord.day,
            DmarcRecord.source_ip,
            DmarcReport.reporter,
            total,
            func.sum(DmarcRecord.spf_pass),
            func.sum(DmarcRecord.dkim_pass),
            func.sum(DmarcRecord.dmarc_pass),
        )
        .join(DmarcReport, DmarcReport.id == DmarcRecord.report_id)
        .where(
            DmarcRecord.workspace_id == ctx.workspace_id,
            DmarcRecord.domain_id == domain_id,
            DmarcRecord.day >= since,
        )
        .group_by(DmarcRecord.day, DmarcRecord.source_ip, DmarcReport.reporter)
        .order_by(DmarcRecord.day.desc(), total.desc(), DmarcRecord.source_ip)
        .limit(MAX_ROWS_SHOWN)
    )
    return [
        {
            "day": day if isinstance(day, date) else date.fromisoformat(str(day)),
            "source_ip": source_ip,
            "reporter": reporter,
            "count": int(count or 0),
            "spf_pass": int(spf or 0),
            "dkim_pass": int(dkim or 0),
            "dmarc_pass": int(dmarc or 0),
            "known": int(dkim or 0) > 0,
        }
        for day, source_ip, reporter, count, spf, dkim, dmarc in found.all()
    ]


async def summary_of(ctx: Context, domain_id: str, days: int) -> dict[str, Any]:
    """The period's totals and pass rates (0 to 1), and how many source IPs never passed DKIM
    (all of it, not only the rows shown)."""
    since = utcnow().date() - timedelta(days=days - 1)
    per_source = (
        await ctx.session.execute(
            select(
                func.sum(DmarcRecord.count),
                func.sum(DmarcRecord.spf_pass),
                func.sum(DmarcRecord.dkim_pass),
                func.sum(DmarcRecord.dmarc_pass),
            )
            .where(
                DmarcRecord.workspace_id == ctx.workspace_id,
                DmarcRecord.domain_id == domain_id,
                DmarcRecord.day >= since,
            )
            .group_by(DmarcRecord.source_ip)
        )
    ).all()
    messages = sum(int(n or 0) for n, *_ in per_source)

    def rate(index: int) -> float:
        passed = sum(int(row[index] or 0) for row in per_source)
        return round(passed / messages, 4) if messages else 0.0

    return {
        "messages": messages,
        "spf_pass_rate": rate(1),
        "dkim_pass_rate": rate(2),
        "dmarc_pass_rate": rate(3),
        "unknown_sources": sum(1 for row in per_source if not int(row[2] or 0)),
    }


async def prune(session: AsyncSession, now: datetime) -> int:
    """Reports are kept for `MAX_DAYS` (the longest period the API and page show); their rows
    go with them."""
    old = select(DmarcReport.id).where(DmarcReport.begin_at < now - timedelta(days=MAX_DAYS + 1))
    await session.execute(delete(DmarcRecord).where(DmarcRecord.report_id.in_(old)))
    done = await session.execute(delete(DmarcReport).where(DmarcReport.id.in_(old)))
    return int(getattr(done, "rowcount", 0) or 0)
