"""Acting on what came back: map a report to its message, then bounce, soft-bounce, complain
or mark delivered, in one transaction per report.

Mapping (the contract): a report is acted on only through the VERP token of the address it
was sent to (`bounces+<token>@...`), which must verify; a report to the domain's generic
`bounces@` address is mapped by the original Message-ID it quotes. A token that fails
verification changes nothing, whatever message it quotes. A mail to `unsubscribe+<token>@...`
(the List-Unsubscribe mailto) unsubscribes that message's contact.

Anyone can write to the generic address, and a Message-ID is seen by whoever sees the message
(a forward, a reply's References). So a report mapped by Message-ID alone acts only when it
names that message's own recipient (its Final-Recipient, Original-Rcpt-To, the quoted To:
`Outcome.names`), else it is `unmatched` and changes nothing; and it never counts toward
delivery health: its delivery report is kept with `signed` false, and
`sending.health.rates` counts a reported bounce or complaint only through a signed one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import case, func, insert, or_, select, update
from sqlalchemy.orm import aliased

from mailroom.accounts import service as accounts
from mailroom.bounces.reports import Outcome, Report, read
from mailroom.core import tokens
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.ids import new_id
from mailroom.db import Database, chunks
from mailroom.domains import dmarc
from mailroom.domains.dns import DMARC_MAILBOX
from mailroom.events import service as events
from mailroom.models import Contact, DeliveryReport, SendLog
from mailroom.pages import service as unsubscribe_page
from mailroom.sending import service as sending
from mailroom.sending.addresses import BOUNCE, MAIL_UNSUBSCRIBE
from mailroom.sending.outcomes import Contexts, contacts_blocked, message_data_of
from mailroom.settings import Settings

log = logging.getLogger("mailroom.bounces")

SOFT_LIMIT = 3  # soft bounces of different messages ...
SOFT_WINDOW = timedelta(days=15)  # ... within this, with no delivery between: a hard bounce
Delivered = aliased(DeliveryReport)


@dataclass(frozen=True)
class Target:
    kind: str  # bounce | generic | unsubscribe | dmarc
    row_id: str | None = None
    domain: str = ""  # of the generic address: must be the return path of the message named


def target_of(settings: Settings, address: str) -> Target | None:
    """What an inbound recipient address names, or None (unknown, or a forged token)."""
    local, _, domain = address.strip().strip("<>").rpartition("@")
    prefix, plus, token = local.lower().partition("+")
    secret = settings.resolved_secret_key
    if prefix == "bounces" and not plus:
        return Target("generic", domain=domain.lower().rstrip("."))
    if prefix == DMARC_MAILBOX and not plus:  # aggregate reports (domains.dmarc)
        return Target("dmarc", domain=domain.lower().rstrip("."))
    if prefix == "bounces":
        row_id = tokens.read_short(secret, BOUNCE, token)
        return Target("bounce", row_id) if row_id else None
    if prefix == "unsubscribe" and plus:
        row_id = tokens.read_short(secret, MAIL_UNSUBSCRIBE, token)
        return Target("unsubscribe", row_id) if row_id else None
    return None


@dataclass(frozen=True)
class Inbound:
    """One mail that came back, read and addressed (`target` verified)."""

    target: Target
    report: Report


def addressed(settings: Settings, recipients: list[str]) -> Target | None:
    """The recipient whose token verifies (a token one is preferred to the generic address),
    or None. A mail with any token that fails verification is dropped whole: a forged report
    must not reach the Message-ID fallback by also naming the generic address."""
    targets = [target_of(settings, r) for r in recipients]
    tokened = [t for r, t in zip(recipients, targets, strict=True) if "+" in r.rpartition("@")[0]]
    if targets and None not in tokened:
        chosen = sorted((t for t in targets if t), key=lambda t: t.kind == "generic")
        if chosen:
            return chosen[0]
    log.warning("dropped a report to %s: no verifiable token", ", ".join(recipients)[:200])
    return None


def generic_matches(settings: Settings, domain: str, message_id: str) -> bool:
    """Whether `bounces@<domain>` is where the message named came back to: the bounce host,
    or the sending domain (or its return-path subdomain) the Message-ID carries."""
    sent_from = message_id.rpartition("@")[2].lower()
    return domain in {
        (settings.return_path_domain or "").lower(),
        sent_from,
        f"{settings.return_path_subdomain}.{sent_from}".lower(),
    } - {""}


async def handle(db: Database, settings: Settings, recipients: list[str], data: bytes) -> str:
    """Act on one inbound mail; a word saying what happened (for the log and the tests)."""
    target = addressed(settings, recipients)
    if target is None:
        return "dropped"
    if target.kind == "unsubscribe":
        return await unsubscribe(db, settings, target.row_id or "")
    if target.kind == "dmarc":
        return await dmarc.receive(db, data)
    report = read(data)
    if not report.outcomes:
        return "ignored"
    return (await act(db, settings, [Inbound(target, report)]))[0]


@dataclass
class _Acted:
    row: Any
    outcome: Outcome
    signed: bool  # mapped through a verified return-path token, not a Message-ID
    word: str = ""
    detail: str = ""


async def act(db: Database, settings: Settings, mails: list[Inbound]) -> list[str]:
    """Act on a batch of reports in one transaction with a fixed number of statements, however
    many reports (the listener gathers what arrives while the previous batch is written): a
    word per mail, in order."""
    async with db.transaction() as session:
        rows = await _rows_of(session, mails)
        words = ["dropped"] * len(mails)
        by_mail: dict[int, _Acted] = {}
        for i, mail in enumerate(mails):
            row = rows.get(_key(mail))
            if row is None:
                log.warning("dropped a %s report: its message is unknown", mail.report.kind)
                continue
            signed = mail.target.kind == "bounce"
            if not signed and not generic_matches(
                settings, mail.target.domain, row.message_id or ""
            ):
                log.warning(
                    "dropped a report to bounces@%s: not its return path", mail.target.domain
                )
                continue
            outcome = _outcome_for(mail.report, row.email, signed)
            if outcome is None:
                # Quoting a Message-ID proves nothing: the report must be about its recipient.
                log.warning(
                    "unmatched %s report to bounces@%s quoting <%s>: not about its recipient",
                    mail.report.kind,
                    mail.target.domain,
                    row.message_id,
                )
                words[i] = "unmatched"
                continue
            by_mail[i] = _Acted(row, outcome, signed)
        acted = list(by_mail.values())
        if not acted:
            return words
        now = utcnow()
        await session.execute(
            insert(DeliveryReport),
            [
                {
                    "id": new_id(),
                    "workspace_id": a.row.workspace_id,
                    "send_log_id": a.row.id,
                    "contact_id": a.row.contact_id,
                    "kind": a.outcome.kind,
                    "signed": a.signed,
                    "status": a.outcome.status,
                    "diagnostic": a.outcome.diagnostic[:500],
                    "created_at": now,
                }
                for a in acted
            ],
        )
        await _soft_to_hard(session, [a for a in acted if a.outcome.kind == "soft"], now)
        contexts = Contexts(session, settings)
        await _delivered(
            session, contexts, [a for a in acted if a.outcome.kind == "delivered"], now
        )
        hurt = await _blocked(session, contexts, acted, now)
        for workspace_id in sorted(hurt):
            await sending.check_health(await contexts(workspace_id))
        for i, a in by_mail.items():
            words[i] = a.word or a.outcome.kind  # a soft bounce may have become hard
        return words


def _key(mail: Inbound) -> str:
    if mail.target.kind == "bounce":
        return f"id:{mail.target.row_id}"
    return f"mid:{(mail.report.original_message_id or '').strip().strip('<>')}"


_ROW_COLUMNS = (
    SendLog.id,
    SendLog.workspace_id,
    SendLog.campaign_id,
    SendLog.contact_id,
    SendLog.email,
    SendLog.kind,
    SendLog.message_id,
)


async def _rows_of(session: Any, mails: list[Inbound]) -> dict[str, Any]:
    """The send-log rows the batch names, by `_key`: by verified token, or by the quoted
    Message-ID for a report to the generic address."""
    ids = sorted({m.target.row_id for m in mails if m.target.kind == "bounce" and m.target.row_id})
    message_ids = sorted(
        {k[4:] for k in (_key(m) for m in mails if m.target.kind == "generic") if k != "mid:"}
    )
    found: dict[str, Any] = {}
    for part in chunks(session, ids):
        for row in await session.execute(select(*_ROW_COLUMNS).where(SendLog.id.in_(part))):
            found[f"id:{row.id}"] = row
    for part in chunks(session, message_ids):
        rows = await session.execute(select(*_ROW_COLUMNS).where(SendLog.message_id.in_(part)))
        for row in rows:
            found[f"mid:{row.message_id}"] = row
    return found


def _outcome_for(report: Report, email: str, signed: bool) -> Outcome | None:
    """The report's outcome for the message's recipient. A signed token names the message
    itself, so a report that names its recipient otherwise (a forward, a rewritten address)
    still counts; a Message-ID alone does not: None."""
    for outcome in report.outcomes:
        if outcome.names(email):
            return outcome
    return report.outcomes[0] if signed else None


async def _soft_to_hard(session: Any, soft: list[_Acted], now: Any) -> None:
    """A soft bounce is a hard one when its contact has had soft bounces of `SOFT_LIMIT`
    different messages within `SOFT_WINDOW`, with no delivery report since the first."""
    contacts = sorted({a.row.contact_id for a in soft if a.row.contact_id})
    if not contacts:
        return
    since = now - SOFT_WINDOW
    last_delivery = (
        select(func.max(Delivered.created_at))
        .where(
            Delivered.contact_id == DeliveryReport.contact_id,
            Delivered.kind == "delivered",
        )
        .scalar_subquery()
    )
    counts: dict[str, int] = {}
    for part in chunks(session, contacts):
        rows = await session.execute(
            select(DeliveryReport.contact_id, func.count(func.distinct(DeliveryReport.send_log_id)))
            .where(
                DeliveryReport.contact_id.in_(part),
                DeliveryReport.kind == "soft",
                DeliveryReport.created_at >= since,
                or_(last_delivery.is_(None), DeliveryReport.created_at >= last_delivery),
            )
            .group_by(DeliveryReport.contact_id)
        )
        counts.update({contact_id: int(count) for contact_id, count in rows})
    for a in soft:
        if counts.get(a.row.contact_id or "", 0) >= SOFT_LIMIT:
            a.word = "hard"
            a.detail = (
                f"{SOFT_LIMIT} soft bounces within {SOFT_WINDOW.days} days: "
                f"{a.outcome.diagnostic or a.outcome.status}"
            )


async def _delivered(session: Any, contexts: Contexts, done: list[_Acted], now: Any) -> None:
    first = await _set_first(session, [a.row.id for a in done], SendLog.delivered_at, now)
    for a in _once(done, first):
        await events.emit(
            await contexts(a.row.workspace_id),
            "email.delivered",
            message_data_of(a.row),
            campaign_id=a.row.campaign_id,
        )


async def _blocked(session: Any, contexts: Contexts, acted: list[_Acted], now: Any) -> set[str]:
    """Hard bounces and complaints: the message's status, the contact and address blocked,
    `email.bounced` / `email.complained` on a message's first report. The workspaces whose
    health needs a look: those with a signed report (one mapped by Message-ID only is not
    counted; a signed one confirming it now is, though the message was marked before)."""
    hurt: set[str] = set()
    for kind, column, status, source in (
        ("complaint", SendLog.complained_at, "complained", "fbl"),
        ("hard", SendLog.bounced_at, "bounced", "dsn"),
    ):
        group = [a for a in acted if (a.word or a.outcome.kind) == kind]
        if not group:
            continue
        first = await _set_first(session, [a.row.id for a in group], column, now, status=status)
        for workspace_id in sorted({a.row.workspace_id for a in group}):
            ctx = await contexts(workspace_id)
            mine = [a for a in group if a.row.workspace_id == workspace_id]
            blocked = [(a.row.contact_id, a.row.email) for a in mine]
            await contacts_blocked(ctx, blocked, reason=status, source=source)
            if any(a.signed for a in mine):
                hurt.add(workspace_id)
            for a in _once(mine, first):
                if kind == "complaint":
                    detail = {"complaint": {"feedback_type": a.outcome.diagnostic or "abuse"}}
                    event = "email.complained"
                else:
                    response = (a.detail or a.outcome.diagnostic or a.outcome.status)[:500]
                    detail = {"bounce": {"type": "hard", "response": response}}
                    event = "email.bounced"
                data = {**message_data_of(a.row), **detail}
                await events.emit(ctx, event, data, campaign_id=a.row.campaign_id)
    return hurt


def _once(group: list[_Acted], first: set[str]) -> list[_Acted]:
    """The reports of the messages this batch marked first, one per message."""
    seen: set[str] = set()
    chosen = []
    for a in group:
        if a.row.id in first and a.row.id not in seen:
            seen.add(a.row.id)
            chosen.append(a)
    return chosen


async def _set_first(
    session: Any, ids: list[str], column: Any, now: Any, *, status: str | None = None
) -> set[str]:
    """Set each row's `column` once (a guarded UPDATE: a report repeated or racing acts once);
    the rows set now."""
    values: dict[str, Any] = {column.key: now, "updated_at": now}
    if status:
        # A bounce reported after a complaint leaves the message `complained`.
        values["status"] = case((SendLog.status == "complained", "complained"), else_=status)
    first: set[str] = set()
    for part in chunks(session, sorted(set(ids))):
        done = await session.execute(
            update(SendLog)
            .where(SendLog.id.in_(part), column.is_(None))
            .values(values)
            .returning(SendLog.id)
            .execution_options(synchronize_session=False)
        )
        first.update(str(rid) for rid in done.scalars().all())
    return first


async def unsubscribe(db: Database, settings: Settings, row_id: str) -> str:
    """The List-Unsubscribe mailto: the same effect as the one-click link."""
    async with db.transaction() as session:
        row = await session.scalar(select(SendLog).where(SendLog.id == row_id))
        if row is None or not row.contact_id:
            return "dropped"
        contact = await session.scalar(
            select(Contact).where(
                Contact.id == row.contact_id, Contact.workspace_id == row.workspace_id
            )
        )
        if contact is None:
            return "dropped"
        principal = await accounts.principal_for_workspace(session, row.workspace_id)
        ctx = Context(session, principal, settings)
        await unsubscribe_page.opt_out(ctx, contact, row_id=row.id, source="unsubscribe_mail")
    return "unsubscribed"
