"""The blueprints Mailroom ships (`starters/*.json`), listed with every account's own as
`starter: true`: a newsletter (a field, a double opt-in list, a signup form, a welcome email and
the automation that sends it) and a shop (the newsletter plus segments of customers by what
they bought). Read once, checked as an imported document is."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

from mailroom.blueprints import document as documents
from mailroom.models import Blueprint

FILES = {"starter-newsletter": "newsletter.json", "starter-shop": "shop.json"}
# When these were written: shown as their created_at.
SHIPPED_AT = datetime(2026, 11, 27, tzinfo=UTC)
READ_ONLY = "Starter blueprints cannot be changed: capture or import your own"


@cache
def documents_by_id() -> dict[str, dict[str, Any]]:
    folder = resources.files("mailroom.blueprints") / "starters"
    return {
        starter_id: documents.check(json.loads((folder / name).read_text(encoding="utf-8")))
        for starter_id, name in FILES.items()
    }


def is_starter(blueprint_id: str) -> bool:
    return blueprint_id in FILES


def starter(blueprint_id: str, account_id: str) -> Blueprint:
    """A starter as a blueprint row of `account_id` (never added to a session)."""
    document = documents_by_id()[blueprint_id]
    return Blueprint(
        id=blueprint_id,
        account_id=account_id,
        name=document["name"],
        description=document["description"],
        document=document,
        source_workspace_id=None,
        created_at=SHIPPED_AT,
        updated_at=SHIPPED_AT,
    )


def all_starters(account_id: str) -> list[Blueprint]:
    return [starter(blueprint_id, account_id) for blueprint_id in FILES]
