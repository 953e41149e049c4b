"""`POST /api/v1/send`: one message to one subscribed contact, queued ahead of every campaign
batch (priority), sent by the same engine. Everything is checked before anything is queued."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import insert, select

from mailroom.contacts import service as contacts
from mailroom.core.clock import utcnow
from mailroom.core.context import Context
from mailroom.core.emails import normalize_email
from mailroom.core.errors import ApiError
from mailroom.core.ids import new_id
from mailroom.models import PRIORITY_AUTOMATION, PRIORITY_TRANSACTIONAL, Contact, SendLog, Template
from mailroom.sending import budget, limits
from mailroom.sending import service as sending
from mailroom.sending.service import clean_address, clean_from_name
from mailroom.suppressions import service as suppressions
from mailroom.templates import service as templates
from mailroom.templates.source import literal

MAX_VARIABLES = 100


async def _recipient(ctx: Context, body: dict[str, Any]) -> Contact:
    to, contact_id = body.get("to"), body.get("contact_id")
    if to in (None, "") and contact_id in (None, ""):
        raise ApiError(400, "to or contact_id is required")
    if contact_id not in (None, ""):
        if not isinstance(contact_id, str):
            raise ApiError(400, "contact_id must be a string")
        return await contacts.get_contact(ctx, contact_id)
    if not isinstance(to, str):
        raise ApiError(400, "to must be a string")
    found: Contact | None = await ctx.session.scalar(
        select(Contact).where(
            Contact.workspace_id == ctx.workspace_id, Contact.email == normalize_email(to)
        )
    )
    if found is None:
        raise ApiError(404, "Contact not found")
    return found


async def _content(
    ctx: Context, body: dict[str, Any], template: Template | None = None
) -> dict[str, str]:
    parts: dict[str, str] = {
        name: templates.check_part(name, body[name])
        for name in ("subject", "preheader", "html_content", "text_content")
        if name in body
    }
    # A stored template was checked when it was saved: only what the request brings is.
    given = dict(parts)
    template_id = body.get("template_id")
    if template_id not in (None, ""):
        if not isinstance(template_id, str):
            raise ApiError(400, "template_id must be a string")
        if template is None or template.id != template_id:
            template = await templates.get_template(ctx, template_id)
        for name in ("subject", "preheader", "html_content", "text_content"):
            if not parts.get(name):
                parts[name] = getattr(template, name)
    if not (parts.get("subject") or "").strip():
        raise ApiError(400, "subject is required (or a template_id with one)")
    if not ((parts.get("html_content") or "").strip() or (parts.get("text_content") or "").strip()):
        raise ApiError(400, "html_content or text_content is required (or a template_id)")
    await templates.check_syntax(given)
    return parts


def _variables(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ApiError(400, "variables must be an object")
    if len(value) > MAX_VARIABLES:
        raise ApiError(400, f"variables may have at most {MAX_VARIABLES} keys")
    return value


async def queue(
    ctx: Context,
    body: dict[str, Any],
    *,
    kind: str = "transactional",
    loaded: tuple[Contact, Template] | None = None,
    automation_id: str | None = None,
) -> SendLog:
    """Check and queue one message (`kind` "automation" for an automation's send_email step:
    the same checks, allowance and ceiling, behind transactional mail in the queue; `loaded`:
    its contact and template, already read in this unit of work; `automation_id` names the
    automation in the message's Feedback-ID)."""
    parts = await _content(ctx, body, loaded[1] if loaded else None)
    variables = _variables(body.get("variables"))
    identity = await sending.settings_of(ctx)
    sender = _sender(body, identity)
    contact = loaded[0] if loaded else await _recipient(ctx, body)
    if contact.status != "subscribed":
        raise _not_subscribed(contact)
    suppression = await suppressions.find(ctx, contact.email_hash)
    if suppression is not None:
        raise _suppressed(suppression.reason)
    if identity.paused:
        raise sending.paused_error(identity)
    await sending.check_sender(ctx, sender[0])
    if kind == "transactional":
        # An assistant's direct sends are never held for approval; they spend its budget.
        await budget.spend(ctx)
    now = utcnow()
    # The month first: a client told to retry in an hour should not then meet a 403.
    await limits.reserve(ctx.session, ctx.principal.account_id, ctx.principal.plan, 1, now)
    await _check_hour(ctx, now)
    row = SendLog(
        **_row(ctx, kind, contact, _payload(parts, sender, variables, body, automation_id), now)
    )
    ctx.session.add(row)
    await ctx.session.flush()
    return row


async def queue_many(
    ctx: Context,
    template: Template,
    recipients: list[Contact],
    body: dict[str, Any],
    *,
    automation_id: str,
) -> list[str | ApiError] | None:
    """`queue` of one stored template (no variables) to many contacts at once, for an
    automation batch's send_email step: the same checks in a few statements, and the rows in
    one. Raises what would refuse every message before its contact is looked at (the
    template, the sender's address); else each contact gets its queued row's id, or the
    error `queue` would raise for it (unsubscribed, suppressed; then a pause, an unverified
    sender, the hourly ceiling). None: the month's allowance cannot take them all, so
    nothing is queued and the caller queues them one by one (some may still fit)."""
    body = {"template_id": template.id, **body}
    parts = await _content(ctx, body, template)
    identity = await sending.settings_of(ctx)
    sender = _sender(body, identity)
    suppressed = await suppressions.reasons(
        ctx, {c.email_hash for c in recipients if c.status == "subscribed"}
    )
    results: list[str | ApiError | None] = []
    for contact in recipients:
        if contact.status != "subscribed":
            results.append(_not_subscribed(contact))
        elif contact.email_hash in suppressed:
            results.append(_suppressed(suppressed[contact.email_hash]))
        else:
            results.append(None)
    going = [recipients[i] for i, result in enumerate(results) if result is None]
    if going:
        try:
            if identity.paused:
                raise sending.paused_error(identity)
            await sending.check_sender(ctx, sender[0])
            now = utcnow()
            # The hour before the month: a held run (429) must not keep what it reserved.
            await _check_hour(ctx, now)
        except ApiError as error:
            # What refuses the sending refuses only those who could be mailed: the others
            # keep their own reason, as `queue` checks the contact first.
            return [error if result is None else result for result in results]
        try:
            await limits.reserve(
                ctx.session, ctx.principal.account_id, ctx.principal.plan, len(going), now
            )
        except ApiError:
            return None
        payload = _payload(parts, sender, {}, body, automation_id)
        rows = [_row(ctx, "automation", contact, payload, now) for contact in going]
        await ctx.session.execute(insert(SendLog), rows)
        ids = iter(row["id"] for row in rows)
        results = [next(ids) if result is None else result for result in results]
    return [result for result in results if result is not None]


def _sender(body: dict[str, Any], identity: Any) -> tuple[str, str, str]:
    """(from_email, from_name, reply_to): the request's, else the sender identity's."""
    from_email = clean_address("from_email", body.get("from_email")) or identity.from_email
    from_name = (
        clean_from_name(body["from_name"]) if "from_name" in body else identity.from_name or ""
    )
    reply_to = clean_address("reply_to", body.get("reply_to")) or identity.reply_to or ""
    return from_email, from_name, reply_to


def _not_subscribed(contact: Contact) -> ApiError:
    return ApiError(
        422, f"The contact is {contact.status}: only a subscribed contact can be mailed"
    )


def _suppressed(reason: str) -> ApiError:
    return ApiError(422, f"The address is on the suppression list ({reason}) and cannot be mailed")


async def _check_hour(ctx: Context, now: datetime) -> None:
    plan = ctx.principal.plan
    if await limits.sent_this_hour(ctx.session, ctx.principal.account_id, now) >= (
        plan.hourly_send_ceiling
    ):
        wait = max(1, int((limits.next_hour(now) - now).total_seconds()))
        raise ApiError(
            429,
            f"Hourly sending limit reached ({plan.hourly_send_ceiling:,} on the {plan.label} "
            f"plan). Retry in {wait} seconds.",
            headers={"Retry-After": str(wait)},
        )


def _payload(
    parts: dict[str, str],
    sender: tuple[str, str, str],
    variables: dict[str, Any],
    body: dict[str, Any],
    automation_id: str | None,
) -> dict[str, Any]:
    from_email, from_name, reply_to = sender
    return {
        "subject": parts["subject"],
        "preheader": parts.get("preheader") or "",
        "html": parts.get("html_content") or "",
        "text": parts.get("text_content") or "",
        "from_email": from_email,
        "from_name": from_name,
        "reply_to": reply_to,
        "variables": variables,
        "template_id": body.get("template_id") or None,
        **({"automation_id": automation_id} if automation_id else {}),
    }


def _row(
    ctx: Context, kind: str, contact: Contact, payload: dict[str, Any], now: datetime
) -> dict[str, Any]:
    return {
        "id": new_id(),
        "workspace_id": ctx.workspace_id,
        "kind": kind,
        "contact_id": contact.id,
        "email": contact.email,
        "priority": PRIORITY_TRANSACTIONAL if kind == "transactional" else PRIORITY_AUTOMATION,
        "attempts": 0,
        "open_count": 0,
        "click_count": 0,
        "payload": payload,
        "status": "pending",
        "run_at": now,
        "created_at": now,
        "updated_at": now,
    }


async def queue_system(
    ctx: Context,
    *,
    email: str,
    contact_id: str | None,
    message: dict[str, str],
    operator: bool = False,
) -> SendLog:
    """Queue a message someone asked for themselves. A signup confirmation comes from the
    workspace's sender identity and counts against the monthly allowance like any send, but
    goes to an address that is not (or not yet) a subscribed contact; the caller has made
    sure it is not one that bounced or complained. `operator`: the installation's own mail to
    a person (an invitation, a password reset), from `MAILROOM_SYSTEM_FROM`, counted all the
    same (invitations would otherwise be free mail to any address). A paused workspace's
    copy waits."""
    identity = await sending.settings_of(ctx)
    now = utcnow()
    if operator:
        from_email, from_name, reply_to = ctx.settings.system_from, "Mailroom", ""
    else:
        from_email = identity.from_email or ""
        from_name, reply_to = identity.from_name or "", identity.reply_to or ""
        await sending.check_sender(ctx, from_email)
    await limits.reserve(ctx.session, ctx.principal.account_id, ctx.principal.plan, 1, now)
    row = SendLog(
        id=new_id(),
        workspace_id=ctx.workspace_id,
        kind="system",
        contact_id=contact_id,
        email=email,
        priority=PRIORITY_TRANSACTIONAL,
        attempts=0,
        open_count=0,
        click_count=0,
        # The message is finished text: the engine renders every payload as a template, so
        # it goes in as literal source. A submitter's address, a list or workspace name
        # holding `{{ ... }}` is then printed, never run.
        payload={
            "subject": literal(message["subject"], before_tag=False),
            "preheader": "",
            "html": literal(message["html_content"], before_tag=False),
            "text": literal(message["text_content"], before_tag=False),
            "from_email": from_email,
            "from_name": from_name,
            "reply_to": reply_to,
            "variables": {},
            "template_id": None,
            "operator": operator,
            "counted": True,  # reserved above: given back if it fails (outcomes.record)
        },
        status="pending",
        run_at=now,
        created_at=now,
        updated_at=now,
    )
    ctx.session.add(row)
    await ctx.session.flush()
    return row


async def get_message(ctx: Context, message_id: Any) -> SendLog:
    found: SendLog | None = None
    if isinstance(message_id, str) and message_id:
        found = await ctx.session.scalar(
            select(SendLog).where(
                SendLog.id == message_id,
                SendLog.workspace_id == ctx.workspace_id,
                SendLog.kind == "transactional",
            )
        )
    if found is None:
        raise ApiError(404, "Message not found")
    return found


def as_dict(row: SendLog) -> dict[str, Any]:
    return {
        "id": row.id,
        "status": status_of(row),
        "to": row.email,
        "contact_id": row.contact_id,
        "message_id": f"<{row.message_id}>" if row.message_id else None,
        "error": row.error if row.status != "pending" or row.attempts else None,
        "created_at": row.created_at,
        "sent_at": row.sent_at,
        "delivered_at": row.delivered_at,
        "bounced_at": row.bounced_at,
        "complained_at": row.complained_at,
    }


def status_of(row: SendLog) -> str:
    """Where the message is: queued, sent, delivered (a success report came back), failed,
    skipped, bounced or complained (reports that come back move it on)."""
    if row.status == "pending":
        return "queued"
    if row.status == "sent" and row.delivered_at is not None:
        return "delivered"
    return row.status
