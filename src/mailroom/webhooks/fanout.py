"""Which endpoints an event goes to (the spec's scoping rules), and writing its deliveries.

An event is written to the outbox only when some enabled endpoint subscribes to it: then, in
the same transaction, one delivery row per matching endpoint. An endpoint matches when it
subscribes to the event type (chat endpoints only to the seven chat events) and, for every
dimension its filters scope, the event carries that dimension with one of the listed ids.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from mailroom.core.context import Context
from mailroom.events.catalog import CHAT_EVENTS
from mailroom.models import WebhookEndpoint

# Filter keys and the event column carrying each dimension.
DIMENSION_COLUMNS = {
    "list_ids": "list_id",
    "form_ids": "form_id",
    "tag_ids": "tag_id",
    "campaign_ids": "campaign_id",
    "domain_ids": "domain_id",
}
_CACHE_KEY = "webhook_rules"


@dataclass(frozen=True)
class Rule:
    endpoint_id: str
    channel: str
    event_types: frozenset[str]
    filters: dict[str, frozenset[str]]

    def matches(self, event_type: str, dimensions: dict[str, str | None]) -> bool:
        if event_type not in self.event_types:
            return False
        if self.channel != "server" and event_type not in CHAT_EVENTS:
            return False
        for key, ids in self.filters.items():
            value = dimensions.get(DIMENSION_COLUMNS[key])
            if value is None or value not in ids:
                return False
        return True


async def rules(ctx: Context) -> list[Rule]:
    """The workspace's enabled endpoints, read once per unit of work."""
    cached = ctx.cache.get(_CACHE_KEY)
    if cached is None:
        rows = await ctx.session.scalars(
            select(WebhookEndpoint).where(
                WebhookEndpoint.workspace_id == ctx.workspace_id, WebhookEndpoint.enabled.is_(True)
            )
        )
        cached = [
            Rule(
                endpoint.id,
                endpoint.channel,
                frozenset(endpoint.event_types or ()),
                {k: frozenset(v) for k, v in (endpoint.filters or {}).items() if v},
            )
            for endpoint in rows.all()
        ]
        ctx.cache[_CACHE_KEY] = cached
    return cached


def known_none(ctx: Context) -> None:
    """The caller read, in this transaction, that the workspace has no enabled endpoint: no
    event of this unit of work asks again (forms.loading)."""
    ctx.cache[_CACHE_KEY] = []


def forget(ctx: Context) -> None:
    """Endpoints changed in this unit of work: read them again next time."""
    ctx.cache.pop(_CACHE_KEY, None)


async def subscribers(
    ctx: Context, event_type: str, dimensions: dict[str, str | None]
) -> list[str]:
    return [r.endpoint_id for r in await rules(ctx) if r.matches(event_type, dimensions)]
