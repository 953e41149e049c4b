"""The parts of a blueprint: how each kind of object is captured from a workspace into the
document (the API's create body for it, every id replaced by the name of what it refers to) and
written into another (through the domain's own service, so every rule and message is the
API's).

A part is a list of objects in the document. Each object has a name (`name`, a custom field's
`key`, a webhook endpoint's `url`; `sending` is one object named "sending"), compared ignoring
case and inner whitespace as the workspace's names are.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from mailroom.automations import service as automations
from mailroom.automations import steps as automation_steps
from mailroom.blueprints.names import (
    FILTER_KINDS,
    KINDS,
    Refs,
    clean,
    id_names,
    map_automation,
    map_rule,
    match,
    name_key,
    rule_names,
    text_or_empty,
)
from mailroom.core.context import Context
from mailroom.custom_fields import service as custom_fields
from mailroom.custom_fields import values as cf
from mailroom.forms import service as forms
from mailroom.lists import service as lists
from mailroom.models import (
    Automation,
    CustomFieldDefinition,
    Form,
    MailingList,
    Segment,
    Tag,
    Template,
    WebhookEndpoint,
)
from mailroom.segments import rules as segment_rules
from mailroom.segments import service as segments
from mailroom.sending import service as sending
from mailroom.tags import service as tags
from mailroom.templates import service as templates
from mailroom.webhooks import service as webhooks

# Every part, in the contract's order (captured and permission-checked in it), with the
# permission family that reads (`:read`) and writes (`:write`) it.
PERMISSIONS = {
    "custom_fields": "contacts",
    "tags": "tags",
    "lists": "lists",
    "segments": "segments",
    "templates": "templates",
    "automations": "automations",
    "forms": "forms",
    "webhooks": "webhooks",
    "sending": "campaigns",
}
PART_NAMES = tuple(PERMISSIONS)
TEMPLATE_FIELDS = ("subject", "preheader", "html_content", "text_content")


# How the plan names an object a target's filter still holds but that was deleted since:
# no blueprint's name, so the endpoint compares as other content (skip or update).
DELETED = "(deleted)"


# --- the parts --------------------------------------------------------------------------------


class Part:
    name: str
    key_field = "name"

    def key(self, obj: dict[str, Any]) -> str:
        return str(obj.get(self.key_field, ""))

    def references(self, obj: dict[str, Any]) -> list[tuple[str, str, str]]:
        """(path within the object, kind, name) of what the object refers to by name."""
        return []

    def conflict(self, wanted: dict[str, Any], current: dict[str, Any]) -> str | None:
        """Why an object of the same name cannot become `wanted`, or None."""
        return None

    def empty(self, obj: dict[str, Any]) -> bool:
        """An object that sets nothing (a blank sender identity): absent is the same."""
        return False

    def normalise(self, obj: dict[str, Any]) -> dict[str, Any]:
        """The object as the service would store it where that is plain (trimmed text, empty
        for null, lowercase colours), so a document compares equal to what applying it
        wrote, and a second apply is all `unchanged`."""
        return dict(obj)

    async def capture(self, ctx: Context) -> list[dict[str, Any]]:
        raise NotImplementedError

    async def current(self, ctx: Context) -> list[dict[str, Any]]:
        """The target's objects as the plan compares them (what a capture would carry)."""
        return await self.capture(ctx)

    async def create(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        raise NotImplementedError

    async def update(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        raise NotImplementedError


class CustomFields(Part):
    name = "custom_fields"
    key_field = "key"

    async def capture(self, ctx: Context) -> list[dict[str, Any]]:
        rows = await ctx.session.scalars(
            select(CustomFieldDefinition)
            .where(CustomFieldDefinition.workspace_id == ctx.workspace_id)
            .order_by(CustomFieldDefinition.position, CustomFieldDefinition.key)
        )
        found = []
        for row in rows.all():
            obj: dict[str, Any] = {"key": row.key, "label": row.label, "type": row.type}
            if row.options is not None:
                obj["options"] = list(row.options)
            found.append(obj)
        return found

    def normalise(self, obj: dict[str, Any]) -> dict[str, Any]:
        found = dict(obj)
        found["type"] = obj.get("type") or "text"
        label = obj.get("label")
        found["label"] = (
            label.strip()
            if isinstance(label, str) and label.strip()
            else cf.default_label(str(obj.get("key")))
        )
        options = obj.get("options")
        if isinstance(options, list):
            kept = list(dict.fromkeys(o.strip() for o in options if isinstance(o, str)))
            if kept or found["type"] == "dropdown":
                found["options"] = kept
            else:
                found.pop("options")
        return found

    def conflict(self, wanted: dict[str, Any], current: dict[str, Any]) -> str | None:
        if wanted.get("type", "text") != current["type"]:
            return (
                f"a custom field {current['key']} exists here with type {current['type']}, "
                f"not {wanted.get('type', 'text')}"
            )
        return None

    async def create(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        await custom_fields.create_field(
            ctx,
            key=obj.get("key"),
            label=obj.get("label"),
            field_type=obj.get("type"),
            options=obj.get("options"),
        )

    async def update(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        changes: dict[str, Any] = {k: obj[k] for k in ("label", "options") if k in obj}
        if changes:
            await custom_fields.update_field(ctx, str(obj["key"]), changes)


class Tags(Part):
    name = "tags"

    def normalise(self, obj: dict[str, Any]) -> dict[str, Any]:
        found = dict(obj)
        if isinstance(obj.get("color"), str):
            found["color"] = obj["color"].strip().lower()
        return found

    async def capture(self, ctx: Context) -> list[dict[str, Any]]:
        rows = await ctx.session.scalars(
            select(Tag).where(Tag.workspace_id == ctx.workspace_id).order_by(Tag.name_key)
        )
        return [{"name": row.name, "color": row.color} for row in rows.all()]

    async def create(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        created = await tags.create_tag(ctx, obj.get("name"), obj.get("color"))
        refs.ids.setdefault("tags", {})[name_key(created.name)] = created.id

    async def update(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        tag_id = refs.get("tags", self.key(obj))
        if tag_id is not None and "color" in obj:
            await tags.update_tag(ctx, tag_id, {"color": obj["color"]})


class Lists(Part):
    name = "lists"

    def normalise(self, obj: dict[str, Any]) -> dict[str, Any]:
        found = dict(obj)
        if "description" in obj:
            found["description"] = text_or_empty(obj["description"])
        if obj.get("double_opt_in") is None:
            found["double_opt_in"] = False
        return found

    async def capture(self, ctx: Context) -> list[dict[str, Any]]:
        rows = await ctx.session.scalars(
            select(MailingList)
            .where(MailingList.workspace_id == ctx.workspace_id)
            .order_by(MailingList.name_key)
        )
        return [
            {"name": r.name, "description": r.description, "double_opt_in": r.double_opt_in}
            for r in rows.all()
        ]

    async def create(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        created = await lists.create_list(ctx, obj)
        refs.ids.setdefault("lists", {})[name_key(created.name)] = created.id

    async def update(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        list_id = refs.get("lists", self.key(obj))
        changes: dict[str, Any] = {k: obj[k] for k in ("description", "double_opt_in") if k in obj}
        if list_id is not None and changes:
            await lists.update_list(ctx, list_id, changes)


class Segments(Part):
    name = "segments"

    def normalise(self, obj: dict[str, Any]) -> dict[str, Any]:
        def groups(node: Any) -> Any:
            if isinstance(node, dict) and isinstance(node.get("conditions"), list):
                return {
                    "match": node.get("match") or "all",
                    **{k: v for k, v in node.items() if k != "match"},
                    "conditions": [groups(c) for c in node["conditions"]],
                }
            return node

        return {**obj, "rules": groups(obj.get("rules"))}

    def references(self, obj: dict[str, Any]) -> list[tuple[str, str, str]]:
        return [(f"rules.{path}", kind, name) for path, kind, name in rule_names(obj.get("rules"))]

    async def capture(self, ctx: Context) -> list[dict[str, Any]]:
        names = {kind: await id_names(ctx, kind) for kind in ("tags", "lists", "campaigns")}
        rows = await ctx.session.scalars(
            select(Segment)
            .where(Segment.workspace_id == ctx.workspace_id)
            .order_by(Segment.name_key)
        )
        found = []
        for row in rows.all():
            shown, _registered = segment_rules.stored(row.rules)
            # What was deleted since the rule was saved matches nothing: a tag is left out of
            # its condition, a condition naming only deleted things out of its group; never an
            # id in the document.
            named = map_rule(shown, lambda kind, value, _path: names[kind].get(value))
            found.append({"name": row.name, "rules": named})
        return found

    def _with_ids(self, obj: dict[str, Any], refs: Refs) -> dict[str, Any]:
        rule = map_rule(obj.get("rules"), lambda kind, name, _path: refs.get(kind, name) or name)
        return {"name": obj.get("name"), "rules": rule}

    async def create(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        await segments.create_segment(ctx, self._with_ids(obj, refs))

    async def update(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        current = await segments.SEGMENTS.find_by_name(ctx, clean(self.key(obj)))
        if current is not None:
            await segments.update_segment(
                ctx, current.id, {"rules": self._with_ids(obj, refs)["rules"]}
            )


class Templates(Part):
    name = "templates"

    def normalise(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {
            **obj,
            **{f: text_or_empty(obj[f], strip=False) for f in TEMPLATE_FIELDS if f in obj},
        }

    async def capture(self, ctx: Context) -> list[dict[str, Any]]:
        rows = await ctx.session.scalars(
            select(Template)
            .where(Template.workspace_id == ctx.workspace_id)
            .order_by(Template.name_key)
        )
        return [
            {"name": row.name, **{f: getattr(row, f) for f in TEMPLATE_FIELDS}}
            for row in rows.all()
        ]

    async def create(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        created = await templates.create_template(ctx, obj)
        refs.ids.setdefault("templates", {})[match("templates", created.name)] = created.id

    async def update(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        current = await templates.TEMPLATES.find_by_name(ctx, clean(self.key(obj)))
        changes = {f: obj[f] for f in TEMPLATE_FIELDS if f in obj}
        if current is not None and changes:
            await templates.update_template(ctx, current.id, changes)


class Sending(Part):
    """The sender name and reply-to (never the from address: its domain is the workspace's
    own, verified there)."""

    name = "sending"

    def key(self, obj: dict[str, Any]) -> str:
        return "sending"

    def normalise(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {k: text_or_empty(obj.get(k)) for k in ("from_name", "reply_to")}

    def empty(self, obj: dict[str, Any]) -> bool:
        return not any(self.normalise(obj).values())

    async def capture(self, ctx: Context) -> list[dict[str, Any]]:
        row = await sending.settings_of(ctx)
        if not row.from_name and not row.reply_to:
            return []  # nothing set: nothing to carry
        return [{"from_name": row.from_name, "reply_to": row.reply_to}]

    async def create(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        await self.update(ctx, obj, refs)

    async def update(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        changes: dict[str, Any] = {k: obj[k] for k in ("from_name", "reply_to") if k in obj}
        if changes:
            await sending.update_identity(ctx, changes)


# An automation's references: trigger keys and step keys, and the kind each names.
def _namer(names: dict[str, dict[str, str]], dead: list[str]) -> Any:
    """An automation's id -> name rename for capture; notes in `dead` the trigger or step
    references whose object was deleted since (a condition's or a webhook step's simply drop)."""

    def named(kind: str, value: str, path: str) -> Any:
        if kind == "custom_fields":
            return value
        name = names[kind].get(value)
        if name is None and ".rules." not in path and ".endpoint_ids" not in path:
            dead.append(path)
        return name

    return named


class Automations(Part):
    """Automations with their templates, tags, lists, forms, stores, endpoints (by URL) and
    fields named; step ids and labels kept. An applied automation is created paused:
    activating it stays the person's act (and the live-automation cap applies then)."""

    name = "automations"
    fields = ("name", "trigger", "steps", "allow_reentry", "time_zone")

    def normalise(self, obj: dict[str, Any]) -> dict[str, Any]:
        def steps(raw: Any) -> Any:
            if not isinstance(raw, list):
                return raw
            return [step(item) for item in raw]

        def step(raw: Any) -> Any:
            if not isinstance(raw, dict):
                return raw
            out = dict(raw)
            if not out.get("label") and out.get("type") in automation_steps.LABELS:
                out["label"] = automation_steps.LABELS[out["type"]]
            field = out.get("field")
            if (
                out.get("type") == "update_field"
                and isinstance(field, str)
                and field not in automation_steps.NAME_FIELDS
                and not field.startswith("custom_fields.")
            ):
                out["field"] = f"custom_fields.{field}"  # as the service stores it
            if out.get("type") == "condition":
                rules = out.get("rules")
                if isinstance(rules, dict) and not rules.get("match"):
                    out["rules"] = {"match": "all", **rules}
                out["yes"], out["no"] = steps(out.get("yes") or []), steps(out.get("no") or [])
            return out

        found = dict(obj)
        if "steps" in obj:
            found["steps"] = steps(obj["steps"])
        if obj.get("allow_reentry") is None and "allow_reentry" in obj:
            found["allow_reentry"] = False
        return found

    def references(self, obj: dict[str, Any]) -> list[tuple[str, str, str]]:
        found: list[tuple[str, str, str]] = []

        def note(kind: str, value: str, path: str) -> str:
            if kind != "custom_fields" or value:
                found.append((path, kind, value))
            return value

        map_automation(obj, note)
        return found

    async def capture(self, ctx: Context) -> list[dict[str, Any]]:
        names = {kind: await id_names(ctx, kind) for kind in KINDS}
        rows = await ctx.session.scalars(
            select(Automation)
            .where(Automation.workspace_id == ctx.workspace_id)
            .order_by(Automation.name_key)
        )
        found = []
        for row in rows.all():
            shown = automations.as_dict(row, {})
            obj = {key: shown[key] for key in self.fields}
            dead: list[str] = []
            captured = map_automation(obj, _namer(names, dead))
            # A trigger or step naming something deleted since cannot run anywhere: such an
            # automation is left out rather than carried with an id. Deleted tags in a
            # condition and deleted endpoints of a webhook step are left out of them.
            if not dead:
                found.append(captured)
        return found

    def _body(self, obj: dict[str, Any], refs: Refs) -> dict[str, Any]:
        return map_automation(
            obj,
            lambda kind, value, _path: (
                value if kind == "custom_fields" else (refs.get(kind, value) or value)
            ),
        )

    async def create(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        created = await automations.create_automation(ctx, self._body(obj, refs))
        created.status = "paused"
        await ctx.session.flush()

    async def update(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        current = await automations.AUTOMATIONS.find_by_name(ctx, clean(self.key(obj)))
        body = {k: v for k, v in self._body(obj, refs).items() if k != "name"}
        if current is not None and body:
            await automations.update_automation(ctx, current.id, body)


class Forms(Part):
    """Signup forms, their lists by name and their fields by key (a custom field's key is its
    name); the hosted page's address is the target's own."""

    name = "forms"
    fields = ("double_opt_in", "success_message", "redirect_url", "consent_text", "languages")

    def normalise(self, obj: dict[str, Any]) -> dict[str, Any]:
        found = dict(obj)
        items = obj.get("fields")
        if isinstance(items, list) and all(isinstance(i, dict) for i in items):
            shaped = [
                {**item, "required": bool(item.get("required")) or item.get("key") == "email"}
                for item in items
            ]
            if not any(i.get("key") == "email" for i in shaped):
                shaped.insert(0, {"key": "email", "required": True})
            found["fields"] = [{k: v for k, v in i.items() if v is not None} for i in shaped]
        if isinstance(obj.get("list_ids"), list):
            found["list_ids"] = list(dict.fromkeys(obj["list_ids"]))
        if isinstance(obj.get("languages"), list):
            found["languages"] = [
                v.lower() if isinstance(v, str) else v for v in dict.fromkeys(obj["languages"])
            ]
        for key in ("success_message", "redirect_url", "consent_text"):
            if obj.get(key) == "":
                found[key] = None
        if obj.get("double_opt_in") is None and "double_opt_in" in obj:
            found["double_opt_in"] = False
        return found

    def references(self, obj: dict[str, Any]) -> list[tuple[str, str, str]]:
        found: list[tuple[str, str, str]] = []
        fields, lists_named = obj.get("fields"), obj.get("list_ids")
        for i, item in enumerate(fields if isinstance(fields, list) else []):
            key = item.get("key") if isinstance(item, dict) else None
            if isinstance(key, str) and key not in forms.BUILT_IN:
                found.append((f"fields[{i}].key", "custom_fields", key))
        for i, name in enumerate(lists_named if isinstance(lists_named, list) else []):
            found.append((f"list_ids[{i}]", "lists", name))
        return found

    async def capture(self, ctx: Context) -> list[dict[str, Any]]:
        list_names = await id_names(ctx, "lists")
        rows = await ctx.session.scalars(
            select(Form).where(Form.workspace_id == ctx.workspace_id).order_by(Form.name_key)
        )
        found = []
        for row in rows.all():
            obj: dict[str, Any] = {
                "name": row.name,
                "fields": [{k: v for k, v in item.items() if v is not None} for item in row.fields],
                "list_ids": [list_names[i] for i in row.list_ids if i in list_names],
            }
            obj.update({f: getattr(row, f) for f in self.fields})
            found.append(obj)
        return found

    def _body(self, obj: dict[str, Any], refs: Refs) -> dict[str, Any]:
        body = dict(obj)
        if isinstance(obj.get("list_ids"), list):
            body["list_ids"] = [refs.get("lists", n) or n for n in obj["list_ids"]]
        return body

    async def create(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        created = await forms.create_form(ctx, self._body(obj, refs))
        refs.ids.setdefault("forms", {})[name_key(created.name)] = created.id

    async def update(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        form_id = refs.get("forms", self.key(obj))
        body = {k: v for k, v in self._body(obj, refs).items() if k != "name"}
        if form_id is not None and body:
            await forms.update_form(ctx, form_id, body)


class Webhooks(Part):
    """Endpoints by URL, with their events and filters by name; never a secret (a created
    endpoint gets a new one, answered once by the apply). URLs are checked by the guard before
    the apply's transaction opens (`checked`: URL -> the URL as the guard passed it)."""

    name = "webhooks"
    key_field = "url"
    fields = ("url", "description", "event_types", "filters", "enabled", "channel")

    def normalise(self, obj: dict[str, Any]) -> dict[str, Any]:
        found = dict(obj)
        if isinstance(obj.get("url"), str):
            found["url"] = obj["url"].strip()
        if "description" in obj:
            found["description"] = text_or_empty(obj["description"])
        if isinstance(obj.get("event_types"), list):
            found["event_types"] = list(dict.fromkeys(obj["event_types"]))
        if isinstance(obj.get("filters"), dict):
            found["filters"] = {
                k: list(dict.fromkeys(v)) if isinstance(v, list) else v
                for k, v in obj["filters"].items()
                if v != []
            }
        if obj.get("enabled") is None:
            found["enabled"] = True
        return found

    def references(self, obj: dict[str, Any]) -> list[tuple[str, str, str]]:
        filters = obj.get("filters")
        if not isinstance(filters, dict):
            return []
        return [
            (f"filters.{key}[{i}]", FILTER_KINDS[key], name)
            for key, names in filters.items()
            if key in FILTER_KINDS and isinstance(names, list)
            for i, name in enumerate(names)
        ]

    async def capture(self, ctx: Context) -> list[dict[str, Any]]:
        # A dimension whose every object was deleted since matches nothing: carried without
        # it the endpoint would receive every event, so such an endpoint is left out (as an
        # automation naming a deleted object is). Of two endpoints of one URL (the URL names
        # an endpoint in a document) the oldest carried.
        found: dict[str, dict[str, Any]] = {}
        for obj in await self._endpoints(ctx, deleted=None):
            if all(obj["filters"].values()):
                found.setdefault(obj["url"], obj)
        return list(found.values())

    async def current(self, ctx: Context) -> list[dict[str, Any]]:
        """What the plan compares with: every URL's oldest endpoint (the one `update` writes),
        a deleted object in its filters named so it matches no blueprint's."""
        found: dict[str, dict[str, Any]] = {}
        for obj in await self._endpoints(ctx, deleted=DELETED):
            found.setdefault(obj["url"], obj)
        return list(found.values())

    async def _endpoints(self, ctx: Context, deleted: str | None) -> list[dict[str, Any]]:
        """The workspace's endpoints, oldest first, filters by name; a deleted object's id
        becomes `deleted`, or goes (None)."""
        names = {kind: await id_names(ctx, kind) for kind in KINDS}
        rows = await ctx.session.scalars(
            select(WebhookEndpoint)
            .where(WebhookEndpoint.workspace_id == ctx.workspace_id)
            .order_by(WebhookEndpoint.created_at, WebhookEndpoint.id)
        )
        found: list[dict[str, Any]] = []
        for row in rows.all():
            filters: dict[str, list[str]] = {}
            for key, ids in (row.filters or {}).items():
                if key not in FILTER_KINDS or not ids:
                    continue
                named = names[FILTER_KINDS[key]]
                filters[key] = [n for i in ids if (n := named.get(i, deleted)) is not None]
            found.append(
                {
                    "url": row.url,
                    "description": row.description,
                    "event_types": list(row.event_types or []),
                    "filters": filters,
                    "enabled": row.enabled,
                    "channel": row.channel,
                }
            )
        return found

    def _body(self, obj: dict[str, Any], refs: Refs) -> dict[str, Any]:
        body = {k: obj[k] for k in self.fields if k in obj}
        filters = obj.get("filters")
        if isinstance(filters, dict):
            body["filters"] = {
                key: [refs.get(FILTER_KINDS[key], n) or n for n in names]
                if key in FILTER_KINDS and isinstance(names, list)
                else names
                for key, names in filters.items()
            }
        return body

    async def create(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        endpoint = await webhooks.create_endpoint(
            ctx, self._body(obj, refs), checked_url=refs.checked_urls.get(self.key(obj))
        )
        refs.secrets.append({"name": endpoint.url, "secret": endpoint.secret})
        refs.ids.setdefault("webhooks", {})[match("webhooks", endpoint.url)] = endpoint.id

    async def update(self, ctx: Context, obj: dict[str, Any], refs: Refs) -> None:
        current = await ctx.session.scalar(  # the URL's oldest: the one the plan compared
            select(WebhookEndpoint)
            .where(
                WebhookEndpoint.workspace_id == ctx.workspace_id,
                WebhookEndpoint.url == self.key(obj),
            )
            .order_by(WebhookEndpoint.created_at, WebhookEndpoint.id)
            .limit(1)
        )
        body = {k: v for k, v in self._body(obj, refs).items() if k != "url"}
        if current is not None and body:
            await webhooks.update_endpoint(ctx, current.id, body)


# In the order they are applied (what refers after what it refers to); permissions are checked
# in PERMISSIONS' order, the contract's.
PARTS: dict[str, Part] = {
    part.name: part
    for part in (
        CustomFields(),
        Tags(),
        Lists(),
        Segments(),
        Templates(),
        Forms(),
        Webhooks(),
        Automations(),  # after what its steps and trigger name: forms, endpoints
        Sending(),
    )
}
# Parts of the document this version captures and applies; the others are refused by name.
SUPPORTED = tuple(name for name in PART_NAMES if name in PARTS)
