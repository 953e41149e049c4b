"""Pieces shared by everything that sends: the sender's signing key, building jobs for rows,
and sending a few messages right now from a request (campaign test sends).

A request that sends reads what it needs, ends its transaction (no connection is held while
it renders or talks SMTP), builds and sends, then writes the outcome in a new short
transaction (the request's unit of work commits it).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from sqlalchemy import select

from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.emails import normalize_email
from mailroom.core.ids import new_id
from mailroom.models import PRIORITY_TRANSACTIONAL, Contact, SendingDomain, SendLog, Workspace
from mailroom.sending import addresses, limits
from mailroom.sending.build import Built, Content, Job, Recipient, Sender, SignerSpec, build
from mailroom.sending.relays import transport_for
from mailroom.sending.service import verified_domain
from mailroom.sending.transport import Delivery
from mailroom.settings import Settings


def signer_spec(domain: SendingDomain | None) -> SignerSpec | None:
    if domain is None:
        return None
    return SignerSpec(domain.id, domain.domain, domain.dkim_selector, domain.dkim_private_key)


def outbox_dir(settings: Settings) -> Any:
    return settings.data_dir / "outbox"


def recipient_for(
    settings: Settings,
    *,
    row_id: str,
    workspace_id: str,
    email: str,
    contact: Any | None,
    from_email: str,
    domain_verified: bool,
    variables: dict[str, Any] | None = None,
    list_headers: bool = True,
    link_base: str = "",
) -> Recipient:
    """The recipient's links and fields; `list_headers`: it gets List-Unsubscribe (see
    `addresses.LIST_MAIL`); `link_base`: where its links point (the public URL when empty)."""
    contact_id = contact.id if contact is not None else ""
    unsubscribe = (
        addresses.unsubscribe_url(settings, workspace_id, contact_id, row_id, link_base)
        if contact_id
        else ""
    )
    return Recipient(
        row_id=row_id,
        email=email,
        first_name=(contact.first_name if contact is not None else "") or "",
        last_name=(contact.last_name if contact is not None else "") or "",
        custom_fields=dict(contact.custom_fields or {}) if contact is not None else {},
        message_id=addresses.message_id(row_id, from_email),
        unsubscribe_url=unsubscribe,
        list_unsubscribe=(
            addresses.list_unsubscribe(settings, unsubscribe, row_id, from_email, domain_verified)
            if unsubscribe and list_headers
            else ()
        ),
        variables=variables,
        webview_url=addresses.webview_url(settings, workspace_id, row_id, link_base),
        preferences_url=(
            addresses.preferences_url(settings, workspace_id, contact_id, row_id, link_base)
            if contact_id
            else ""
        ),
    )


@dataclass(frozen=True)
class TestMessage:
    campaign_key: tuple[str, ...]
    subject: str
    preheader: str
    html: str
    text: str
    from_email: str
    from_name: str
    reply_to: str
    variables: dict[str, Any] | None = None  # the campaign's own (an RSS issue's)


async def send_now(
    ctx: Context, message: TestMessage, emails: list[str], *, campaign_id: str | None
) -> int:
    """Send `message` to each address at once (`[Test]` subject); returns how many the relay
    accepted. Each is logged in the send log (kind `test`) and reserved from the allowance."""
    settings = ctx.settings
    domain = await verified_domain(ctx, message.from_email)
    name = await ctx.session.scalar(select(Workspace.name).where(Workspace.id == ctx.workspace_id))
    found = {
        c.email: SimpleNamespace(
            id=c.id,
            first_name=c.first_name,
            last_name=c.last_name,
            custom_fields=dict(c.custom_fields or {}),
        )
        for c in (
            await ctx.session.scalars(
                select(Contact).where(
                    Contact.workspace_id == ctx.workspace_id,
                    Contact.email.in_([normalize_email(e) for e in emails]),
                )
            )
        ).all()
    }
    signer = signer_spec(domain)
    # Only reads so far: no connection is held while sending. (Rows read are expired by the
    # rollback, hence the plain copies above.)
    await ctx.session.rollback()

    rows = [(new_id(), email) for email in emails]
    now = utcnow()
    job = Job(
        content=Content(
            ("test", *message.campaign_key),
            message.subject,
            message.preheader,
            message.html,
            message.text,
        ),
        sender=Sender(message.from_email, message.from_name, message.reply_to, signer),
        workspace_name=str(name or ""),
        secret=settings.resolved_secret_key,
        date=now,
        recipients=[
            recipient_for(
                settings,
                row_id=row_id,
                workspace_id=ctx.workspace_id,
                email=email,
                contact=found.get(normalize_email(email)),
                from_email=message.from_email,
                domain_verified=domain is not None,
                variables=message.variables,
            )
            for row_id, email in rows
        ],
        subject_prefix="[Test] ",
    )
    built: list[Built] = await asyncio.to_thread(build, job)
    transport = transport_for(
        settings.smtp_url, outbox_dir(settings), len(built), settings.resolved_smtp_helo
    )
    try:
        deliveries = [
            Delivery(
                b.row_id,
                addresses.return_path(settings, b.row_id, message.from_email, domain is not None),
                addresses.wire(email),  # built: its domain has an IDNA form
                b.data,
            )
            for b, (_row, email) in zip(built, rows, strict=True)
            if b.data is not None
        ]
        results = {r.key: r for r in await transport.send(deliveries)}
    finally:
        await transport.close()

    sent = 0
    for b, (row_id, email) in zip(built, rows, strict=True):
        result = results.get(row_id)
        ok = result is not None and result.sent
        sent += ok
        contact = found.get(normalize_email(email))
        ctx.session.add(
            SendLog(
                id=row_id,
                workspace_id=ctx.workspace_id,
                kind="test",
                campaign_id=None,
                contact_id=contact.id if contact is not None else None,
                email=email,
                priority=PRIORITY_TRANSACTIONAL,
                attempts=1,
                payload={"test_of": campaign_id} if campaign_id else None,
                status="sent" if ok else "failed",
                message_id=addresses.message_id(row_id, message.from_email),
                smtp_response=result.text[:500] if result is not None else None,
                error=None if ok else (b.error or (result.text if result else "not sent"))[:500],
                sent_at=now if ok else None,
                run_at=now,
                created_at=now,
                updated_at=now,
            )
        )
    await limits.add_month(ctx.session, ctx.principal.account_id, sent, now)
    return sent
