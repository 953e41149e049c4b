from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from mailroom.core.dbtypes import UTCDateTime
from mailroom.db import Base


class RateLimitHit(Base):
    """One counted action under a limit key (e.g. `writes:<workspace id>`).

    A sliding log: "at most N in any rolling hour" is exact, and it holds across processes
    because the count lives here. Rows older than any window are pruned by a worker loop.
    """

    __tablename__ = "rate_limit_hits"
    __table_args__ = (Index("ix_rate_limit_hits_key_at", "key", "at"),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    key: Mapped[str] = mapped_column(String(120))
    at: Mapped[datetime] = mapped_column(UTCDateTime)
