"""What a sending batch needs to know about its rows, read in one short read transaction
before anything is built: the contacts as they are now, suppressions, campaigns (and A/B
variants), verified domains, workspace names and the providers that blocked a workspace."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from hashlib import sha256
from typing import Any

from sqlalchemy import select

from mailroom.campaigns import ab_test as ab_tests
from mailroom.core.emails import email_domain, email_hash
from mailroom.models import (
    Campaign,
    Contact,
    SendingDomain,
    SendingSettings,
    Suppression,
    Workspace,
)
from mailroom.sending import addresses, pacing
from mailroom.sending.build import Content
from mailroom.sending.outcomes import Claimed
from mailroom.templates.render import issue_variables

# What a message needs of its contact, read as plain rows (not ORM objects: a batch's 200
# contacts with every column were a tenth of the worker's own CPU).
_CONTACT = (
    Contact.id,
    Contact.workspace_id,
    Contact.email,
    Contact.email_hash,
    Contact.first_name,
    Contact.last_name,
    Contact.custom_fields,
    Contact.status,
)


@dataclass
class Facts:
    """What a batch needs to know, read in one short read transaction."""

    contacts: dict[str, Any]  # contact id -> its row (the _CONTACT columns)
    suppressed: set[str]
    blocked: set[str]  # system rows whose address is suppressed as bounced or complained
    campaigns: dict[str, Campaign]
    domains: dict[tuple[str, str], SendingDomain]
    workspace_names: dict[str, str]
    # workspace id -> provider -> {"until": ISO time, ...} (sending.service.block_provider)
    provider_blocks: dict[str, dict[str, Any]]

    @classmethod
    async def read(cls, session: Any, rows: list[Claimed], secret: str) -> Facts:
        contact_ids = {r.contact_id for r in rows if r.contact_id}
        contacts = {
            c.id: c
            for c in (
                await session.execute(select(*_CONTACT).where(Contact.id.in_(contact_ids)))
            ).all()
        }
        hashes = {(c.workspace_id, c.email_hash) for c in contacts.values()}
        suppressed: set[str] = set()
        if hashes:
            suppressed = {
                f"{w}:{h}"
                for w, h in (
                    await session.execute(
                        select(Suppression.workspace_id, Suppression.email_hash).where(
                            Suppression.email_hash.in_({h for _, h in hashes})
                        )
                    )
                ).all()
            }
        campaign_ids = {r.campaign_id for r in rows if r.campaign_id}
        campaigns = {
            c.id: c
            for c in (
                await session.scalars(select(Campaign).where(Campaign.id.in_(campaign_ids)))
            ).all()
        }
        workspaces = {r.workspace_id for r in rows}
        domains = {
            (d.workspace_id, d.domain): d
            for d in (
                await session.scalars(
                    select(SendingDomain).where(
                        SendingDomain.workspace_id.in_(workspaces),
                        SendingDomain.status == "verified",
                    )
                )
            ).all()
        }
        names = dict(
            (
                await session.execute(
                    select(Workspace.id, Workspace.name).where(Workspace.id.in_(workspaces))
                )
            ).all()
        )
        system = {
            r.id: (r.workspace_id, email_hash(secret, r.email)) for r in rows if r.kind == "system"
        }
        blocked: set[str] = set()
        if system:
            hard = {
                (w, h)
                for w, h in (
                    await session.execute(
                        select(Suppression.workspace_id, Suppression.email_hash).where(
                            Suppression.email_hash.in_({h for _, h in system.values()}),
                            Suppression.reason.in_(("bounced", "complained")),
                        )
                    )
                ).all()
            }
            blocked = {row_id for row_id, pair in system.items() if pair in hard}
        provider_blocks = {
            workspace_id: blocks
            for workspace_id, blocks in (
                await session.execute(
                    select(SendingSettings.workspace_id, SendingSettings.provider_blocks).where(
                        SendingSettings.workspace_id.in_(workspaces),
                        SendingSettings.provider_blocks.is_not(None),
                    )
                )
            ).all()
            if blocks
        }
        return cls(contacts, suppressed, blocked, campaigns, domains, names, provider_blocks)

    def recipient_domains(self, rows: list[Claimed]) -> set[str]:
        """The wire-form domains the rows go to (for their mailbox providers)."""
        found: set[str] = set()
        for row in rows:
            contact = self.contacts.get(row.contact_id or "")
            email = contact.email if contact is not None else row.email
            try:
                found.add(addresses.wire_domain(email_domain(email)).lower())
            except (addresses.Unwritable, ValueError):
                continue
        return found

    def blocked_until(self, workspace_id: str, provider: str, now: datetime) -> datetime | None:
        """When `provider`'s block of the workspace ends, if it is blocked now."""
        return pacing.block_ends(self.provider_blocks.get(workspace_id), provider, now)

    def why_skip(self, row: Claimed, contact: Any | None) -> str | None:
        """A message is only for a contact who is still there, subscribed and not suppressed;
        a cancelled campaign's rows are not sent."""
        if row.campaign_id:
            campaign = self.campaigns.get(row.campaign_id)
            if campaign is not None and campaign.status == "cancelled":
                return "campaign cancelled"
        if row.kind == "system":
            # A confirmation the subscriber asked for: it may go to an address that is not
            # (yet) a subscribed contact, never to one that bounced or complained.
            if contact is not None and contact.status in ("bounced", "complained"):
                return f"contact is {contact.status}"
            if row.id in self.blocked:
                return "address is suppressed"
            return None
        if contact is None:
            return "contact deleted"
        if contact.status != "subscribed":
            return f"contact is {contact.status}"
        if f"{contact.workspace_id}:{contact.email_hash}" in self.suppressed:
            return "address is suppressed"
        return None

    def variables(self, row: Claimed) -> dict[str, Any] | None:
        """What the row's template sees besides the contact: its campaign's own (an RSS
        issue's feed and items), or the send's `variables` (transactional, automation)."""
        campaign = self.campaigns.get(row.campaign_id) if row.campaign_id else None
        if campaign is not None:
            return issue_variables(campaign.variables)
        found = (row.payload or {}).get("variables")
        return found if isinstance(found, dict) else None

    def source(self, row: Claimed) -> tuple[Content, str, str, str] | None:
        """The row's content and sender: its campaign's, or its own (transactional)."""
        if row.campaign_id:
            campaign = self.campaigns.get(row.campaign_id)
            if campaign is None:
                return None
            # An A/B test's variant changes only what it names.
            variant = ab_tests.variant_of(campaign.ab_test, row.variant_id)
            content = Content(
                ("campaign", campaign.id, campaign.updated_at.isoformat(), row.variant_id or ""),
                variant.get("subject", campaign.subject),
                variant.get("preheader", campaign.preheader),
                variant.get("html_content", campaign.html_content),
                variant.get("text_content", campaign.text_content),
                track_opens=campaign.track_opens,
                track_clicks=campaign.track_clicks,
            )
            from_name = variant.get("from_name", campaign.from_name)
            return content, campaign.from_email, from_name, campaign.reply_to
        payload = row.payload or {}
        subject, preheader, html, text = (
            str(payload.get(k) or "") for k in ("subject", "preheader", "html", "text")
        )
        digest = sha256("\0".join((subject, preheader, html, text)).encode()).hexdigest()
        # An automation email's links are tracked: a click on one is what attributes an
        # order to the automation (issue 27). Its opens are not (no pixel), as before.
        clicks = row.kind == "automation"
        return (
            Content(
                ("content", digest, str(clicks)), subject, preheader, html, text, False, clicks
            ),
            str(payload.get("from_email") or ""),
            str(payload.get("from_name") or ""),
            str(payload.get("reply_to") or ""),
        )
