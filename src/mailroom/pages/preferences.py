"""The preferences page `/p/{token}`: the workspace's lists the contact may join or leave, name
and language, and unsubscribing from everything.

The token (from a message's `{{preferences_url}}`) names workspace, contact and message. Lists
joined here are confirmed at once (the person followed a link mailed to that address); leaving
one fires `contact.list_left`. Only a subscribed contact joins lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, select

from mailroom.accounts import service as accounts
from mailroom.contacts import memberships
from mailroom.contacts import service as contacts
from mailroom.core import tokens
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.db import Database, insert_ignoring_conflicts
from mailroom.models import Contact, ListMember, MailingList, Workspace
from mailroom.pages.service import opt_out
from mailroom.sending.addresses import PREFERENCES
from mailroom.settings import Settings


@dataclass
class Preferences:
    workspace_name: str
    email: str
    first_name: str
    last_name: str
    language: str | None
    status: str
    lists: list[tuple[str, str, bool]] = field(default_factory=list)  # (id, name, member)


def _ids(settings: Settings, token: str) -> tuple[str, str, str] | None:
    """(workspace, contact, the message whose link it was)."""
    parts = tokens.read(settings.resolved_secret_key, PREFERENCES, token)
    if parts is None or len(parts) != 3:
        return None
    return parts[0], parts[1], parts[2]


async def _load(session: Any, workspace_id: str, contact_id: str) -> Preferences | None:
    found = (
        await session.execute(
            select(Contact, accounts.shown_name())
            .join(Workspace, Workspace.id == Contact.workspace_id)
            .where(Contact.id == contact_id, Contact.workspace_id == workspace_id)
        )
    ).first()
    if found is None:
        return None
    contact, name = found
    member = set(
        (
            await session.scalars(
                select(ListMember.list_id).where(ListMember.contact_id == contact.id)
            )
        ).all()
    )
    lists = (
        await session.execute(
            select(MailingList.id, MailingList.name)
            .where(MailingList.workspace_id == workspace_id)
            .order_by(MailingList.name_key)
        )
    ).all()
    return Preferences(
        str(name or ""),
        contact.email,
        contact.first_name or "",
        contact.last_name or "",
        contact.language,
        contact.status,
        [(list_id, list_name, list_id in member) for list_id, list_name in lists],
    )


async def look(db: Database, settings: Settings, token: str) -> Preferences | None:
    ids = _ids(settings, token)
    if ids is None:
        return None
    async with db.session(write=False) as session:
        return await _load(session, ids[0], ids[1])


async def save(
    db: Database, settings: Settings, token: str, form: dict[str, Any]
) -> Preferences | None:
    """Apply the form (`list` ids checked, `first_name`, `last_name`, `language`, or
    `action=unsubscribe_all`); the page as it is afterwards. A bad value is a 400 ApiError."""
    ids = _ids(settings, token)
    if ids is None:
        return None
    workspace_id, contact_id, row_id = ids
    async with db.transaction() as session:
        current = await _load(session, workspace_id, contact_id)
        if current is None:
            return None
        principal = await accounts.principal_for_workspace(session, workspace_id)
        ctx = Context(session, principal, settings)
        if form.get("action") == "unsubscribe_all":
            contact = await contacts.get_contact(ctx, contact_id)
            await opt_out(ctx, contact, row_id=row_id, source="preferences_page")
        else:
            changes: dict[str, Any] = {
                key: str(form.get(key) or "").strip() or None
                for key in ("first_name", "last_name", "language")
                if key in form
            }
            if changes:
                await contacts.update_contact(ctx, contact_id, changes)
            await _lists(ctx, current, contact_id, set(form.get("list") or []))
        return await _load(session, workspace_id, contact_id)


async def _lists(ctx: Context, current: Preferences, contact_id: str, wanted: set[str]) -> None:
    contact = await contacts.get_contact(ctx, contact_id)
    now = utcnow()
    for list_id, list_name, member in current.lists:
        if member and list_id not in wanted:
            await ctx.session.execute(
                delete(ListMember).where(
                    ListMember.list_id == list_id, ListMember.contact_id == contact_id
                )
            )
            await memberships.list_event(ctx, "contact.list_left", contact, list_id, list_name)
        elif not member and list_id in wanted and contact.status == "subscribed":
            await ctx.session.execute(
                insert_ignoring_conflicts(ctx.session, ListMember).values(
                    list_id=list_id,
                    contact_id=contact_id,
                    workspace_id=ctx.workspace_id,
                    status="confirmed",
                    created_at=now,
                    confirmed_at=now,
                )
            )
            await memberships.list_event(ctx, "contact.list_joined", contact, list_id, list_name)
