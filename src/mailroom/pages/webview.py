"""The web view `GET /v/{token}`: a message as it was sent to that contact, rendered again from
its campaign (or its own content) with the contact's fields, its click links as in the
email, and without the open pixel (viewing it is not an open).

The page is titled with the message's subject (the message's own `<title>` replaced, or one
added); a message with no HTML part is shown as its text (`webview_text.html`).

The token names the workspace and the send-log row; a deleted contact's message (its row is
anonymised) or an altered token is a 404 page.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from types import SimpleNamespace

from markupsafe import escape
from sqlalchemy import select

from mailroom.accounts import service as accounts
from mailroom.core import tokens
from mailroom.db import Database
from mailroom.models import Campaign, Contact, SendLog, Workspace
from mailroom.pages.render import PAGES
from mailroom.sending.addresses import WEBVIEW
from mailroom.sending.build import personalise
from mailroom.sending.messages import recipient_for
from mailroom.settings import Settings
from mailroom.templates.render import RenderError, compile_cached, issue_variables


@dataclass(frozen=True)
class WebView:
    html: str
    language: str | None


async def webview(db: Database, settings: Settings, token: str) -> WebView | None:
    parts = tokens.read(settings.resolved_secret_key, WEBVIEW, token)
    if parts is None or len(parts) != 2:
        return None
    workspace_id, row_id = parts
    async with db.session(write=False) as session:
        row = await session.scalar(
            select(SendLog).where(SendLog.id == row_id, SendLog.workspace_id == workspace_id)
        )
        if row is None or row.contact_id is None:
            return None
        contact = await session.scalar(
            select(Contact).where(
                Contact.id == row.contact_id, Contact.workspace_id == workspace_id
            )
        )
        if contact is None:
            return None
        payload = dict(row.payload or {})
        campaign_id = row.campaign_id or payload.get("test_of")
        campaign = None
        if campaign_id:
            campaign = await session.scalar(
                select(Campaign).where(
                    Campaign.id == campaign_id, Campaign.workspace_id == workspace_id
                )
            )
            if campaign is None:
                return None
        name = await session.scalar(
            select(accounts.shown_name()).where(Workspace.id == workspace_id)
        )
        person = SimpleNamespace(
            id=contact.id,
            first_name=contact.first_name,
            last_name=contact.last_name,
            custom_fields=dict(contact.custom_fields or {}),
        )
        language = contact.language
        key: tuple[str, ...]
        if campaign is not None:
            key = ("campaign", campaign.id, campaign.updated_at.isoformat())
            content = (campaign.subject, campaign.preheader, campaign.html_content)
            text, from_email = campaign.text_content, campaign.from_email
            clicks = campaign.track_clicks and row.kind == "campaign"
        else:
            key = ("webview", row.id)
            content = (
                str(payload.get("subject") or ""),
                str(payload.get("preheader") or ""),
                str(payload.get("html") or ""),
            )
            text, from_email, clicks = str(payload.get("text") or ""), "", False
        email, variables = row.email, payload.get("variables")
        if campaign is not None:
            variables = issue_variables(campaign.variables)
    recipient = recipient_for(
        settings,
        row_id=row_id,
        workspace_id=workspace_id,
        email=email,
        contact=person,
        from_email=from_email or "",
        domain_verified=False,
        variables=variables,
    )

    def render() -> str | None:
        try:
            rendered = personalise(
                compile_cached(key, *content, text),
                recipient,
                workspace_name=str(name or ""),
                secret=settings.resolved_secret_key,
                base_url=settings.public_url,
                opens=False,  # viewing it is not an open
                clicks=clicks,
            )
        except RenderError:
            return None
        if not rendered.html:
            return PAGES.get_template("webview_text.html").render(
                lang=language, subject=rendered.subject, text=rendered.text
            )
        return titled(rendered.html, rendered.subject)

    html = await asyncio.to_thread(render)
    return WebView(html, language) if html is not None else None


_HEAD_END = re.compile(r"<body\b|</head\s*>", re.IGNORECASE)
_TITLE = re.compile(r"<title\b[^>]*>.*?</title\s*>", re.IGNORECASE | re.DOTALL)
_OPENING = (
    re.compile(r"<head\b(?:[^>\"']|\"[^\"]*\"|'[^']*')*>", re.IGNORECASE),
    re.compile(r"<html\b(?:[^>\"']|\"[^\"]*\"|'[^']*')*>", re.IGNORECASE),
    re.compile(r"<!doctype[^>]*>", re.IGNORECASE),
)


def titled(html: str, subject: str) -> str:
    """`html` with `<title>` the subject: the head's own title replaced, else one added at
    the top of the head (or where the head begins); a title later in the body is left."""
    title = f"<title>{escape(subject)}</title>"
    found = _HEAD_END.search(html)
    head = html[: found.start()] if found else html
    own = _TITLE.search(head)
    if own is not None:
        return html[: own.start()] + title + html[own.end() :]
    for opening in _OPENING:
        tag = opening.search(head)
        if tag is not None:
            if opening is _OPENING[0]:
                return html[: tag.end()] + title + html[tag.end() :]
            return html[: tag.end()] + f"<head>{title}</head>" + html[tag.end() :]
    return title + html
