"""Names in place of ids: how a blueprint's objects name what they refer to, how names are
compared (`match`), the target workspace's name -> id maps (`Refs`), and the walkers that swap
ids and names in a segment rule (`map_rule`) and an automation (`map_automation`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from mailroom.automations.steps import NAME_FIELDS
from mailroom.core.context import Context
from mailroom.core.text import fold
from mailroom.models import (
    Campaign,
    CustomFieldDefinition,
    Form,
    MailingList,
    SendingDomain,
    Store,
    Tag,
    Template,
    WebhookEndpoint,
)


def name_key(name: Any) -> str:
    """How names are compared: case and inner whitespace ignored (named.py's rule)."""
    return fold(" ".join(str(name).split()))


# Keys compared exactly: a custom field's key is case-sensitive, and so is a URL's path.
EXACT = frozenset({"custom_fields", "webhooks"})


def match(kind: str, name: Any) -> str:
    """What identifies an object of `kind` (a part or a referred kind) by its name."""
    return str(name) if kind in EXACT else name_key(name)


def text_or_empty(value: Any, *, strip: bool = True) -> Any:
    """Null as the empty text the services store; text trimmed where they trim it."""
    if value is None:
        return ""
    return value.strip() if strip and isinstance(value, str) else value


def clean(name: Any) -> str:
    """A name as the workspace stores it (inner whitespace folded), to look it up."""
    return " ".join(str(name).split())


# What objects refer to by name: the kind, its table and the column that names it.
KINDS: dict[str, tuple[Any, str]] = {
    "custom_fields": (CustomFieldDefinition, "key"),
    "tags": (Tag, "name"),
    "lists": (MailingList, "name"),
    "forms": (Form, "name"),
    "campaigns": (Campaign, "name"),
    "domains": (SendingDomain, "domain"),
    "templates": (Template, "name"),
    "webhooks": (WebhookEndpoint, "url"),
    "stores": (Store, "name"),
}
# A webhook endpoint's filter keys and the kind each names.
FILTER_KINDS = {
    "list_ids": "lists",
    "tag_ids": "tags",
    "form_ids": "forms",
    "campaign_ids": "campaigns",
    "domain_ids": "domains",
}


@dataclass
class Refs:
    """Name -> id in the target workspace of what objects refer to (kept current as the apply
    creates), by kind (KINDS); and the secrets of the webhook endpoints an apply created."""

    ids: dict[str, dict[str, str]] = field(default_factory=dict)
    secrets: list[dict[str, str]] = field(default_factory=list)
    # Webhook URLs the guard passed before the apply's transaction opened (as given -> clean).
    checked_urls: dict[str, str] = field(default_factory=dict)

    def get(self, kind: str, name: str) -> str | None:
        return self.ids.get(kind, {}).get(match(kind, name))


async def id_names(ctx: Context, kind: str) -> dict[str, str]:
    """id -> name of a workspace's objects of `kind`."""
    model, column = KINDS[kind]
    rows = await ctx.session.execute(
        select(model.id, getattr(model, column)).where(model.workspace_id == ctx.workspace_id)
    )
    return {row_id: name for row_id, name in rows.all()}


async def load_refs(ctx: Context) -> Refs:
    refs = Refs()
    for kind in KINDS:
        named = await id_names(ctx, kind)
        refs.ids[kind] = {match(kind, name): row_id for row_id, name in named.items()}
    return refs


# --- segment rules: ids <-> names ------------------------------------------------------------


Rename = Callable[[str, str, str], Any]  # (kind, value, path) -> the value to put, or None


def map_rule(rule: Any, rename: Rename) -> Any:
    """The rule with each reference passed through `rename(kind, value, path)`: the tags of a
    tags condition, the list of a lists condition, the campaign of an activity condition (paths
    as the segment API names them: `conditions[0].value[1]`). None drops a tag from its
    condition, and a condition left naming nothing (an object deleted since) from its group."""

    def walk(node: Any, path: str) -> Any:
        if not isinstance(node, dict):
            return node
        if "conditions" in node and isinstance(node["conditions"], list):
            inner = [walk(c, f"{path}conditions[{i}].") for i, c in enumerate(node["conditions"])]
            return {**node, "conditions": [c for c in inner if c is not None]}
        value, where = node.get("value"), f"{path}value"
        if node.get("field") == "tags" and isinstance(value, list):
            named = [rename("tags", v, f"{where}[{i}]") for i, v in enumerate(value)]
            kept = [n for n in named if n is not None]
            return {**node, "value": kept} if kept or not value else None
        if node.get("field") == "lists" and isinstance(value, str):
            named_list = rename("lists", value, where)
            return None if named_list is None else {**node, "value": named_list}
        if node.get("field") == "activity" and isinstance(value, dict):
            campaign = value.get("campaign_id")
            if isinstance(campaign, str):
                named_campaign = rename("campaigns", campaign, f"{where}.campaign_id")
                if named_campaign is None:
                    return None
                return {**node, "value": {**value, "campaign_id": named_campaign}}
        return node

    return walk(rule, "")


def rule_names(rule: Any) -> list[tuple[str, str, str]]:
    """(path within the rule, kind, name) of every tag, list and campaign a rule names."""
    found: list[tuple[str, str, str]] = []

    def note(kind: str, value: str, path: str) -> str:
        found.append((path, kind, value))
        return value

    map_rule(rule, note)
    return found


TRIGGER_REFS = {"tag_id": "tags", "list_id": "lists", "form_id": "forms", "store_id": "stores"}
STEP_REFS = {"template_id": "templates", "tag_id": "tags", "list_id": "lists"}


def map_automation(obj: dict[str, Any], rename: Callable[[str, str, str], Any]) -> dict[str, Any]:
    """The automation with each reference passed through `rename(kind, value, path)`: the
    trigger's tag / list / form / store and date field, each step's template / tag / list /
    endpoints / custom field, and the rules of conditions (their tags and lists), in branches
    too. Paths as the automation API names them (`steps[1].yes[0].tag_id`)."""
    found = dict(obj)
    trigger = obj.get("trigger")
    if isinstance(trigger, dict):
        trigger = dict(trigger)
        for key, kind in TRIGGER_REFS.items():
            if isinstance(trigger.get(key), str):
                trigger[key] = rename(kind, trigger[key], f"trigger.{key}")
        if trigger.get("type") == "date_anniversary" and isinstance(trigger.get("field"), str):
            trigger["field"] = rename("custom_fields", trigger["field"], "trigger.field")
        found["trigger"] = trigger

    def steps(raw: Any, place: str) -> Any:
        if not isinstance(raw, list):
            return raw
        return [step(item, f"{place}[{i}]") for i, item in enumerate(raw)]

    def step(raw: Any, place: str) -> Any:
        if not isinstance(raw, dict):
            return raw
        out = dict(raw)
        for key, kind in STEP_REFS.items():
            if isinstance(out.get(key), str):
                out[key] = rename(kind, out[key], f"{place}.{key}")
        if isinstance(out.get("endpoint_ids"), list):
            renamed = [
                rename("webhooks", v, f"{place}.endpoint_ids[{i}]") if isinstance(v, str) else v
                for i, v in enumerate(out["endpoint_ids"])
            ]
            out["endpoint_ids"] = [v for v in renamed if v is not None]
        field_name = out.get("field")
        if (
            out.get("type") == "update_field"
            and isinstance(field_name, str)
            and field_name not in NAME_FIELDS
        ):
            # As the automation service reads it: any other name is a custom field's key,
            # with or without its `custom_fields.` prefix.
            key = field_name.removeprefix("custom_fields.")
            out["field"] = "custom_fields." + str(rename("custom_fields", key, f"{place}.field"))
        if out.get("type") == "condition":
            out["rules"] = map_rule(
                out.get("rules"), lambda kind, v, p: rename(kind, v, f"{place}.rules.{p}")
            )
            out["yes"] = steps(out.get("yes"), f"{place}.yes")
            out["no"] = steps(out.get("no"), f"{place}.no")
        return out

    if "steps" in obj:
        found["steps"] = steps(obj.get("steps"), "steps")
    return found
