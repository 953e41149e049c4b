"""The worker host's `prune-form-submissions` loop: a pending submission (the address and
answers of someone who never confirmed) is kept for its link's 7 days, then removed."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.core.clock import utcnow
from mailroom.forms.submission import VALID_SECONDS
from mailroom.models import FormSubmission

log = logging.getLogger("mailroom.forms")


async def prune_pending(session: AsyncSession, *, now: datetime | None = None) -> int:
    """Remove the pending submissions older than their 7 days (every workspace's)."""
    cutoff = (now or utcnow()) - timedelta(seconds=VALID_SECONDS)
    result = await session.execute(
        delete(FormSubmission).where(
            FormSubmission.status == "pending", FormSubmission.created_at < cutoff
        )
    )
    return int(getattr(result, "rowcount", 0) or 0)


async def tick(worker: Any) -> int:
    async with worker.db.transaction() as session:
        removed = await prune_pending(session)
    if removed:
        log.info("pruned %d unconfirmed form submissions older than 7 days", removed)
    return 0  # hourly: never loop straight back
