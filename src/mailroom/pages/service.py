"""Subscriber pages (no key): unsubscribing from a link in an email.

The token names workspace, contact and message, is signed (an altered one names nothing) and
never expires. Unsubscribing is idempotent: the contact becomes `unsubscribed` (with
`contact.unsubscribed`), the address is suppressed as `unsubscribed` (so a later import or
re-creation does not mail it again without fresh consent), and the message counts in its
campaign's `unsubscribed` stat.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update

from mailroom.accounts import service as accounts
from mailroom.contacts import service as contacts
from mailroom.core import tokens
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.db import Database
from mailroom.models import Contact, SendLog, Workspace
from mailroom.sending.addresses import UNSUBSCRIBE
from mailroom.settings import Settings


@dataclass(frozen=True)
class Subscriber:
    workspace_name: str
    email: str
    language: str | None
    status: str


async def _load(session: object, settings: Settings, token: str) -> tuple[Contact, str, str] | None:
    parts = tokens.read(settings.resolved_secret_key, UNSUBSCRIBE, token)
    if parts is None or len(parts) != 3:
        return None
    workspace_id, contact_id, row_id = parts
    found = (
        await session.execute(  # type: ignore[attr-defined]
            select(Contact, Workspace.name)
            .join(Workspace, Workspace.id == Contact.workspace_id)
            .where(Contact.id == contact_id, Contact.workspace_id == workspace_id)
        )
    ).first()
    if found is None:
        return None
    return found[0], str(found[1] or ""), row_id


def _subscriber(contact: Contact, workspace_name: str) -> Subscriber:
    return Subscriber(workspace_name, contact.email, contact.language, contact.status)


async def look(db: Database, settings: Settings, token: str) -> Subscriber | None:
    async with db.session(write=False) as session:
        loaded = await _load(session, settings, token)
    return _subscriber(loaded[0], loaded[1]) if loaded else None


async def unsubscribe(
    db: Database, settings: Settings, token: str
) -> tuple[Subscriber, bool] | None:
    """(the subscriber, whether they were already unsubscribed), or None for a bad token."""
    async with db.transaction() as session:
        loaded = await _load(session, settings, token)
        if loaded is None:
            return None
        contact, workspace_name, row_id = loaded
        already = contact.status != "subscribed"
        if not already:
            principal = await accounts.principal_for_workspace(session, contact.workspace_id)
            ctx = Context(session, principal, settings)
            await contacts.update_contact(
                ctx, contact.id, {"status": "unsubscribed", "suppress": True}
            )
        await session.execute(
            update(SendLog)
            .where(
                SendLog.id == row_id,
                SendLog.workspace_id == contact.workspace_id,
                SendLog.unsubscribed_at.is_(None),
            )
            .values(unsubscribed_at=utcnow())
        )
        return _subscriber(contact, workspace_name), already
