"""What assistants leave behind, pruned: every refresh adds two token rows, every consent an
authorization code, every abandoned consent a pending request."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.core.clock import utcnow
from mailroom.models import AssistantGrant, AssistantToken, OAuthCode, OAuthRequest

# Spent codes and refresh tokens are kept past their expiry a day, so that presenting one
# again is still recognised as reuse (and revokes) rather than answered as unknown.
REUSE_MEMORY = timedelta(days=1)
# Unused grants past their expiry are kept a month: "Grant expired" says more than "Invalid".
GRANT_MEMORY = timedelta(days=30)


async def prune(session: AsyncSession, *, now: datetime | None = None) -> int:
    now = now or utcnow()
    removed = 0
    for statement in (
        delete(AssistantToken).where(AssistantToken.expires_at < now - REUSE_MEMORY),
        delete(OAuthCode).where(OAuthCode.expires_at < now - REUSE_MEMORY),
        delete(OAuthRequest).where(OAuthRequest.expires_at < now),
        delete(AssistantGrant).where(AssistantGrant.expires_at < now - GRANT_MEMORY),
    ):
        result = await session.execute(statement)
        removed += int(getattr(result, "rowcount", 0) or 0)
    return removed
