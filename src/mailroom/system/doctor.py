"""`mailroom doctor`: checks an installation and says, for each thing, ok / warn / fail, what it
found, and how to fix what is wrong.

The database is read first, in one short read-only session (the schema's revision, the worker
heartbeats, the sending domains, whether there are workspaces), and closed; then every check
that talks to the network runs at once, holding no database connection: the SMTP relay (connect,
EHLO, STARTTLS and AUTH as MAILROOM_SMTP_URL asks), each sending domain's DNS records (through
the domains' own lookup, read-only: no domain's status changes), the bounce listener, and the
public URL's `/healthz`. The secret key and the disk are looked at on this machine.

Nothing here prints a password or the secret: URLs are shown with the password masked.
"""

from __future__ import annotations

import asyncio
import shutil
import stat
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mailroom.settings import Settings
from mailroom.system.doctor_checks import (
    FAIL,
    OK,
    WARN,
    Check,
    ago,
    fail,
    failed,
    is_loopback,
    ok,
    short_error,
    size_text,
    warn,
)
from mailroom.system.doctor_network import check_bounce_listener, check_public_url, check_smtp

__all__ = ["Check", "check_bounce_listener", "check_public_url", "check_smtp", "run"]

DB_SECONDS = 10.0  # connecting and reading, in all
DOMAIN_CONCURRENCY = 8

# Free space of the data directory: warn under 1 GiB or 5 % free, fail under 200 MB.
DISK_WARN_BYTES = 1024**3
DISK_WARN_FRACTION = 0.05
DISK_FAIL_BYTES = 200 * 1000**2
DISK_THRESHOLDS = "warn under 1 GiB or 5 % free, fail under 200 MB"

START_WORKER = "run `mailroom worker`, or `mailroom serve` without --no-worker"


# ------------------------------------------------------------------ the database, read once


@dataclass(frozen=True)
class WorkerRow:
    id: str
    heartbeat_at: datetime


@dataclass(frozen=True)
class DomainRow:
    id: str
    workspace_id: str
    domain: str
    status: str
    selector: str
    public_key: str
    failure_reason: str | None


@dataclass
class Facts:
    """What the checks need from the database, read in one short session."""

    shown_url: str
    error: Check | None = None  # the database check's failure, when it could not be read
    answered_ms: float = 0.0
    revisions: tuple[str, ...] = ()
    now: datetime | None = None  # the database's clock (PostgreSQL) or this machine's
    workers: list[WorkerRow] = field(default_factory=list)
    workers_error: str | None = None
    domains: list[DomainRow] = field(default_factory=list)
    domains_error: str | None = None
    workspaces: int | None = None

    @property
    def reachable(self) -> bool:
        return self.error is None


def _shown_database(settings: Settings) -> str:
    from sqlalchemy.engine import make_url

    url = settings.resolved_database_url
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # an unreadable URL: say so without echoing it
        return "(MAILROOM_DATABASE_URL cannot be read)"


async def read_facts(settings: Settings) -> Facts:
    """Connect, read what the checks need, disconnect: no transaction outlives this."""
    facts = Facts(_shown_database(settings))
    path = settings.sqlite_path if settings.is_sqlite else None
    if path is not None and not path.exists():
        # Connecting would create an empty file: report, create nothing.
        facts.error = fail(
            "database",
            f"no SQLite database at {path}",
            "run `mailroom db upgrade` (or `mailroom serve`, which applies migrations) to "
            "create it, or point MAILROOM_DATA_DIR / MAILROOM_DATABASE_URL at the existing one",
        )
        return facts
    from mailroom.db import Database

    try:
        db = Database(settings.resolved_database_url)
    except Exception as exc:
        facts.error = fail(
            "database",
            f"{facts.shown_url}: {short_error(exc)}",
            "set MAILROOM_DATABASE_URL to sqlite+aiosqlite:///path/mailroom.db or "
            "postgresql+asyncpg://user:password@host:5432/name",
        )
        return facts
    try:
        async with asyncio.timeout(DB_SECONDS):
            await _read(db, facts)
    except TimeoutError:
        facts.error = fail(
            "database",
            f"{facts.shown_url} did not answer within {DB_SECONDS:.0f} s",
            "check that the database server is running and reachable from this machine "
            "(MAILROOM_DATABASE_URL)",
        )
    except Exception as exc:
        facts.error = fail(
            "database",
            f"{facts.shown_url}: {short_error(exc)}",
            "check MAILROOM_DATABASE_URL (host, port, user, password, database name) and that "
            "the database server is running and reachable from this machine",
        )
    finally:
        await db.dispose()
    return facts


