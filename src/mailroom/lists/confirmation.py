"""Double opt-in: the confirmation email for an unconfirmed list membership, and confirming it
from the link (`/confirm/{token}`).

The token names workspace, list and contact and when it was made; it is signed and expires
after 7 days (the page then offers a new email). Confirming sets the membership `confirmed`
and fires `contact.list_joined` (list dimension), once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import select, update

from mailroom.accounts import service as accounts
from mailroom.contacts import memberships
from mailroom.contacts import service as contacts
from mailroom.core import tokens
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.db import Database
from mailroom.lists import service as lists
from mailroom.models import Contact, ListMember, MailingList, Workspace
from mailroom.pages.emails import confirmation_email
from mailroom.sending import transactional
from mailroom.settings import Settings
from mailroom.templates.source import literal

CONFIRM = "confirm"  # token purpose
VALID_SECONDS = 7 * 24 * 3600


def confirm_url(settings: Settings, workspace_id: str, list_id: str, contact_id: str) -> str:
    token = tokens.sign(
        settings.resolved_secret_key,
        CONFIRM,
        workspace_id,
        list_id,
        contact_id,
        str(int(time.time())),
    )
    return f"{settings.public_url.rstrip('/')}/confirm/{token}"


async def request_confirmation(ctx: Context, list_id: str, contact_id: str) -> None:
    """Queue the confirmation email (from the workspace's sender identity; it counts against
    the allowance like any send). 404 when the contact is not on the list, 409 when the
    membership is already confirmed."""
    mailing_list = await lists.get_list(ctx, list_id)
    contact = await contacts.get_contact(ctx, contact_id)
    status = await ctx.session.scalar(
        select(ListMember.status).where(
            ListMember.list_id == mailing_list.id, ListMember.contact_id == contact.id
        )
    )
    if status is None:
        raise ApiError(404, "This contact is not on the list")
    if status == "confirmed":
        raise ApiError(409, "This contact has already confirmed this list")
    name = await ctx.session.scalar(
        select(accounts.shown_name()).where(Workspace.id == ctx.workspace_id)
    )
    link = confirm_url(ctx.settings, ctx.workspace_id, mailing_list.id, contact.id)
    message = confirmation_email(
        contact.language, str(name or ""), mailing_list.name, contact.email, link
    )
    # The message is finished text, and the engine renders every payload as a template: it
    # goes in as literal source, so an address, list or workspace name holding `{{ ... }}`
    # is printed, never run (as `transactional.queue_system` does for the forms' email).
    parts = {name: literal(text, before_tag=False) for name, text in message.items()}
    await transactional.queue(ctx, {"contact_id": contact.id, **parts})


@dataclass(frozen=True)
class Pending:
    workspace_id: str
    list_id: str
    contact_id: str
    expired: bool


def read_token(settings: Settings, token: str) -> Pending | None:
    parts = tokens.read(settings.resolved_secret_key, CONFIRM, token)
    if parts is None or len(parts) != 4 or not parts[3].isdecimal():
        return None
    expired = time.time() - int(parts[3]) > VALID_SECONDS
    return Pending(parts[0], parts[1], parts[2], expired)


@dataclass(frozen=True)
class Membership:
    workspace_name: str
    list_name: str
    email: str
    language: str | None
    status: str  # confirmed | unconfirmed


async def look(db: Database, pending: Pending) -> Membership | None:
    async with db.session(write=False) as session:
        found = (
            await session.execute(
                select(
                    accounts.shown_name(),
                    MailingList.name,
                    Contact.email,
                    Contact.language,
                    ListMember.status,
                )
                .join(MailingList, MailingList.workspace_id == Workspace.id)
                .join(ListMember, ListMember.list_id == MailingList.id)
                .join(Contact, Contact.id == ListMember.contact_id)
                .where(
                    Workspace.id == pending.workspace_id,
                    MailingList.id == pending.list_id,
                    Contact.id == pending.contact_id,
                    Contact.workspace_id == pending.workspace_id,
                )
            )
        ).first()
    if found is None:
        return None
    return Membership(str(found[0] or ""), str(found[1]), found[2], found[3], found[4])


async def confirm(db: Database, settings: Settings, pending: Pending) -> bool:
    """Whether this request confirmed it (False: it was already confirmed)."""
    async with db.transaction() as session:
        now = utcnow()
        done = await session.execute(
            update(ListMember)
            .where(
                ListMember.list_id == pending.list_id,
                ListMember.contact_id == pending.contact_id,
                ListMember.workspace_id == pending.workspace_id,
                ListMember.status != "confirmed",
            )
            .values(status="confirmed", confirmed_at=now)
        )
        if not getattr(done, "rowcount", 0):
            return False
        principal = await accounts.principal_for_workspace(session, pending.workspace_id)
        ctx = Context(session, principal, settings)
        contact = await contacts.get_contact(ctx, pending.contact_id)
        mailing_list = await session.scalar(
            select(MailingList).where(MailingList.id == pending.list_id)
        )
        assert mailing_list is not None
        await memberships.list_event(
            ctx, "contact.list_joined", contact, mailing_list.id, mailing_list.name
        )
    return True


async def resend(db: Database, settings: Settings, pending: Pending) -> None:
    async with db.transaction() as session:
        principal = await accounts.principal_for_workspace(session, pending.workspace_id)
        ctx = Context(session, principal, settings)
        await request_confirmation(ctx, pending.list_id, pending.contact_id)
