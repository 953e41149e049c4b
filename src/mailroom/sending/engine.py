"""The sending engine: the worker loop that turns due send-log rows into messages on the wire.

Each batch goes claim -> prepare -> build -> send -> record, and a few batches are in flight at
once so the database, the CPU and SMTP overlap:

- **claim** (short transaction): due rows, most urgent first (transactional before campaigns),
  none of a paused workspace; campaign rows past the account's hourly ceiling are handed back
  for the next hour.
- **prepare** (short read, then released): the contacts as they are now (a contact who
  unsubscribed, was suppressed, archived or deleted since the snapshot is `skipped`), the
  content, the sender and its domain's DKIM key.
- **build** (no database, no event loop): render, MIME, DKIM-sign in a process pool
  (`MAILROOM_SEND_PROCESSES`, default one per core; 0 renders in a thread).
- **send**: over the SMTP pool (`MAILROOM_SMTP_CONNECTIONS`) or into the outbox.
- **record** (one transaction): outcomes, meter, events, campaign completion.

Crash safety: a row is `sent` only after the relay's 250, written right after. A worker killed
mid-batch leaves its rows leased; they come back within seconds (heartbeats) and are sent
again: at most the messages in flight are duplicated, none is lost.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, select, update

from mailroom.background import WorkerContext
from mailroom.core import logs, metrics
from mailroom.core.clock import utcnow
from mailroom.core.emails import email_domain, mask_email
from mailroom.core.plans import get_plan
from mailroom.db import Database, claim_due
from mailroom.models import (
    PRIORITY_CAMPAIGN,
    Account,
    SendingSettings,
    SendLog,
    WorkerProcess,
    Workspace,
)
from mailroom.sending import addresses, limits, outcomes, pacing, warmup
from mailroom.sending.build import Built, Job, Sender, build
from mailroom.sending.facts import Facts
from mailroom.sending.messages import outbox_dir, recipient_for, signer_spec
from mailroom.sending.outcomes import Claimed, Outcome
from mailroom.sending.pacing import Pacer
from mailroom.sending.providers import Providers
from mailroom.sending.relays import Relays, transport_for
from mailroom.sending.transport import Delivery, Result, SmtpPool, Transport
from mailroom.settings import Settings

log = logging.getLogger("mailroom.sending")

LANES = 3  # batches in flight at once
LEASE_SECONDS = 300
JOB_SIZE = 50  # recipients per build job (one process task)
# Transactional messages also have a lane of their own: claimed on every tick, built in a
# thread (not queued behind campaign jobs in the process pool) and sent over connections of
# their own, so a `/send` leaves within a second while a big campaign fills the other lanes.
EXPRESS_BATCH = 20
EXPRESS_CONNECTIONS = 2
EXPRESS_QUIET = 0.1  # seconds between looks for urgent rows after one found none


@dataclass
class Prepared:
    jobs: list[Job] = field(default_factory=list)
    # row id -> (row, envelope sender, envelope recipient, the row's address, its mailbox
    # provider) for the rows that will be built; the envelope's addresses are in their wire
    # form (IDNA domain)
    targets: dict[str, tuple[Claimed, str, str, str, str | None]] = field(default_factory=dict)
    done: list[Outcome] = field(default_factory=list)  # skipped or failed before building


def _executor(settings: Settings) -> Executor | None:
    processes = settings.send_processes
    if processes is None:
        processes = os.cpu_count() or 1
    if processes <= 0:
        return None
    # Spawned, not forked: the parent runs an event loop and database threads.
    return ProcessPoolExecutor(
        max_workers=processes,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_exit_with_parent,
        initargs=(os.getpid(),),
    )


def _exit_with_parent(parent_pid: int) -> None:
    """In each build process: leave when the worker that started it is gone. A worker killed
    with SIGKILL cannot shut its pool down, and its idle build processes would otherwise wait
    on their queue forever."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="mailroom-parent-watch", daemon=True).start()