async def _read(db: Any, facts: Facts) -> None:
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy import func, select, text

    from mailroom.core.clock import utcnow
    from mailroom.models import SendingDomain, WorkerProcess, Workspace

    started = time.perf_counter()
    async with db.session(write=False) as session:
        await session.execute(text("SELECT 1"))
        facts.answered_ms = (time.perf_counter() - started) * 1000
        connection = await session.connection()
        facts.revisions = tuple(
            await connection.run_sync(
                lambda sync: MigrationContext.configure(sync).get_current_heads()
            )
        )
        facts.now = utcnow() if db.is_sqlite else await session.scalar(select(func.now()))
        # A database behind the code's schema may lack a table or a column: each read says
        # so for its own check (in a savepoint on PostgreSQL, where an error ends the
        # transaction otherwise).
        try:
            async with session.begin_nested():
                rows = await session.execute(
                    select(WorkerProcess.id, WorkerProcess.heartbeat_at).where(
                        WorkerProcess.role == "worker"
                    )
                )
                facts.workers = [WorkerRow(row.id, row.heartbeat_at) for row in rows]
        except Exception as exc:
            facts.workers_error = short_error(exc)
        try:
            async with session.begin_nested():
                rows = await session.execute(
                    select(
                        SendingDomain.id,
                        SendingDomain.workspace_id,
                        SendingDomain.domain,
                        SendingDomain.status,
                        SendingDomain.dkim_selector,
                        SendingDomain.dkim_public_key,
                        SendingDomain.failure_reason,
                    ).order_by(SendingDomain.domain, SendingDomain.workspace_id)
                )
                facts.domains = [DomainRow(*row) for row in rows]
                facts.workspaces = await session.scalar(select(func.count()).select_from(Workspace))
        except Exception as exc:
            facts.domains_error = short_error(exc)


# ----------------------------------------------------------------------- database checks


def check_database(facts: Facts) -> Check:
    if facts.error is not None:
        return facts.error
    return ok("database", f"{facts.shown_url} answered in {facts.answered_ms:.0f} ms")


def check_migrations(facts: Facts) -> Check:
    if not facts.reachable:
        return warn("migrations", "not checked: the database could not be read")
    from alembic.script import ScriptDirectory
    from alembic.script.revision import ResolutionError

    from mailroom.migrations import alembic_config

    script = ScriptDirectory.from_config(alembic_config())
    heads = tuple(script.get_heads())
    shown_heads = ", ".join(heads)
    upgrade = "run `mailroom db upgrade` (`mailroom serve` also applies them when it starts)"
    if not facts.revisions:
        return fail(
            "migrations", f"the database has no schema yet (head is {shown_heads})", upgrade
        )
    if set(facts.revisions) == set(heads):
        return ok("migrations", f"at head ({shown_heads})")
    current = ", ".join(facts.revisions)
    try:
        pending = {
            revision.revision
            for at in facts.revisions
            for revision in script.iterate_revisions("heads", at)
        }
    except ResolutionError:
        return fail(
            "migrations",
            f"the database is at {current}, a revision this Mailroom does not know "
            f"(its head is {shown_heads}): a newer Mailroom migrated it",
            "run the Mailroom version that migrated this database (or newer); an older one "
            "must not serve it",
        )
    return fail(
        "migrations",
        f"the database is at {current}, {len(pending)} migration(s) behind head {shown_heads}",
        upgrade,
    )


