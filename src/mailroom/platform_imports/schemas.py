from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mailroom.contacts.schemas import form_flag
from mailroom.core.pagination import Pagination
from mailroom.platform_imports.records import PLATFORMS

PLATFORM = {
    "type": "string",
    "enum": list(PLATFORMS),
    "description": "The platform the contacts come from.",
}
LIST_ID = {
    "type": "string",
    "description": "An existing list every imported contact that stays subscribed joins; "
    "without it, the platform's own lists (listmonk, Brevo, Mailchimp audiences pulled by API) "
    "are created by name.",
}
MAILCHIMP_API = {
    "type": "object",
    "title": "Mailchimp API pull",
    "required": ["key"],
    "additionalProperties": False,
    "properties": {
        "key": {
            "type": "string",
            "pattern": r"^\s*\S+-[A-Za-z]+[0-9]+\s*$",
            "description": "A Marketing API key, ending with its data centre (`...-us21`).",
        },
        "list_id": {
            "type": "string",
            "minLength": 1,
            "pattern": r"\S",
            "description": "One audience's id; all audiences when absent.",
        },
    },
}
LISTMONK_API = {
    "type": "object",
    "title": "listmonk API pull",
    "required": ["url", "username", "token"],
    "additionalProperties": False,
    "properties": {
        "url": {
            "type": "string",
            "format": "uri",
            "pattern": "^https?://",
            "description": "listmonk's address.",
        },
        "username": {"type": "string", "minLength": 1, "pattern": r"\S"},
        "token": {"type": "string", "minLength": 1, "pattern": r"\S"},
        "list_ids": {
            "type": "array",
            "items": {"type": "integer", "minimum": 1, "maximum": 2_147_483_647},
            "description": "Only these lists' subscribers; all when absent.",
        },
    },
}
IMPORT_BODY = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "title": "PlatformImportPull",
                "required": ["platform", "api"],
                "additionalProperties": False,
                # Which `api` goes with which platform.
                "allOf": [
                    {
                        "if": {"properties": {"platform": {"const": name}}},
                        "then": {"properties": {"api": shape}},
                    }
                    for name, shape in (("mailchimp", MAILCHIMP_API), ("listmonk", LISTMONK_API))
                ],
                "properties": {
                    "platform": {"type": "string", "enum": ["mailchimp", "listmonk"]},
                    "api": {
                        "type": "object",
                        "description": "mailchimp: `{key, list_id?}`; listmonk: `{url, "
                        "username, token, list_ids?}`.",
                    },
                    "list_id": LIST_ID,
                    "dry_run": {"type": "boolean", "description": "Count, write nothing."},
                    "check_domains": {
                        "type": "boolean",
                        "description": "Skip addresses whose domain cannot receive mail.",
                    },
                },
            },
        },
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["platform", "file"],
                "properties": {
                    "platform": PLATFORM,
                    "file": {
                        "type": "string",
                        "format": "binary",
                        "description": "The platform's export: a CSV of at most 5 MB, or a "
                        ".zip of its CSV files (5 MB compressed, 50 MB uncompressed).",
                    },
                    "list_id": LIST_ID,
                    "dry_run": form_flag("true: count what would happen, write nothing."),
                    "check_domains": form_flag(
                        "true: skip addresses whose domain cannot receive mail."
                    ),
                },
            },
        },
    },
}


class PlatformImportProgress(BaseModel):
    done: int
    total: int


class PlatformImportOut(BaseModel):
    id: str
    platform: str
    source: str = Field(description="`file` or `api`.")
    filename: str | None
    list_id: str | None
    dry_run: bool
    status: str = Field(description="`queued`, `running`, `done` or `failed`.")
    progress: PlatformImportProgress
    result: dict[str, Any] | None = Field(
        description="Once done: `{created, updated, unchanged, suppressed: {unsubscribed, "
        "bounced, complained}, tags_created, fields_created: [{key, type}], lists_created, "
        "memberships: {confirmed, unconfirmed}, skipped: [{row?, source?, email?, reason}] "
        "(the first 100), skipped_total, warnings, dry_run}`; a failed import that wrote "
        "something carries its counts so far."
    )
    error: str | None = Field(description="Why the import failed.")
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class PlatformImportEnvelope(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    import_: PlatformImportOut = Field(alias="import")


class PlatformImportList(BaseModel):
    imports: list[PlatformImportOut]
    pagination: Pagination
