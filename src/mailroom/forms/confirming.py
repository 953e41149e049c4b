"""Confirming a double opt-in submission: the link's token, what the confirmation page
shows, applying the answers when the link is followed, and a fresh link for an expired one.
The submitting half is `forms.submission`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from mailroom.accounts import service as accounts
from mailroom.automations import enrol as automations
from mailroom.core import tokens
from mailroom.core.clock import utcnow
from mailroom.db import Database
from mailroom.forms import loading
from mailroom.forms.mailing import CONFIRM, send_confirmation
from mailroom.forms.submission import (
    BLOCKED,
    VALID_SECONDS,
    announce,
    apply_answers,
    form_context,
    form_lists,
)
from mailroom.models import Contact, FormSubmission, MailingList, Workspace
from mailroom.settings import Settings
from mailroom.suppressions import service as suppressions


@dataclass(frozen=True)
class Pending:
    workspace_id: str
    submission_id: str
    expired: bool


def read_token(settings: Settings, token: str) -> Pending | None:
    parts = tokens.read(settings.resolved_secret_key, CONFIRM, token)
    if parts is None or len(parts) != 3 or not parts[2].isdecimal():
        return None
    return Pending(parts[0], parts[1], time.time() - int(parts[2]) > VALID_SECONDS)


@dataclass(frozen=True)
class Shown:
    """What the confirmation page says."""

    workspace_name: str
    what: str | None  # the lists' names, or None for the workspace's mail
    email: str
    language: str
    confirmed: bool


async def look(db: Database, pending: Pending) -> Shown | None:
    async with db.session(write=False) as session:
        return await _shown(session, pending)


async def _shown(session: Any, pending: Pending) -> Shown | None:
    row = (
        await session.execute(
            select(FormSubmission, accounts.shown_name())
            .join(Workspace, Workspace.id == FormSubmission.workspace_id)
            .where(
                FormSubmission.id == pending.submission_id,
                FormSubmission.workspace_id == pending.workspace_id,
            )
        )
    ).first()
    if row is None:
        return None
    submission, name = row
    email = submission.email
    if not email and submission.contact_id:
        email = str(
            await session.scalar(select(Contact.email).where(Contact.id == submission.contact_id))
            or ""
        )
    names = (
        await session.scalars(
            select(MailingList.name).where(
                MailingList.workspace_id == submission.workspace_id,
                MailingList.id.in_(submission.answers.get("list_ids") or []),
            )
        )
    ).all()
    return Shown(
        str(name or ""),
        ", ".join(names) if names else None,
        email,
        submission.language,
        submission.status == "confirmed",
    )


async def confirm(db: Database, settings: Settings, pending: Pending) -> bool:
    """Apply a pending submission. Whether this request did it (False: it was already)."""
    async with db.transaction() as session:
        query = select(FormSubmission).where(
            FormSubmission.id == pending.submission_id,
            FormSubmission.workspace_id == pending.workspace_id,
        )
        if session.get_bind().dialect.name == "postgresql":
            query = query.with_for_update()
        submission = await session.scalar(query)
        if submission is None or submission.status == "confirmed":
            return False
        form, ctx = await form_context(session, settings, submission.form_id)
        now = utcnow()
        submission.status, submission.confirmed_at = "confirmed", now
        email = submission.email
        suppression, contact = await loading.known(ctx, email)
        if (suppression is not None and suppression.reason in BLOCKED) or (
            contact is not None and contact.status in BLOCKED
        ):
            return True  # it bounced or complained meanwhile: confirming changes nothing
        if suppression is not None:
            await suppressions.remove(ctx, suppression)  # the fresh consent it needed
        answers = {k: v for k, v in submission.answers.items() if k != "list_ids"}
        lists = await form_lists(ctx, submission.answers.get("list_ids") or [])
        consent = {"consent_ip": submission.consent_ip, "consent_source": f"form:{form.id}"}
        contact = await apply_answers(
            ctx, form, lists, contact, email, answers, submission.language, consent
        )
        submission.contact_id, submission.email = contact.id, ""
        if not submission.announced:
            submission.announced = True
            await announce(ctx, form, contact, double=True)
        await automations.enrol(ctx, "form_submitted", [contact.id], form_id=form.id)
    return True


async def resend(db: Database, settings: Settings, pending: Pending) -> None:
    """A new confirmation email (with a fresh link) for an expired one."""
    async with db.transaction() as session:
        submission = await session.scalar(
            select(FormSubmission).where(
                FormSubmission.id == pending.submission_id,
                FormSubmission.workspace_id == pending.workspace_id,
                FormSubmission.status == "pending",
            )
        )
        if submission is None:
            return
        _form, ctx = await form_context(session, settings, submission.form_id)
        lists = await form_lists(ctx, submission.answers.get("list_ids") or [])
        if await send_confirmation(ctx, submission, lists):
            # Pending submissions are pruned 7 days after `created_at`: the new link gets
            # its 7 days.
            submission.created_at = utcnow()