def check_workers(facts: Facts) -> Check:
    from mailroom.db import HEARTBEAT_SECONDS, HEARTBEAT_STALE_SECONDS

    name = "workers"
    if not facts.reachable or facts.now is None:
        return warn(name, "not checked: the database could not be read")
    if facts.workers_error is not None:
        return fail(
            name,
            f"the workers table cannot be read ({facts.workers_error})",
            "run `mailroom db upgrade`",
        )
    rule = (
        f"a worker beats every {HEARTBEAT_SECONDS} s and is taken for dead after "
        f"{HEARTBEAT_STALE_SECONDS} s of silence"
    )
    now = facts.now
    ages = sorted(((now - w.heartbeat_at).total_seconds(), w.id) for w in facts.workers)
    alive = [(age, wid) for age, wid in ages if age <= HEARTBEAT_STALE_SECONDS]
    stale = [(age, wid) for age, wid in ages if age > HEARTBEAT_STALE_SECONDS]

    def listed(items: list[tuple[float, str]]) -> str:
        shown = ", ".join(f"{wid} (last beat {ago(age)})" for age, wid in items[:5])
        return shown + (f" and {len(items) - 5} more" if len(items) > 5 else "")

    if alive:
        detail = f"{len(alive)} alive: {listed(alive)}"
        if stale:
            detail += f"; {len(stale)} stopped without signing off: {listed(stale)}"
        return ok(name, detail)
    if stale:
        return fail(
            name,
            f"no worker is alive: {listed(stale)} stopped beating ({rule}); nothing is "
            "sent, delivered or run in the background",
            START_WORKER,
        )
    return fail(
        name,
        "no worker is running: nothing is sent, delivered or run in the background",
        START_WORKER,
    )


# ------------------------------------------------------------------------------ secret key


def check_secret(settings: Settings, facts: Facts) -> Check:
    """Present and readable by its owner only. Never creates it (as `resolved_secret_key`
    would) and never shows it."""
    name = "secret_key"
    path = settings.data_dir / "secret_key"
    configured = settings.secret_key
    try:
        info = path.stat()
    except FileNotFoundError:
        info = None
    except OSError as exc:
        return fail(name, f"{path} cannot be read ({exc.strerror})", f"check {path}'s permissions")
    if info is None:
        if configured:
            return _env_secret(name, configured)
        if facts.workspaces:
            return fail(
                name,
                f"no MAILROOM_SECRET_KEY and no {path}, but the database holds "
                f"{facts.workspaces} workspace(s): a new secret would be made at the next "
                "start, and the stored DKIM keys, suppression hashes and every link already "
                "sent would stop working",
                f"restore {path} from a backup (then `chmod 600 {path}`), or set "
                "MAILROOM_SECRET_KEY to the secret this installation used",
            )
        return warn(
            name,
            f"no MAILROOM_SECRET_KEY and no {path} yet: Mailroom generates it there (mode "
            "600) when it first needs it",
            "nothing to do on a new installation; back the file up once it exists",
        )
    mode = stat.S_IMODE(info.st_mode)
    try:
        content = path.read_text().strip()
    except OSError as exc:
        return fail(
            name,
            f"{path} cannot be read by this user ({exc.strerror})",
            f"run the doctor as the user Mailroom runs as (the file's owner, uid {info.st_uid})",
        )
    in_use = not configured or configured == content
    if mode & 0o077:
        who = " and ".join(
            label for label, bits in (("group", 0o070), ("others", 0o007)) if mode & bits
        )
        return fail(
            name,
            f"{path} is open to {who} (mode {mode:o}): anyone who reads it can forge "
            "subscriber and sign-in links" + ("" if in_use else " (MAILROOM_SECRET_KEY is set)"),
            f"chmod 600 {path}",
        )
    if not in_use:
        return _env_secret(name, configured, also=f"; {path} exists (mode {mode:o}) but is unused")
    if not content:
        return fail(
            name,
            f"{path} is empty",
            f"restore {path} from a backup; on a new installation with no data, delete it "
            "and a new one is generated at the next start",
        )
    return ok(name, f"{path} (mode {mode:o}, owner only)")


