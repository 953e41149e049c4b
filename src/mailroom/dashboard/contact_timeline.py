"""A contact's timeline on its page: what happened to it, newest first, from the records
that already hold it: its own dates, the send log, its form submissions, its automation
runs with their step history, and its orders and abandoned carts."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

from mailroom.automations.steps import walk
from mailroom.core.context import Context
from mailroom.dashboard.frame import when
from mailroom.ecommerce.values import cents_text, money_shown
from mailroom.models import (
    Automation,
    AutomationRun,
    Campaign,
    Cart,
    Form,
    FormSubmission,
    Order,
    SendLog,
    Store,
)

TIMELINE = 50  # events shown (and at most this many rows read of each kind)


async def timeline_of(ctx: Context, contact: dict[str, Any]) -> list[dict[str, Any]]:
    """What happened to the contact, newest first: its own dates, its messages (sent, opened,
    clicked, bounced, complained, unsubscribed through one), its form submissions and its
    way through automations (entered, each step's outcome, left)."""
    items: list[tuple[datetime, str]] = []
    for key, text in (
        ("created_at", f"Added ({contact['source']})"),
        ("subscribed_at", "Subscribed"),
        ("unsubscribed_at", "Unsubscribed"),
    ):
        if contact.get(key):
            items.append((contact[key], text))
    items += await _messages(ctx, contact["id"])
    items += await _submissions(ctx, contact["id"])
    items += await _automation_steps(ctx, contact["id"])
    items += await _purchases(ctx, contact["id"])
    items.sort(key=lambda item: item[0], reverse=True)
    return [{"when": when(at), "text": text} for at, text in items[:TIMELINE]]


async def _messages(ctx: Context, contact_id: str) -> list[tuple[datetime, str]]:
    items: list[tuple[datetime, str]] = []
    rows = await ctx.session.execute(
        select(SendLog, Campaign.name)
        .outerjoin(Campaign, Campaign.id == SendLog.campaign_id)
        .where(SendLog.workspace_id == ctx.workspace_id, SendLog.contact_id == contact_id)
        .order_by(SendLog.created_at.desc())
        .limit(TIMELINE)
    )
    for row, campaign_name in rows.all():
        subject = (row.payload or {}).get("subject") if row.payload else None
        what = f"campaign “{campaign_name}”" if campaign_name else (subject or row.kind)
        for at, verb in (
            (row.sent_at, "Sent"),
            (row.delivered_at, "Delivered"),
            (row.first_opened_at, "Opened"),
            (row.first_clicked_at, "Clicked"),
            (row.bounced_at, "Bounced"),
            (row.complained_at, "Reported as spam"),
            (row.unsubscribed_at, "Unsubscribed from"),
        ):
            if at is not None:
                items.append((at, f"{verb}: {what}"))
        if row.status in ("failed", "skipped") and row.updated_at:
            items.append((row.updated_at, f"Not sent ({row.status}): {what}"))
    return items


async def _submissions(ctx: Context, contact_id: str) -> list[tuple[datetime, str]]:
    items: list[tuple[datetime, str]] = []
    rows = await ctx.session.execute(
        select(FormSubmission.created_at, FormSubmission.confirmed_at, Form.name)
        .join(Form, Form.id == FormSubmission.form_id)
        .where(
            FormSubmission.workspace_id == ctx.workspace_id,
            FormSubmission.contact_id == contact_id,
        )
        .order_by(FormSubmission.created_at.desc())
        .limit(TIMELINE)
    )
    for created_at, confirmed_at, form_name in rows.all():
        items.append((created_at, f"Submitted form “{form_name}”"))
        if confirmed_at is not None:
            items.append((confirmed_at, f"Confirmed the form “{form_name}” from the email"))
    return items


async def _automation_steps(ctx: Context, contact_id: str) -> list[tuple[datetime, str]]:
    items: list[tuple[datetime, str]] = []
    rows = await ctx.session.execute(
        select(AutomationRun, Automation.name, Automation.steps)
        .join(Automation, Automation.id == AutomationRun.automation_id)
        .where(
            AutomationRun.workspace_id == ctx.workspace_id,
            AutomationRun.contact_id == contact_id,
        )
        .order_by(AutomationRun.created_at.desc())
        .limit(TIMELINE)
    )
    for run, name, steps in rows.all():
        _first, places = walk(steps or [])
        items.append((run.created_at, f"Entered automation “{name}”"))
        for entry in run.history or []:
            try:  # stored as ISO 8601 with a Z by the runner
                at = datetime.fromisoformat(str(entry.get("at")).replace("Z", "+00:00"))
            except ValueError:
                continue
            place = places.get(str(entry.get("step_id")))
            label = place.step.get("label") if place else None
            step = f"{label}: " if label else ""
            items.append((at, f"Automation “{name}”: {step}{entry.get('outcome')}"))
        if run.ended_at is not None:
            items.append((run.ended_at, f"Left automation “{name}” ({run.state})"))
    return items


async def _purchases(ctx: Context, contact_id: str) -> list[tuple[datetime, str]]:
    """Orders (with their status when not simply placed) and carts left behind."""
    items: list[tuple[datetime, str]] = []
    orders = await ctx.session.execute(
        select(Order.placed_at, Order.external_id, Order.status, Order.total, Order.currency)
        .add_columns(Store.name)
        .join(Store, Store.id == Order.store_id)
        .where(Order.workspace_id == ctx.workspace_id, Order.contact_id == contact_id)
        .order_by(Order.placed_at.desc())
        .limit(TIMELINE)
    )
    for placed_at, number, status, total, currency, store in orders.all():
        state = "" if status == "placed" else f", {status}"
        money = money_shown(cents_text(total), currency)
        items.append((placed_at, f"Ordered #{number} at “{store}”: {money}{state}"))
    carts = await ctx.session.execute(
        select(Cart.abandoned_at, Cart.total, Cart.currency, Cart.status, Store.name)
        .join(Store, Store.id == Cart.store_id)
        .where(
            Cart.workspace_id == ctx.workspace_id,
            Cart.contact_id == contact_id,
            Cart.abandoned_at.is_not(None),
        )
        .order_by(Cart.abandoned_at.desc())
        .limit(TIMELINE)
    )
    for abandoned_at, total, currency, status, store in carts.all():
        if abandoned_at is None:  # filtered out above; says so to the type checker
            continue
        later = " (bought later)" if status == "converted" else ""
        text = f"Left a cart at “{store}”: {money_shown(cents_text(total), currency)}{later}"
        items.append((abandoned_at, text))
    return items
