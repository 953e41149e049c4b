from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from mailroom.core.auth import PERMISSIONS
from mailroom.core.loose import Doc, body_config, choice, name_field, nullable, text
from mailroom.core.pagination import Pagination

GRANT_PATTERN = r"^mr_grant_[A-Za-z0-9]{32}$"
PERMISSION_LIST = {"type": "array", "minItems": 1, "items": choice(*PERMISSIONS)}


class GrantCreate(BaseModel):
    model_config = body_config(
        "name",
        "permissions",
        forbid_extra=True,
        example={"name": "Claude Code", "permissions": ["contacts:read", "campaigns:write"]},
    )
    name: Annotated[Any, Doc(name_field(200))] = Field(
        None, description="What to call the assistant in the dashboard and audit log."
    )
    permissions: Annotated[Any, Doc(PERMISSION_LIST)] = Field(
        None, description="A subset of the calling key's permissions."
    )
    expires_in: Annotated[
        Any, Doc(nullable({"type": "integer", "minimum": 60, "maximum": 3600}))
    ] = Field(None, description="Seconds until the unused grant lapses: 60 to 3,600 (default 600).")
    requires_approval: Annotated[Any, Doc(nullable({"type": "boolean"}))] = Field(
        None,
        description="Whether the assistant's campaign sends and schedules wait for an admin's "
        "approval in the dashboard. Default: true when `campaigns:send` is granted.",
    )
    daily_recipient_budget: Annotated[
        Any, Doc(nullable({"type": "integer", "minimum": 0, "maximum": 100_000_000}))
    ] = Field(
        None,
        description="Most transactional recipients the assistant may send to a day (UTC); "
        "null for no budget.",
    )


class GrantOut(BaseModel):
    code: str = Field(description="`mr_grant_` and 32 characters; shown once.")
    expires_at: datetime
    permissions: list[str]
    name: str
    requires_approval: bool
    daily_recipient_budget: int | None
    instructions: str = Field(description="What to tell the agent, ready to paste.")


class GrantCreated(BaseModel):
    grant: GrantOut


class GrantExchange(BaseModel):
    model_config = body_config("grant", example={"grant": "mr_grant_" + "x" * 32})
    grant: Annotated[Any, Doc(text(41, min_length=41, pattern=GRANT_PATTERN))] = Field(
        None, description="The grant code (`mr_grant_` and 32 letters or digits), once."
    )


class TokenAnswer(BaseModel):
    access_token: str
    token_type: Literal["Bearer"]
    expires_in: int = Field(description="Seconds the access token lives (3,600).")
    refresh_token: str = Field(
        description="Exchanged at `/oauth/token` (`grant_type=refresh_token`) for a new pair; "
        "works once."
    )
    scope: str = Field(description="The granted permissions, space-separated.")
    workspace_id: str
    assistant_id: str


class ConnectedBy(BaseModel):
    type: Literal["person", "key"]
    id: str | None
    email: str | None


class AssistantOut(BaseModel):
    id: str
    name: str
    kind: Literal["oauth", "grant"]
    permissions: list[str]
    requires_approval: bool
    daily_recipient_budget: int | None
    client_name: str | None = Field(description="The OAuth client's own name; null for grants.")
    connected_by: ConnectedBy
    created_at: datetime
    last_used_at: datetime | None


class AssistantList(BaseModel):
    assistants: list[AssistantOut]
    pagination: Pagination


class AssistantRevoked(BaseModel):
    success: Literal[True]
    id: str