def _env_secret(name: str, value: str, also: str = "") -> Check:
    if len(value) < 32:
        return warn(
            name,
            f"MAILROOM_SECRET_KEY is set but short ({len(value)} characters){also}: a "
            "guessable secret lets anyone forge subscriber and sign-in links",
            "on a new installation, use 48 random characters (python3 -c 'import secrets; "
            "print(secrets.token_urlsafe(48))'); changing it later breaks links already sent "
            "and the stored DKIM keys",
        )
    return ok(name, f"set by MAILROOM_SECRET_KEY ({len(value)} characters){also}")


# ---------------------------------------------------------------------------- sending domains


async def check_domains(settings: Settings, facts: Facts) -> list[Check]:
    """Each sending domain's records against what Mailroom expects, looked up by the domains'
    own verification code (`domains.service.lookup`), without recording anything."""
    if not facts.reachable:
        return [warn("sending_domains", "not checked: the database could not be read")]
    if facts.domains_error is not None:
        return [
            fail(
                "sending_domains",
                f"the sending domains cannot be read ({facts.domains_error})",
                "run `mailroom db upgrade`",
            )
        ]
    if not facts.domains:
        if not settings.smtp_url:
            return [ok("sending_domains", "none yet (no relay: the outbox takes every email)")]
        return [
            warn(
                "sending_domains",
                "no sending domain: with a relay, only mail from a verified domain goes out",
                "add one (POST /api/v1/domains, or the dashboard's Sending page), publish "
                "its records and verify it",
            )
        ]
    from mailroom.domains import service as domains

    gate = asyncio.Semaphore(DOMAIN_CONCURRENCY)
    names = [row.domain for row in facts.domains]

    async def one(row: DomainRow) -> Check:
        target = domains.Target(row.id, row.workspace_id, row.domain, row.selector, row.public_key)
        async with gate:
            verdicts = await domains.lookup(settings, target)
        shown = f"domain:{row.domain}"
        if names.count(row.domain) > 1:
            shown += f" (workspace {row.workspace_id})"
        return _domain_check(settings, shown, row, target, verdicts)

    return list(await asyncio.gather(*(one(row) for row in facts.domains)))


def _domain_check(
    settings: Settings, name: str, row: DomainRow, target: Any, verdicts: dict[str, Any]
) -> Check:
    from mailroom.domains import dns

    records = {record.purpose: record for record in target.records(settings)}
    summary = "; ".join(
        f"{dns.LABELS[p]} ok" if v.ok else f"{dns.LABELS[p]}: {v.reason}"
        for p, v in verdicts.items()
    )
    wrong = [p for p, v in verdicts.items() if not v.ok]
    publish = "; ".join(
        f"publish {records[p].type} {records[p].host} = {records[p].value}"
        for p in wrong
        if verdicts[p].definite
    )
    unanswered = [p for p in wrong if not verdicts[p].definite]
    dns_fix = (
        "the DNS did not answer: check the resolver (MAILROOM_DNS_NAMESERVERS) and the "
        "domain's name servers, then run the doctor again"
    )
    verify = (
        f"verify it (POST /api/v1/domains/{row.id}/verify, or Verify on the dashboard's "
        "Sending page of workspace " + row.workspace_id + ")"
    )
    if row.status != "verified":
        why = f" ({row.failure_reason})" if row.failure_reason else ""
        held = " mail from it is held while a relay is set;" if settings.smtp_url else ""
        if not wrong:
            return warn(
                name,
                f"{row.status}, not verified{why}; its records are right now: {summary}",
                verify,
            )
        steps = [s for s in (publish, dns_fix if unanswered else "") if s]
        return warn(
            name,
            f"{row.status}, not verified:{held} {summary}",
            "; ".join([*steps, f"then {verify}"]),
        )
    if not wrong:
        return ok(name, f"verified; {summary}")
    fix = "; ".join(s for s in (publish, dns_fix if unanswered else "") if s)
    if dns.DKIM in wrong and verdicts[dns.DKIM].definite:
        return fail(
            name,
            f"verified, but its DKIM record is not what Mailroom signs with: {summary} "
            "(receivers fail its DKIM signature; the daily re-check will mark it failed)",
            fix,
        )
    if dns.DKIM in wrong:
        return warn(name, f"verified; {summary}", fix)
    return warn(name, f"verified; the advised records are not all right: {summary}", fix)