class SendEngine:
    """One per worker process; `tick` is its loop (see worker.py)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.batch_size = settings.send_batch
        self.tasks: set[asyncio.Task[None]] = set()
        self.in_flight: dict[str, int] = defaultdict(int)  # account -> claimed, not recorded
        self._transport: Transport | None = None
        self._express_transport: Transport | None = None
        self.express: asyncio.Task[None] | None = None
        self._executor: Executor | None = None
        self._executor_made = False
        # Pacing per mailbox provider, with a relay only (the outbox has no providers).
        self.providers = Providers(settings)
        self.pacer = Pacer(settings.smtp_connections)
        self.worker_id = ""
        self._relays_saved = 0.0
        self._express_quiet_until = 0.0

    @property
    def transport(self) -> Transport:
        if self._transport is None:
            self._transport = transport_for(
                self.settings.smtp_url,
                outbox_dir(self.settings),
                self.settings.smtp_connections,
                self.settings.resolved_smtp_helo,
            )
        return self._transport

    @property
    def express_transport(self) -> Transport:
        if self._express_transport is None:
            self._express_transport = transport_for(
                self.settings.smtp_url,
                outbox_dir(self.settings),
                EXPRESS_CONNECTIONS,
                self.settings.resolved_smtp_helo,
            )
        return self._express_transport

    @property
    def executor(self) -> Executor | None:
        if not self._executor_made:
            self._executor = _executor(self.settings)
            self._executor_made = True
        return self._executor

    async def tick(self, ctx: WorkerContext) -> int:
        self.worker_id = ctx.worker_id
        urgent = await self._express(ctx)
        if len(self.tasks) >= LANES:
            await asyncio.wait(self.tasks, timeout=0.05, return_when=asyncio.FIRST_COMPLETED)
            return 1
        rows = await self.claim(ctx.db, ctx.worker_id)
        if not rows and urgent:
            return urgent
        if not rows:
            if self.tasks:
                await asyncio.wait(self.tasks, timeout=0.05, return_when=asyncio.FIRST_COMPLETED)
                return 1
            return 0
        for row in rows:
            self.in_flight[row.account_id] += 1
        task = asyncio.create_task(self._batch(ctx.db, rows))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return len(rows)

    @property
    def busy(self) -> bool:
        """Batches are in flight (claimed, not yet recorded)."""
        return bool(self.tasks) or (self.express is not None and not self.express.done())

    async def _express(self, ctx: WorkerContext) -> int:
        """Start the express lane's next batch (transactional rows only) if it is free."""
        if self.express is not None and not self.express.done():
            return 0
        now = time.monotonic()
        if now < self._express_quiet_until:
            return 0
        rows = await self.claim(ctx.db, ctx.worker_id, urgent_only=True)
        if not rows:
            # Nothing urgent: look again in a moment, not on every tick (a claim is a write
            # transaction; while a campaign fills the lanes, ticks come 20 times a second).
            self._express_quiet_until = now + EXPRESS_QUIET
            return 0
        for row in rows:
            self.in_flight[row.account_id] += 1
        self.express = asyncio.create_task(self._batch(ctx.db, rows, express=True))
        return len(rows)

    async def close(self, ctx: WorkerContext, grace_seconds: float = 30.0) -> None:
        pending = set(self.tasks)
        if self.express is not None:
            pending.add(self.express)
        if pending:
            await asyncio.wait(pending, timeout=grace_seconds)
        if self._transport is not None:
            await self._transport.close()
        if self._express_transport is not None:
            await self._express_transport.close()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------ claim

    async def claim(
        self, db: Database, worker_id: str, *, urgent_only: bool = False
    ) -> list[Claimed]:
        now = utcnow()
        paused = select(SendingSettings.workspace_id).where(SendingSettings.paused.is_(True))
        where: list[ColumnElement[bool]] = [SendLog.workspace_id.not_in(paused)]
        if urgent_only:
            where.append(SendLog.priority < PRIORITY_CAMPAIGN)
        async with db.transaction() as session:
            rows = await claim_due(
                session,
                SendLog,
                worker_id=worker_id,
                limit=EXPRESS_BATCH if urgent_only else self.batch_size,
                lease_seconds=LEASE_SECONDS,
                where=where,
                order_by=(SendLog.priority, SendLog.run_at),
                now=now,
            )
            if not rows:
                return []
            accounts = await session.execute(
                select(Workspace.id, Account.id, Account.plan)
                .join(Account, Account.id == Workspace.account_id)
                .where(Workspace.id.in_({r.workspace_id for r in rows}))
            )
            plans = {workspace: (account, plan) for workspace, account, plan in accounts.all()}
            kept, later = await self._within_ceiling(session, rows, plans, now)
            if later:
                await session.execute(
                    update(SendLog)
                    .where(SendLog.id.in_(later))
                    .values(run_at=limits.next_hour(now), locked_until=None, locked_by=None)
                )
            if urgent_only:
                return kept
            admission = await warmup.admit(
                session,
                self.settings,
                kept,
                {w: get_plan(plan) for w, (_account, plan) in plans.items()},
                now,
            )
            await warmup.defer(session, admission, now)
        held = set(admission.later)
        today = warmup.day_of(now)
        return [
            replace(row, warmup_domain=admission.counted[row.id], warmup_day=today)
            if row.id in admission.counted
            else row
            for row in kept
            if row.id not in held
        ]

    async def _within_ceiling(
        self, session: Any, rows: Sequence[SendLog], plans: dict[str, Any], now: datetime
    ) -> tuple[list[Claimed], list[str]]:
        """Campaign rows an account may still send this hour; the rest wait for the next
        hour. Transactional and test messages were admitted when they were queued."""
        room: dict[str, int] = {}
        kept: list[Claimed] = []
        later: list[str] = []
        for row in rows:
            account_id, plan_name = plans[row.workspace_id]
            if row.kind == "campaign":
                if account_id not in room:
                    room[account_id] = (
                        await limits.hourly_room(session, account_id, get_plan(plan_name), now)
                        - self.in_flight[account_id]
                    )
                if room[account_id] <= 0:
                    later.append(row.id)
                    continue
                room[account_id] -= 1
            kept.append(
                Claimed(
                    id=row.id,
                    workspace_id=row.workspace_id,
                    account_id=account_id,
                    kind=row.kind,
                    campaign_id=row.campaign_id,
                    contact_id=row.contact_id,
                    email=row.email,
                    attempts=row.attempts,
                    payload=row.payload,
                    created_at=row.created_at,
                    request_id=row.request_id,
                    variant_id=row.variant_id,
                )
            )
        return kept, later

    # ------------------------------------------------------------ one batch

    async def _batch(self, db: Database, rows: list[Claimed], express: bool = False) -> None:
        try:
            prepared = await self.prepare(db, rows)
            built = await self.build(prepared.jobs, in_thread=express)
            done = list(prepared.done)
            deliveries: list[Delivery] = []
            for item in built:
                if item.signing_seconds:
                    metrics.DKIM_SIGNING.observe(item.signing_seconds)
                row, sender, recipient, _email, provider = prepared.targets[item.row_id]
                if item.data is None:
                    done.append(
                        Outcome(
                            row, "failed", item.error or "could not be built", provider=provider
                        )
                    )
                else:
                    deliveries.append(Delivery(row.id, sender, recipient, item.data))
            message_ids = {j.row_id: j.message_id for job in prepared.jobs for j in job.recipients}
            transport = self.express_transport if express else self.transport
            results = await self._send(transport, deliveries, prepared)
            done.extend(self._judge(results, prepared, message_ids))
            async with db.transaction() as session:
                await outcomes.record(session, self.settings, done)
                await self._save_relay_states(session)
            for outcome in done:
                metrics.email_outcome(outcome.row.kind, outcome.state)
            _log_outcomes(done)
        except Exception:
            # The rows keep their lease and come back: sent again, never lost.
            log.exception("a sending batch of %d rows failed", len(rows))
        finally:
            for row in rows:
                self.in_flight[row.account_id] -= 1

    async def _send(
        self, transport: Transport, deliveries: list[Delivery], prepared: Prepared
    ) -> list[Result]:
        """Over the transport, each paced provider on no more connections than its budget
        (the others, and everyone while no provider is paced, all at once as before)."""
        budgets = {p: self.pacer.connections(p) for p in self.pacer.providers}
        if not budgets or not isinstance(transport, SmtpPool | Relays):
            return await transport.send(deliveries)
        groups: dict[str | None, list[Delivery]] = defaultdict(list)
        for delivery in deliveries:
            provider = prepared.targets[delivery.key][4]
            key = pacing.key_of(provider, delivery.recipient) if provider else None
            groups[key if key in budgets else None].append(delivery)

        async def paced(provider: str, group: list[Delivery]) -> list[Result]:
            gate = asyncio.Semaphore(budgets[provider])

            async def one(delivery: Delivery) -> list[Result]:
                async with gate:
                    return await transport.send([delivery])

            return [r for found in await asyncio.gather(*(one(d) for d in group)) for r in found]

        sent = await asyncio.gather(
            *(
                transport.send(group) if provider is None else paced(provider, group)
                for provider, group in groups.items()
            )
        )
        return [result for found in sent for result in found]

    def _judge(
        self, results: list[Result], prepared: Prepared, message_ids: dict[str, str]
    ) -> list[Outcome]:
        """Each relay answer as an outcome; each provider's pace learns from its answers: a
        deferral slows it and rests it, a batch without one speeds it up again."""
        outcomes: list[Outcome] = []
        deferring: set[str] = set()
        fine: set[str] = set()
        for result in results:
            row, _sender, recipient, email, provider = prepared.targets[result.key]
            message_id = message_ids.get(row.id)
            if provider and pacing.is_block(result.code, result.text):
                until = utcnow() + pacing.BLOCK_FOR
                outcomes.append(
                    Outcome(row, "blocked", result.detail, message_id, email, provider, until=until)
                )
                continue
            deferred = pacing.is_deferral(result.code)
            if provider:
                (deferring if deferred else fine).add(pacing.key_of(provider, recipient))
            state = (
                "sent"
                if result.sent
                else "bounced"
                if result.bounced
                else "failed"
                if result.failed
                else "retry"
            )
            outcomes.append(
                Outcome(row, state, result.detail, message_id, email, provider, deferred)
            )
        for provider in deferring:
            self.pacer.deferred(provider)
        for provider in fine - deferring:
            self.pacer.went_well(provider)
        return outcomes

    async def _save_relay_states(self, session: Any) -> None:
        """Several relays: their states in this worker's row, for the Sending page, when one
        changed or every 10 s (the counts)."""
        relays = self._transport
        if not isinstance(relays, Relays) or not self.worker_id:
            return
        now = time.monotonic()
        if not relays.take_changed() and now - self._relays_saved < 10.0:
            return
        self._relays_saved = now
        await session.execute(
            update(WorkerProcess)
            .where(WorkerProcess.id == self.worker_id)
            .values(relays=relays.states())
        )

    async def build(self, jobs: list[Job], in_thread: bool = False) -> list[Built]:
        if not jobs:
            return []
        loop = asyncio.get_running_loop()
        executor = None if in_thread else self.executor
        if executor is None:
            results = await asyncio.gather(*(asyncio.to_thread(build, job) for job in jobs))
        else:
            results = await asyncio.gather(
                *(loop.run_in_executor(executor, build, job) for job in jobs)
            )
        return [item for result in results for item in result]

    # ------------------------------------------------------------ prepare

    async def prepare(self, db: Database, rows: list[Claimed]) -> Prepared:
        settings = self.settings
        prepared = Prepared()
        async with db.session(write=False) as session:
            facts = await Facts.read(session, rows, settings.resolved_secret_key)
        now = utcnow()
        # With a relay, each recipient's mailbox provider (MX lookups with no connection held).
        providers = (
            await self.providers.of_domains(facts.recipient_domains(rows))
            if (settings.smtp_url)
            else {}
        )
        held: dict[str, int] = defaultdict(int)  # provider -> this batch's rows held for it
        groups: dict[tuple[Any, ...], Job] = {}
        for row in rows:
            contact = facts.contacts.get(row.contact_id or "")
            skip = facts.why_skip(row, contact)
            if skip:
                prepared.done.append(Outcome(row, "skipped", skip))
                continue
            source = facts.source(row)
            if source is None:
                prepared.done.append(Outcome(row, "failed", "its campaign no longer exists"))
                continue
            content, from_email, from_name, reply_to = source
            domain = facts.domains.get(
                (row.workspace_id, addresses.wire_domain(email_domain(from_email)))
            )
            # The operator's own mail (invitations) is from their domain, not a workspace's.
            operator = row.kind == "system" and bool((row.payload or {}).get("operator"))
            if settings.smtp_url and domain is None and not operator:
                prepared.done.append(
                    Outcome(row, "retry", f"{email_domain(from_email)} is not a verified domain")
                )
                continue
            email = contact.email if contact is not None else row.email
            try:
                to = addresses.wire(email)
            except addresses.Unwritable as problem:
                prepared.done.append(Outcome(row, "failed", f"{email}: {problem}", email=email))
                continue
            provider = providers.get(to.rpartition("@")[2].lower()) if providers else None
            if provider is not None:
                wait = self._wait_for(facts, row, provider, to, held, now)
                if wait is not None:
                    prepared.done.append(wait)
                    continue
            links = addresses.link_base(settings, domain, row.kind)
            recipient = recipient_for(
                settings,
                row_id=row.id,
                workspace_id=row.workspace_id,
                email=email,
                contact=contact,
                from_email=from_email,
                domain_verified=domain is not None,
                variables=facts.variables(row),
                list_headers=row.kind in addresses.LIST_MAIL,
                link_base=links,
            )
            headers = addresses.feedback_id(row.kind, _source_id(row), row.workspace_id)
            key = (content.key, from_email, from_name, reply_to, row.workspace_id, headers, links)
            job = groups.get(key)
            if job is None or len(job.recipients) >= JOB_SIZE:
                job = Job(
                    content=content,
                    sender=Sender(from_email, from_name, reply_to, signer_spec(domain)),
                    workspace_name=facts.workspace_names.get(row.workspace_id, ""),
                    secret=settings.resolved_secret_key,
                    date=now,
                    base_url=links,
                    public_url=settings.public_url,
                    headers=headers,
                )
                groups[key] = job
                prepared.jobs.append(job)
            job.recipients.append(recipient)
            envelope = addresses.return_path(settings, row.id, from_email, domain is not None)
            prepared.targets[row.id] = (row, envelope, to, email, provider)
        return prepared

    def _wait_for(
        self,
        facts: Facts,
        row: Claimed,
        provider: str,
        to: str,
        held: dict[str, int],
        now: datetime,
    ) -> Outcome | None:
        """Why the row waits instead of going to `provider` now (its block of the workspace,
        or the provider's pace), or None: it goes."""
        blocked = facts.blocked_until(row.workspace_id, provider, now)
        if blocked is not None:
            return Outcome(
                row,
                "held",
                f"{provider} refused this workspace's mail for policy: waits until "
                f"{blocked:%H:%M} UTC",
                provider=provider,
                until=blocked,
            )
        key = pacing.key_of(provider, to)
        if self.pacer.take(key):
            return None
        seconds = self.pacer.wait(key, held[key])
        held[key] += 1
        return Outcome(
            row,
            "held",
            f"{provider} is paced after deferrals: tried again in {seconds:.0f} s",
            provider=provider,
            until=now + timedelta(seconds=seconds),
        )


def _log_outcomes(done: list[Outcome]) -> None:
    """One line per message once its outcome is recorded, carrying the request that queued it:
    a one-off send (transactional, automation, test) at INFO, a campaign's at DEBUG (20,000
    lines a campaign would drown the rest). The address is masked here (the formatters' pattern
    does not know every address SMTPUTF8 allows) and the relay's answer redacted before it is
    cut (a cut address would no longer look like one)."""
    for outcome in done:
        row = outcome.row
        level = logging.DEBUG if row.kind == "campaign" else logging.INFO
        if log.isEnabledFor(level):
            log.log(
                level,
                "%s message %s to %s: %s%s",
                row.kind,
                row.id,
                mask_email(outcome.email or row.email),
                outcome.state,
                f" ({logs.redact(outcome.detail)[:200]})" if outcome.detail else "",
                extra={"request_id": row.request_id, "workspace_id": row.workspace_id},
            )


def _source_id(row: Claimed) -> str:
    """The campaign or automation a message belongs to (its Feedback-ID)."""
    return row.campaign_id or str((row.payload or {}).get("automation_id") or "")
