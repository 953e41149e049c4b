"""Subscriber pages (no key): unsubscribing from a link in an email.

The token names workspace, contact and message, is signed (an altered one names nothing) and
never expires. Unsubscribing is idempotent: the contact becomes `unsubscribed` (with
`contact.unsubscribed`), the address is suppressed as `unsubscribed` (so a later import or
re-creation does not mail it again without fresh consent), and the message counts in its
campaign's `unsubscribed` stat. A deleted or erased contact's link is a 404 page, like an
altered one: the contact is gone (its address is already suppressed as `deleted`, so nothing
more is sent to it) and there is nothing left to show or change.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.accounts import service as accounts
from mailroom.contacts import service as contacts
from mailroom.core import tokens
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.db import Database
from mailroom.models import Contact, SendLog, Workspace
from mailroom.sending.addresses import UNSUBSCRIBE
from mailroom.settings import Settings
from mailroom.suppressions import service as suppressions

SOURCE = "unsubscribe_link"  # the suppression row's source


@dataclass(frozen=True)
class Subscriber:
    workspace_name: str
    email: str
    language: str | None
    status: str


async def _load(
    session: AsyncSession, settings: Settings, token: str, *, lock: bool = False
) -> tuple[Contact, str, str] | None:
    """The contact a token names (checked before anything is read), its workspace's name and
    the message's row id. `lock`: on PostgreSQL the contact row is held until the end of the
    transaction, so a one-click POST and a click on the button at once unsubscribe once."""
    parts = tokens.read(settings.resolved_secret_key, UNSUBSCRIBE, token)
    if parts is None or len(parts) != 3:
        return None
    workspace_id, contact_id, row_id = parts
    query = (
        select(Contact, accounts.shown_name())
        .join(Workspace, Workspace.id == Contact.workspace_id)
        .where(Contact.id == contact_id, Contact.workspace_id == workspace_id)
    )
    if lock and session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update(of=Contact)
    found = (await session.execute(query)).first()
    if found is None:
        return None
    return found[0], str(found[1] or ""), row_id


def _subscriber(contact: Contact, workspace_name: str) -> Subscriber:
    return Subscriber(workspace_name, contact.email, contact.language, contact.status)


async def look(db: Database, settings: Settings, token: str) -> Subscriber | None:
    async with db.session(write=False) as session:
        loaded = await _load(session, settings, token)
    return _subscriber(loaded[0], loaded[1]) if loaded else None


async def opt_out(ctx: Context, contact: Contact, *, row_id: str | None, source: str) -> bool:
    """The one unsubscribe effect of every path (link, one-click, mailto, preferences page):
    a subscribed contact becomes `unsubscribed` (`contact.unsubscribed`), the address is
    suppressed as `unsubscribed` whatever the status (never weakening a bounce or complaint),
    and the message that carried it counts it once. Whether anything changed."""
    changed = contact.status == "subscribed"
    if changed:
        await contacts.update_contact(ctx, contact.id, {"status": "unsubscribed"})
    outcome = await suppressions.suppress(
        ctx, email=contact.email, reason="unsubscribed", source=source
    )
    if contact.status == "archived" and contact.previous_status in (None, "subscribed"):
        changed = changed or outcome != "unchanged"
    if changed and row_id:
        await ctx.session.execute(
            update(SendLog)
            .where(
                SendLog.id == row_id,
                SendLog.workspace_id == contact.workspace_id,
                SendLog.unsubscribed_at.is_(None),
            )
            .values(unsubscribed_at=utcnow())
        )
    return changed


async def unsubscribe(
    db: Database, settings: Settings, token: str
) -> tuple[Subscriber, bool] | None:
    """(the subscriber, whether they were already unsubscribed), or None for a bad token.

    A subscribed contact becomes `unsubscribed` (`contact.unsubscribed`) and the message that
    carried the link counts it (its campaign's `stats.unsubscribed`, once). Whatever the
    contact's status, the address ends up suppressed as `unsubscribed` (never weakening a
    bounce or complaint): an archived contact restored later comes back `unsubscribed`, as the
    spec's restore rule says of a contact blocked meanwhile.
    """
    async with db.transaction() as session:
        loaded = await _load(session, settings, token, lock=True)
        if loaded is None:
            return None
        contact, workspace_name, row_id = loaded
        principal = await accounts.principal_for_workspace(session, contact.workspace_id)
        ctx = Context(session, principal, settings)
        changed = await opt_out(ctx, contact, row_id=row_id, source=SOURCE)
        return _subscriber(contact, workspace_name), not changed