# -------------------------------------------------------------------------------- disk space


def disk_verdict(free: int, total: int) -> str:
    if free < DISK_FAIL_BYTES:
        return FAIL
    if free < DISK_WARN_BYTES or (total and free / total < DISK_WARN_FRACTION):
        return WARN
    return OK


def check_disk(settings: Settings, usage: Callable[[Path], Any] | None = None) -> Check:
    name = "disk_space"
    directory = settings.data_dir.resolve()
    measured = directory
    while not measured.exists() and measured != measured.parent:
        measured = measured.parent
    try:
        found = (usage or shutil.disk_usage)(measured)
    except OSError as exc:
        return warn(name, f"cannot measure {measured} ({exc.strerror})")
    free, total = int(found.free), int(found.total)
    percent = 100 * free / total if total else 0.0
    where = str(directory) + ("" if measured == directory else f" (not made yet; {measured})")
    detail = f"{size_text(free)} free of {size_text(total)} ({percent:.0f} %) for {where} ({DISK_THRESHOLDS})"
    verdict = disk_verdict(free, total)
    clean = (
        f"free space on that filesystem (old {directory / 'outbox'} files, logs, backups) "
        "or move MAILROOM_DATA_DIR to a larger disk"
    )
    if verdict == FAIL:
        return fail(name, detail, clean + ": SQLite and the outbox stop writing when it is full")
    if verdict == WARN:
        return warn(name, detail, clean)
    return ok(name, detail)


# ---------------------------------------------------------------------------------- run


def _loopback_links(settings: Settings, checks: list[Check]) -> list[Check]:
    """Links in real mail pointing at this machine's loopback address help nobody."""
    host = urlsplit(settings.public_url).hostname or ""
    if not settings.smtp_url or not is_loopback(host):
        return checks
    try:
        from mailroom.sending.transport import parse_smtp_url, relay_urls

        relay_hosts = [parse_smtp_url(url).host for url in relay_urls(settings.smtp_url)]
    except ValueError:
        return checks
    if all(is_loopback(host) for host in relay_hosts):
        return checks  # a test or a local relay: links to this machine may be right
    return [
        warn(
            c.name,
            f"{c.detail}; it is a loopback address, so the links in emails (unsubscribe, "
            "web view, clicks) do not work for their recipients",
            "set MAILROOM_PUBLIC_URL to the address people reach Mailroom at",
        )
        if c.name == "public_url" and c.status == OK
        else c
        for c in checks
    ]


async def run(settings: Settings) -> list[Check]:
    """Every check, in a fixed order."""
    facts = await read_facts(settings)
    # The database is closed now: the network checks hold nothing while they wait.
    network: list[Awaitable[Any]] = [
        check_smtp(settings),
        check_domains(settings, facts),
        check_bounce_listener(settings),
        check_public_url(settings),
    ]
    smtp, domain_checks, bounces, public = await asyncio.gather(*network)
    checks = [
        check_database(facts),
        check_migrations(facts),
        check_secret(settings, facts),
        smtp,
        *domain_checks,
        check_workers(facts),
        bounces,
        public,
        check_disk(settings),
    ]
    return _loopback_links(settings, checks)


def report(checks: list[Check]) -> dict[str, Any]:
    """What `--json` prints."""
    return {"ok": not failed(checks), "checks": [c.as_dict() for c in checks]}
