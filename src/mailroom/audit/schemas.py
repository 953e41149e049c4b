from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict


class AuditEntryOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    key_id: str | None
    person_id: str | None
    assistant_id: str | None
    operation: str
    method: str
    path: str
    target_id: str | None
    status: int
    created_at: datetime


class AuditLogPage(BaseModel):
    entries: list[AuditEntryOut]
    next_cursor: str | None
