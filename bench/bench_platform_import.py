"""Platform imports' figure: a 50,000-member Mailchimp audience export (.zip) imports within 2x
the CSV import's time. Each measurement in a fresh database with an empty workspace:

- csv: the same 50,000 addresses as a plain CSV through `POST /api/v1/contacts/import` (the
  floor: one request, one transaction);
- mailchimp: `POST /api/v1/imports` (202; it reads the archive to refuse bad files) and the job
  run to its end as the worker runs it; wall time from the POST to `done`, and the POST alone;
- dry run: the same with `dry_run=true` (counts, writes nothing).

The stored contacts and suppressions are counted back after each run, so no step can pass as a
no-op. BENCH_REPEAT (default 3) runs of each; the summary gives medians, rows/s and the ratio.
"""

from __future__ import annotations

import io
import os
import random
import statistics
import zipfile
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from bench.bench_contacts_bulk import PeakRss
from bench.common import BenchApp, BenchContext, Timer, report
from mailroom.models import Contact, Suppression
from mailroom.platform_imports import runner
from mailroom.worker import WorkerContext, _contexts

KINDS = (("subscribed", 46_000), ("unsubscribed", 3_000), ("cleaned", 1_000))
MEMBERS = sum(count for _, count in KINDS)
AUDIENCE = "8a1c3f9d2e"
UPLOAD_LIMIT = 5 * 1024 * 1024
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
# A few subscribed rows the importers skip: a role mailbox (placeholder) and a malformed address.
SKIP_EVERY, ROLE_AT, INVALID_AT = 5_000, 17, 42
SKIPPED = 2 * (46_000 // SKIP_EVERY + 1)

# The export's columns: the audience's merge fields by name, then Mailchimp's own.
HEADER = ["Email Address", "First Name", "Last Name", "Company", "Phone Number", "Birthday"]
HEADER += ["Signup Date", "Loyalty Points", "MEMBER_RATING", "OPTIN_TIME", "OPTIN_IP"]
HEADER += ["CONFIRM_TIME", "CONFIRM_IP", "LATITUDE", "LONGITUDE", "GMTOFF", "DSTOFF"]
HEADER += ["TIMEZONE", "CC", "REGION"]
UNSUB = ["UNSUB_TIME", "UNSUB_CAMPAIGN_TITLE", "UNSUB_CAMPAIGN_ID", "UNSUB_REASON"]
KIND_COLUMNS = {
    "subscribed": ["LAST_CHANGED"],
    "unsubscribed": [*UNSUB, "UNSUB_REASON_OTHER"],
    "cleaned": ["CLEAN_TIME", "CLEAN_CAMPAIGN_TITLE", "CLEAN_CAMPAIGN_ID"],
}
TAIL = ["LEID", "EUID", "NOTES", "TAGS"]
CSV_HEADER = "email,first_name,last_name,status,tags,company,phone,birthday,signup_date,"
CSV_HEADER += "loyalty_points,consent_at,consent_ip"
STATUS = {"subscribed": "subscribed", "unsubscribed": "unsubscribed", "cleaned": "bounced"}

FIRST = ["Anna", "Ben", "Carla", "Dmitri", "Elif", "Femi", "Grace", "Hiro", "Ines", "Jonas"]
LAST = ["Smith", "Garcia", "Rossi", "Müller", "Nowak", "Okafor", "Tanaka", "Dubois", "Silva"]
MAILBOXES = ["gmail.com", "yahoo.com", "outlook.com", "hotmail.com", "icloud.com", "gmx.de"]
WORDS = ["acme", "northwind", "globex", "initech", "umbrella", "hooli", "vandelay", "stark"]
COMPANIES = ["Acme Corp", "Northwind Traders", "Globex", "Initech", "Hooli", "Vandelay Ltd"]
TAGS = ["Customer", "VIP", "Newsletter", "Black Friday 2023", "Wholesale"]
ZONES = [("Europe/London", "GB", "ENG", 0), ("America/New_York", "US", "NY", -5)]
ZONES += [("Europe/Berlin", "DE", "BE", 1), ("Asia/Tokyo", "JP", "13", 9)]
CAMPAIGNS = [("March Newsletter", "8f3c2d1e0a"), ("Spring Sale", "7e2b1c0d9f")]
REASONS = ["NORMAL", "NO_LONGER_INTERESTED", "NOT_SIGNED_UP", "SPAMMY_CONTENT", "OTHER"]


def _q(value: str) -> str:
    """Quoted as Mailchimp quotes a cell with a space or a quote (none here has a comma)."""
    return '"' + value.replace('"', '""') + '"' if " " in value or '"' in value else value


def _stamp(moment: datetime) -> str:
    return _q(moment.strftime("%Y-%m-%d %H:%M:%S"))


def build() -> tuple[bytes, bytes, int]:
    """The Mailchimp .zip, the equivalent plain CSV, and the archive's uncompressed size."""
    rng = random.Random(20240501)
    domains = MAILBOXES * 50 + [f"{rng.choice(WORDS)}{n}.com" for n in range(300)]
    start = datetime(2019, 1, 1)
    files: dict[str, list[str]] = {}
    plain = [CSV_HEADER]
    i = 0
    for kind, count in KINDS:
        header = HEADER + KIND_COLUMNS[kind] + TAIL
        lines = files.setdefault(f"{kind}_members_export_{AUDIENCE}.csv", [])
        lines.append(",".join(_q(h) if " " in h else h for h in header))
        status = "" if kind == "subscribed" else STATUS[kind]  # the CSV's default: subscribed
        for _ in range(count):
            first, last = rng.choice(FIRST), rng.choice(LAST)
            email = f"{first[0]}{last}{i}@{rng.choice(domains)}".lower().replace("ü", "ue")
            if kind == "subscribed" and i % SKIP_EVERY == ROLE_AT:
                email = f"postmaster@shop{i}.com"
            elif kind == "subscribed" and i % SKIP_EVERY == INVALID_AT:
                email = f"member{i}.at.nowhere"
            signup = start + timedelta(seconds=rng.randrange(5 * 365 * 86400))
            confirmed = rng.random() < 0.7
            ip = f"{rng.randrange(1, 224)}.{rng.randrange(256)}.{rng.randrange(256)}.{i % 250}"
            zone = rng.choice(ZONES) if rng.random() < 0.3 else None
            tags = rng.sample(TAGS, rng.choice((0, 0, 1, 1, 2)))
            fields = [
                rng.choice(COMPANIES) if rng.random() < 0.3 else "",
                f"+44 20 7946 {i % 10000:04d}" if rng.random() < 0.2 else "",
                f"{rng.randrange(1, 13):02d}/{rng.randrange(1, 29):02d}"
                if rng.random() < 0.25
                else "",
                signup.strftime("%Y-%m-%d") if rng.random() < 0.6 else "",
                str(rng.randrange(500)) if rng.random() < 0.4 else "",
            ]
            changed = _stamp(signup + timedelta(days=rng.randrange(1, 400)))
            title, campaign = rng.choice(CAMPAIGNS)
            tail = {
                "subscribed": [changed],
                "unsubscribed": [changed, _q(title), campaign, rng.choice(REASONS), ""],
                "cleaned": [changed, _q(title), campaign],
            }[kind]
            confirm = signup + timedelta(minutes=2) if confirmed else signup
            where = ["", "", "", "", "", rng.choice(("US", "GB", "DE", "")), ""]
            if zone:
                where = [
                    f"{rng.uniform(-60, 60):.7f}",
                    f"{rng.uniform(-150, 150):.7f}",
                    str(zone[3]),
                    "0",
                    zone[0],
                    zone[1],
                    zone[2],
                ]
            cells = [
                email,
                first,
                last,
                _q(fields[0]),
                _q(fields[1]),
                *fields[2:],
                str(rng.randrange(1, 6)),
                _stamp(signup),
                ip,
                _stamp(confirm) if confirmed else "",
                ip if confirmed else "",
                *where,
                *tail,
                str(100_000_000 + i),
                f"{rng.getrandbits(40):010x}",
                "",
                _q(",".join(f'"{t}"' for t in tags)),
            ]
            lines.append(",".join(cells))
            consent = confirm.strftime("%Y-%m-%dT%H:%M:%SZ")
            plain.append(
                ",".join([email, first, last, status, ";".join(tags), *fields, consent, ip])
            )
            i += 1
    buffer = io.BytesIO()
    raw = 0
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, lines in files.items():
            data = ("\n".join(lines) + "\n").encode()
            raw += len(data)
            archive.writestr(name, data)
    return buffer.getvalue(), ("\n".join(plain) + "\n").encode(), raw


async def _stored(bench: BenchApp) -> tuple[int, int]:
    """Contacts of the workspace and suppressions, as stored."""
    async with bench.app.state.db.session(write=False) as session:
        contacts = await session.scalar(
            select(func.count()).where(Contact.workspace_id == bench.workspace_id)
        )
        suppressed = await session.scalar(
            select(func.count()).where(Suppression.workspace_id == bench.workspace_id)
        )
    return int(contacts or 0), int(suppressed or 0)


async def csv_import(ctx: BenchContext, content: bytes) -> dict[str, float]:
    async with ctx.fresh_app() as bench:
        with PeakRss() as rss, Timer() as timer:
            response = await bench.client.post(
                "/api/v1/contacts/import",
                files={"file": ("contacts.csv", content, "text/csv")},
                data={"source": "mailchimp"},
                headers=bench.headers,
            )
        assert response.status_code == 200, response.text
        body = response.json()
        stored = await _stored(bench)
    expected = MEMBERS - SKIPPED
    assert (body["imported"], body["skipped"]) == (expected, SKIPPED), body
    assert stored == (expected, 4_000), stored
    report(
        "csv import",
        ctx.backend,
        seconds=timer.seconds,
        rows_per_s=MEMBERS / timer.seconds,
        peak_rss_mb=rss.mb,
        rss_growth_mb=rss.growth_mb,
        imported=body["imported"],
    )
    return {"total": timer.seconds}


async def platform_import(ctx: BenchContext, archive: bytes, dry_run: bool) -> dict[str, float]:
    label = "mailchimp dry run" if dry_run else "mailchimp import"
    async with ctx.fresh_app() as bench:
        db, settings = bench.app.state.db, bench.settings
        contexts = _contexts(WorkerContext(db, settings, "bench-worker"))
        with PeakRss() as rss, Timer() as total:
            with Timer() as post:
                started = await bench.client.post(
                    "/api/v1/imports",
                    data={"platform": "mailchimp", "dry_run": str(dry_run).lower()},
                    files={"file": (f"members_export_{AUDIENCE}.zip", archive, "application/zip")},
                    headers=bench.headers,
                )
            assert started.status_code == 202, started.text
            ran = 0
            while await runner.run_due(db, contexts, settings, "bench-worker"):
                ran += 1
        job_id = started.json()["import"]["id"]
        answer = await bench.client.get(f"/api/v1/imports/{job_id}", headers=bench.headers)
        job = answer.json()["import"]
        stored = await _stored(bench)
    result = job["result"] or {}
    assert ran == 1 and job["status"] == "done", job
    expected = MEMBERS - SKIPPED
    assert (result["created"], result["skipped_total"]) == (expected, SKIPPED), result
    assert result["suppressed"] == {"unsubscribed": 3_000, "bounced": 1_000, "complained": 0}
    assert stored == ((0, 0) if dry_run else (expected, 4_000)), stored
    report(
        label,
        ctx.backend,
        seconds=total.seconds,
        post_s=post.seconds,
        job_s=total.seconds - post.seconds,
        rows_per_s=MEMBERS / total.seconds,
        peak_rss_mb=rss.mb,
        rss_growth_mb=rss.growth_mb,
        created=result["created"],
        suppressed=result["suppressed"],
        fields=len(result["fields_created"]),
        tags=result["tags_created"],
    )
    return {"total": total.seconds, "post": post.seconds, "job": total.seconds - post.seconds}


async def run(ctx: BenchContext) -> None:
    archive, plain, raw = build()
    report(
        "inputs",
        ctx.backend,
        members=MEMBERS,
        zip_mb=len(archive) / 2**20,
        zip_uncompressed_mb=raw / 2**20,
        csv_mb=len(plain) / 2**20,
    )
    assert len(archive) < UPLOAD_LIMIT, "the archive must fit the 5 MB upload limit"
    assert len(plain) < UPLOAD_LIMIT, "the plain CSV must fit the 5 MB upload limit"
    runs: dict[str, list[dict[str, float]]] = {"csv": [], "mailchimp": [], "dry run": []}
    for _ in range(REPEAT):
        runs["csv"].append(await csv_import(ctx, plain))
        runs["mailchimp"].append(await platform_import(ctx, archive, dry_run=False))
        runs["dry run"].append(await platform_import(ctx, archive, dry_run=True))

    def median(name: str, key: str = "total") -> float:
        return statistics.median(r[key] for r in runs[name])

    for name in runs:
        figures: dict[str, Any] = {"median_s": median(name), "rows_per_s": MEMBERS / median(name)}
        if name != "csv":
            figures.update(post_s=median(name, "post"), job_s=median(name, "job"))
        report(f"{name} (median of {REPEAT})", ctx.backend, **figures)
    ratio = median("mailchimp") / median("csv")
    report(
        "ratio mailchimp/csv (aim <= 2.0)",
        ctx.backend,
        ratio=ratio,
        within_aim="yes" if ratio <= 2.0 else "NO",
    )
