"""The worker's part of an import from another platform: claim a job, read or pull, write.

No transaction is open while the upload is read (CPU, a worker thread), the platform's API is
pulled or domains are looked up (network): a side task renews the job's lease (and shows the
pull's progress) in short transactions meanwhile. The writing is `writer.set_up` once, then
`writer.write_chunk` per CHUNK contacts, each in its own transaction that also advances the
job's progress and running counts, so:

- a restarted worker (or another one, once the lease or the heartbeat says this one is gone)
  resumes at the first chunk not written: the export kept with the job (read from the upload
  by the POST, or pulled by the first run: stored.py) is prepared again the same way, and the
  domains found undeliverable are kept in the job's state;
- a job that stopped MAX_ATTEMPTS times ends `failed` saying how far it got;
- a refusal part-way (the contact cap reached by other writes meanwhile, a list deleted) ends it
  `failed` with what was written so far in `result` and the reason in `error`.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.orm import undefer

from mailroom.contacts import domains
from mailroom.core import logs, urlguard
from mailroom.core.clock import utcnow
from mailroom.core.emails import email_domain
from mailroom.core.errors import ApiError
from mailroom.db import Database, claim_due
from mailroom.models import PlatformImport
from mailroom.platform_imports import entries, stored, writer
from mailroom.platform_imports.pull_http import PullFailed
from mailroom.platform_imports.pull_listmonk import pull_listmonk
from mailroom.platform_imports.pull_mailchimp import pull_mailchimp
from mailroom.platform_imports.records import PlatformExport
from mailroom.settings import Settings

log = logging.getLogger("mailroom.platform_imports")

CHUNK = 5000  # contacts a transaction: ~0.5 s of SQLite's write lock at a time
LEASE_SECONDS = 120
RENEW_EVERY = 20.0
MAX_ATTEMPTS = 3
RETRY_SECONDS = 15  # after an unexpected error, before another attempt

STOPPED = "Stopped after {done:,} of {total:,} contacts: {reason}"
GAVE_UP = (
    "The import was interrupted {attempts} times (its process stopped or failed) and was "
    "given up; {done:,} of {total:,} contacts had been written"
)
LAST_ERROR = " (the last error: {error})"
RESUMED = "Resumed at contact {done:,} after an interruption"
SEALED = "The API credentials could not be opened (the installation's secret key changed)"
UNDELIVERABLE = "domain cannot receive mail: {reason}"
DOMAINS_CUT = "More than 500 distinct domains: only the first 500 were checked"


class LeaseLost(Exception):
    """Another worker holds the job now (or it was deleted): stop without touching it."""


@dataclass
class Job:
    """What a run needs of the job row, read once at its start."""

    id: str
    workspace_id: str
    platform: str
    origin: str
    filename: str
    options: dict[str, Any]
    upload: bytes | None
    state: dict[str, Any]
    done: int
    total: int
    attempts: int
    request_id: str | None = None  # the request that started it: on this run's log lines


async def run_due(db: Database, context_for: Any, settings: Settings, worker_id: str) -> int:
    """Claim one due import and run it to its end (or to a lost lease). Returns 1 if one ran."""
    async with db.transaction() as session:
        claimed = await claim_due(
            session, PlatformImport, worker_id=worker_id, limit=1, lease_seconds=LEASE_SECONDS
        )
        for row in claimed:
            row.attempts += 1
            row.started_at = row.started_at or utcnow()
        ids = [row.id for row in claimed]
    for job_id in ids:
        await _Run(db, context_for, settings, worker_id, job_id).run()
    return len(ids)


async def run_job(
    db: Database, context_for: Any, settings: Settings, worker_id: str, job_id: str
) -> bool:
    """Claim and run one job now (`mailroom import --platform`); False when it is not due or
    another worker holds it (the caller then follows it as it goes)."""
    async with db.transaction() as session:
        claimed = await claim_due(
            session,
            PlatformImport,
            worker_id=worker_id,
            limit=1,
            lease_seconds=LEASE_SECONDS,
            where=[PlatformImport.id == job_id],
        )
        for row in claimed:
            row.attempts += 1
            row.started_at = row.started_at or utcnow()
    if not claimed:
        return False
    await _Run(db, context_for, settings, worker_id, job_id).run()
    return True


class _Run:
    def __init__(
        self, db: Database, context_for: Any, settings: Settings, worker_id: str, job_id: str
    ) -> None:
        self.db, self.context_for, self.settings = db, context_for, settings
        self.worker_id, self.job_id = worker_id, job_id
        self.pulled = (0, 0)  # (done, total) while the API is pulled

    async def run(self) -> None:
        job = await self._load()
        if job is None:
            return
        carried = logs.REQUEST_ID.set(job.request_id)
        try:
            await self._run(job)
        finally:
            logs.REQUEST_ID.reset(carried)

    async def _run(self, job: Job) -> None:
        log.info("platform import %s (%s) running", job.id, job.platform)
        try:
            if job.attempts > MAX_ATTEMPTS:
                reason = GAVE_UP.format(attempts=job.attempts - 1, done=job.done, total=job.total)
                if job.state.get("last_error"):
                    reason += LAST_ERROR.format(error=job.state["last_error"])
                await self._fail(job, reason)
                return
            await self._work(job)
        except LeaseLost:
            log.info("platform import %s: lease lost, another worker has it", job.id)
        except PullFailed as exc:
            await self._fail(job, exc.reason)
        except ApiError as exc:
            await self._fail(job, exc.message)
        except Exception as exc:
            # A bug or the database going away: the job comes back for another attempt
            # (MAX_ATTEMPTS in all) after RETRY_SECONDS, resuming after its last written
            # chunk; the error is kept for the message that gives it up.
            log.exception("platform import %s failed unexpectedly", job.id)
            await self._release(job, f"{type(exc).__name__}: {exc}"[:300])

    async def _load(self) -> Job | None:
        async with self.db.session(write=False) as session:
            row = await session.get(
                PlatformImport, self.job_id, options=[undefer(PlatformImport.upload)]
            )
            if row is None or row.status != "pending" or row.locked_by != self.worker_id:
                return None
            return Job(
                row.id,
                row.workspace_id,
                row.platform,
                row.origin,
                row.filename,
                dict(row.options or {}),
                row.upload,
                dict(row.state or {}),
                row.progress_done,
                row.progress_total,
                row.attempts,
                row.request_id,
            )

    async def _work(self, job: Job) -> None:
        dry_run = bool(job.options.get("dry_run"))
        async with self._keeping_lease(job):
            export = await self._export(job)
            key = self.settings.resolved_secret_key.encode()
            ready = await asyncio.to_thread(entries.prepare, export, key=key, now=utcnow())
            if job.options.get("check_domains"):
                await self._check_domains(job, ready)
        total = len(ready.entries)
        totals = job.state.get("totals") or writer.totals()
        if job.done:
            totals["warnings"].append(RESUMED.format(done=job.done))
        now = utcnow()
        if "setup" not in job.state:
            async with self.db.transaction() as session:
                await self._own(session, job, progress_done=0, progress_total=total)
                ctx = await self.context_for(session, job.workspace_id)
                setup = await writer.set_up(ctx, ready, job.options.get("list_id"), dry_run, totals)
                job.state.update(setup=setup, totals=totals, stage="writing")
                await self._own(session, job, state=job.state)
        setup = job.state["setup"]
        for start in range(job.done, total, CHUNK):
            piece = ready.entries[start : start + CHUNK]
            # Counted on a copy: a chunk that rolls back adds nothing to what the job reports.
            counted = copy.deepcopy(totals)
            try:
                async with self.db.transaction() as session:
                    ctx = await self.context_for(session, job.workspace_id)
                    await writer.write_chunk(ctx, piece, setup, dry_run, counted, now)
                    state = {**job.state, "totals": counted}
                    await self._own(session, job, progress_done=start + len(piece), state=state)
            except ApiError as exc:
                if start == 0:
                    raise
                raise ApiError(
                    exc.status, STOPPED.format(done=start, total=total, reason=exc.message)
                ) from None
            job.done, job.state, totals = start + len(piece), state, counted
        async with self.db.transaction() as session:
            await self._own(
                session,
                job,
                status="done",
                result=_json_safe(_result(ready, totals, dry_run)),
                state={"stage": "done"},
                progress_done=total,
                progress_total=total,
                upload=None,
                options=_without_credentials(job.options),
                finished_at=utcnow(),
                locked_until=None,
            )
        log.info("platform import %s done: %d contacts", job.id, total)

    async def _export(self, job: Job) -> PlatformExport:
        """The export as the POST read it (or an earlier run pulled it), else pulled now."""
        if job.upload is not None:
            upload = job.upload
            return await asyncio.to_thread(stored.load, upload)
        if job.origin == "file":
            raise ApiError(500, "The uploaded file is no longer stored")
        credentials = stored.unseal(
            self.settings.resolved_secret_key, job.id, job.options.get("api", "")
        )
        if credentials is None:
            raise PullFailed(SEALED)
        export = await self._pull(job.platform, credentials)
        data = await asyncio.to_thread(stored.dump, export)
        async with self.db.transaction() as session:
            job.options = _without_credentials(job.options)
            await self._own(session, job, upload=data, options=job.options)
        return export

    async def _pull(self, platform: str, credentials: dict[str, Any]) -> PlatformExport:
        allowed = urlguard.parse_networks(self.settings.webhook_allow_networks)

        def progress(done: int, total: int) -> None:
            self.pulled = (done, total)

        if platform == "mailchimp":
            return await pull_mailchimp(
                credentials["key"],
                credentials.get("list_id"),
                base_url=self.settings.mailchimp_api_url or None,
                allowed=allowed,
                progress=progress,
            )
        return await pull_listmonk(
            credentials["url"],
            credentials["username"],
            credentials["token"],
            credentials.get("list_ids") or None,
            allowed=allowed,
            progress=progress,
        )

    async def _check_domains(self, job: Job, ready: entries.Prepared) -> None:
        """Leave out addresses whose domain cannot receive mail (as the CSV import's
        check_domains); the verdicts are kept so a resumed run leaves out the same ones."""
        verdicts: dict[str, str] | None = job.state.get("undeliverable")
        if verdicts is None:
            names = [email_domain(e.row.email) for e in ready.entries]
            found, cut = await domains.undeliverable(names, self.settings.dns_nameservers)
            verdicts = {domain: verdict.reason for domain, verdict in found.items()}
            job.state.update(undeliverable=verdicts, domains_cut=cut)
            async with self.db.transaction() as session:
                await self._own(session, job, state=job.state)
        if job.state.get("domains_cut"):
            ready.warnings.append(DOMAINS_CUT)
        kept = []
        for entry in ready.entries:
            reason = verdicts.get(email_domain(entry.row.email))
            if reason is None:
                kept.append(entry)
            else:
                ready.skip(
                    {"email": entry.row.email, "reason": UNDELIVERABLE.format(reason=reason)}
                )
        ready.entries = kept

    async def _own(self, session: Any, job: Job, **values: Any) -> None:
        """Update the job if this worker still holds it (renewing the lease); LeaseLost if not."""
        values.setdefault("locked_until", utcnow() + timedelta(seconds=LEASE_SECONDS))
        result: Any = await session.execute(
            update(PlatformImport)
            .where(
                PlatformImport.id == job.id,
                PlatformImport.status == "pending",
                PlatformImport.locked_by == self.worker_id,
            )
            .values(**values)
            .execution_options(synchronize_session=False)
        )
        if not result.rowcount:
            raise LeaseLost()

    @contextlib.asynccontextmanager
    async def _keeping_lease(self, job: Job) -> AsyncIterator[None]:
        """While reading or pulling: renew the lease, and show the pull's progress."""

        async def renew() -> None:
            while True:
                await asyncio.sleep(RENEW_EVERY)
                done, total = self.pulled
                async with self.db.transaction() as session:
                    values: dict[str, Any] = {}
                    if total:
                        job.state["stage"] = "pulling"
                        values = {
                            "progress_done": done,
                            "progress_total": total,
                            "state": job.state,
                        }
                    await self._own(session, job, **values)

        task = asyncio.create_task(renew())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, LeaseLost):
                await task

    async def _release(self, job: Job, error: str) -> None:
        job.state["last_error"] = _json_safe(error)
        retry_at = utcnow() + timedelta(seconds=RETRY_SECONDS)
        with contextlib.suppress(Exception):  # the database may be what failed
            async with self.db.transaction() as session:
                await self._own(session, job, state=job.state, locked_until=retry_at)

    async def _fail(self, job: Job, reason: str) -> None:
        totals = job.state.get("totals")
        with contextlib.suppress(LeaseLost):
            async with self.db.transaction() as session:
                await self._own(
                    session,
                    job,
                    status="failed",
                    error=_json_safe(reason)[:2000],
                    result=_json_safe(_partial(totals)) if totals and job.done else None,
                    state={"stage": "failed"},
                    upload=None,
                    options=_without_credentials(job.options),
                    finished_at=utcnow(),
                    locked_until=None,
                )


def _json_safe(value: Any) -> Any:
    """Text quoted from a file, without NUL (PostgreSQL's JSON and text refuse it)."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, list):
        return [_json_safe(item) for item in value]
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    return value


def _without_credentials(options: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in options.items() if key != "api"}


def _partial(totals: dict[str, Any]) -> dict[str, Any]:
    return {
        key: totals[key]
        for key in (
            "created",
            "updated",
            "unchanged",
            "suppressed",
            "tags_created",
            "fields_created",
            "lists_created",
            "memberships",
        )
    }


def _result(ready: entries.Prepared, totals: dict[str, Any], dry_run: bool) -> dict[str, Any]:
    warnings = list(dict.fromkeys([*ready.warnings, *totals["warnings"]]))
    for key, count in totals["dropped_values"].items():
        warnings.append(writer.VALUES_DROPPED.format(count=count, key=key))
    return {
        **_partial(totals),
        "skipped": ready.skipped,
        "skipped_total": ready.skipped_total,
        "warnings": warnings,
        "dry_run": dry_run,
    }
