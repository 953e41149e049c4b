"""What a service call runs with: the unit of work, who is calling, and the settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from mailroom.core.auth import Principal
from mailroom.core.emails import email_hash
from mailroom.settings import Settings


@dataclass
class Context:
    session: AsyncSession
    principal: Principal
    settings: Settings
    # Reads worth doing once per unit of work (e.g. the workspace's webhook endpoints).
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def workspace_id(self) -> str:
        return self.principal.workspace_id

    @property
    def dialect(self) -> str:
        return self.session.get_bind().dialect.name

    def hash_email(self, email: str) -> str:
        return email_hash(self.settings.resolved_secret_key, email)
