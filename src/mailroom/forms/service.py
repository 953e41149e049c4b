"""Signup forms: CRUD (the shared named shape), their fields checked against the custom-field
registry, what a form shows (`shown_fields`), and keeping forms whole when a custom field
goes. Submissions are `forms.submission`; the public page is `forms.pages`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import func, select

from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.custom_fields import service as custom_fields
from mailroom.models import CustomFieldDefinition, Form, FormSubmission, MailingList
from mailroom.named import Named, known_ids
from mailroom.pages.i18n import LANGUAGES

MAX_NAME = 100
FORMS = Named(Form, "form", MAX_NAME, newest_first=True)
BUILT_IN = ("email", "first_name", "last_name")
MAX_FIELDS = 30
MAX_LISTS = 20
MAX_LABEL = 100
MAX_TEXT = 2000  # success message, consent text
MAX_URL = 2000
URL_SHAPE = re.compile(r"^https?://[^\s/?#]+([/?#]\S*)?$")


async def get_form(ctx: Context, form_id: Any) -> Form:
    return await FORMS.get(ctx, form_id)


async def list_forms(ctx: Context, page: PageParams, q: str | None) -> tuple[list[Form], int]:
    return await FORMS.page(ctx, page, q=q)


def effective_double_opt_in(ctx: Context, form: Form) -> bool:
    """Free-plan workspaces confirm every signup by email, whatever the form says."""
    return form.double_opt_in or ctx.principal.plan.double_opt_in_everywhere


# ---------------------------------------------------------------- checking what clients send


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ApiError(400, f"{name} must be true or false")
    return value


def _optional_text(value: Any, name: str, max_length: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ApiError(400, f"{name} must be a string")
    text = value.strip()
    if len(text) > max_length:
        raise ApiError(400, f"{name} must be {max_length} characters or fewer")
    return text or None


def _redirect_url(value: Any) -> str | None:
    url = _optional_text(value, "redirect_url", MAX_URL)
    if url is None:
        return None
    try:
        host = urlsplit(url).hostname
    except ValueError:  # e.g. an unbalanced [ in the host
        host = None
    if not URL_SHAPE.match(url) or not host:
        raise ApiError(400, "redirect_url must be an http(s) URL")
    return url


def _languages(value: Any) -> list[str]:
    if not isinstance(value, list) or not value:
        raise ApiError(400, "languages must be a non-empty array")
    chosen: list[str] = []
    for item in value:
        if not isinstance(item, str) or item.lower() not in LANGUAGES:
            raise ApiError(400, f"languages must be among: {', '.join(LANGUAGES)}")
        if item.lower() not in chosen:
            chosen.append(item.lower())
    return chosen


def _fields(value: Any, registry: dict[str, CustomFieldDefinition]) -> list[dict[str, Any]]:
    """`[{key, label?, required?}]` as stored: keys known and once each, email always there
    (first when the client left it out) and required. A custom field's type and options stay in the registry."""
    if not isinstance(value, list) or not value:
        raise ApiError(400, "fields must be a non-empty array")
    if len(value) > MAX_FIELDS:
        raise ApiError(400, f"fields may have at most {MAX_FIELDS} items")
    stored: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, item in enumerate(value):
        place = f"fields[{index}]"
        if not isinstance(item, dict):
            raise ApiError(400, f"{place} must be an object")
        key = item.get("key")
        if not isinstance(key, str) or not key:
            raise ApiError(400, f"{place}.key is required")
        if key not in BUILT_IN and key not in registry:
            raise ApiError(
                400,
                f"{place}.key must be email, first_name, last_name or a registered custom "
                f"field ({key} is not)",
            )
        if key in seen:
            raise ApiError(400, f"{place}.key {key} appears twice")
        seen.add(key)
        label = _optional_text(item.get("label"), f"{place}.label", MAX_LABEL)
        # Without an address there is nothing to subscribe: email is required whatever is sent.
        required = _flag(item.get("required", False), f"{place}.required") or key == "email"
        stored.append({"key": key, "label": label, "required": required})
    if "email" not in seen:  # without an address there is nothing to subscribe
        stored.insert(0, {"key": "email", "label": None, "required": True})
    return stored


async def _checked(ctx: Context, body: dict[str, Any], creating: bool) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if "fields" in body or creating:
        raw = body.get("fields", [{"key": "email"}])
        values["fields"] = _fields(raw, await custom_fields.registry(ctx))
    if "list_ids" in body or creating:
        raw_lists = body.get("list_ids", [])
        if not isinstance(raw_lists, list) or not all(isinstance(i, str) for i in raw_lists):
            raise ApiError(400, "list_ids must be an array of list ids")
        if len(raw_lists) > MAX_LISTS:
            raise ApiError(400, f"list_ids may have at most {MAX_LISTS} items")
        unique = list(dict.fromkeys(raw_lists))
        await known_ids(
            ctx,
            MailingList,
            [(f"list_ids[{i}]", x) for i, x in enumerate(unique)],
            "List not found",
        )
        values["list_ids"] = unique
    if "double_opt_in" in body:
        values["double_opt_in"] = _flag(body["double_opt_in"], "double_opt_in")
    if "success_message" in body:
        values["success_message"] = _optional_text(
            body["success_message"], "success_message", MAX_TEXT
        )
    if "redirect_url" in body:
        values["redirect_url"] = _redirect_url(body["redirect_url"])
    if "consent_text" in body:
        values["consent_text"] = _optional_text(body["consent_text"], "consent_text", MAX_TEXT)
    if "languages" in body or creating:
        values["languages"] = _languages(body.get("languages", ["en"]))
    return values


# ---------------------------------------------------------------- CRUD


async def create_form(ctx: Context, body: dict[str, Any]) -> Form:
    name = await FORMS.claim_name(ctx, body.get("name"))
    values = await _checked(ctx, body, creating=True)
    values.setdefault("double_opt_in", False)
    return await FORMS.create(ctx, name, **values)


async def update_form(ctx: Context, form_id: str, body: dict[str, Any]) -> Form:
    form = await get_form(ctx, form_id)
    if not body:
        raise ApiError(400, "No updatable fields provided")
    if "name" in body:
        await FORMS.rename(ctx, form, body["name"])
    for name, value in (await _checked(ctx, body, creating=False)).items():
        setattr(form, name, value)
    FORMS.touch(form)
    await FORMS.flush(ctx)
    return form


async def delete_form(ctx: Context, form_id: str) -> None:
    """Its pending confirmations go with it (their links then show as not valid)."""
    await FORMS.delete(ctx, await get_form(ctx, form_id))


# ---------------------------------------------------------------- what a form shows


@dataclass(frozen=True)
class Field:
    key: str
    label: str | None  # None: the page's words for it (built-in) or the registry's label
    type: str  # email, text, number, boolean, date, dropdown
    required: bool
    options: list[str] | None

    def shown_label(self, words: dict[str, str]) -> str:
        return self.label or words.get(self.key) or self.key


def shown_fields(
    form: Form, registry: dict[str, CustomFieldDefinition], words: dict[str, str] | None = None
) -> list[Field]:
    """The form's fields with their types (a custom field's from the registry; one deleted
    meanwhile is left out). Labels default to the page's words, or the registry's label."""
    return _shown(form.fields, registry)


def _shown(
    stored_fields: list[dict[str, Any]], registry: dict[str, CustomFieldDefinition]
) -> list[Field]:
    shown: list[Field] = []
    for stored in stored_fields:
        key = stored["key"]
        if key in BUILT_IN:
            kind, options, label = ("email" if key == "email" else "text"), None, stored["label"]
        else:
            definition = registry.get(key)
            if definition is None:
                continue
            kind, options = definition.type, definition.options
            label = stored["label"] or definition.label
        shown.append(Field(key, label, kind, bool(stored["required"]), options))
    return shown


async def draft_fields(ctx: Context, raw: Any) -> list[Field]:
    """Fields as a client sent them (not saved), checked as on save and shown as a saved
    form's are: the dashboard's live preview of a form being built."""
    registry = await custom_fields.registry(ctx)
    return _shown(_fields(raw, registry), registry)


_ENGLISH = {"email": "Email", "first_name": "First name", "last_name": "Last name"}


def as_dict(ctx: Context, form: Form, registry: dict[str, CustomFieldDefinition]) -> dict:
    fields = []
    for field in shown_fields(form, registry):
        out: dict[str, Any] = {
            "key": field.key,
            "label": field.label or _ENGLISH.get(field.key, field.key),
            "type": field.type,
            "required": field.required,
        }
        if field.options is not None:
            out["options"] = list(field.options)
        fields.append(out)
    return {
        "id": form.id,
        "name": form.name,
        "fields": fields,
        "list_ids": list(form.list_ids),
        "double_opt_in": effective_double_opt_in(ctx, form),
        "success_message": form.success_message,
        "redirect_url": form.redirect_url,
        "consent_text": form.consent_text,
        "languages": list(form.languages),
        "url": f"{ctx.settings.public_url.rstrip('/')}/f/{form.id}",
        "created_at": form.created_at,
        "updated_at": form.updated_at,
    }


async def submission_counts(ctx: Context, form_ids: list[str]) -> dict[str, dict[str, int]]:
    """`{form_id: {submissions, confirmed}}`."""
    counts = {i: {"submissions": 0, "confirmed": 0} for i in form_ids}
    if not form_ids:
        return counts
    rows = await ctx.session.execute(
        select(FormSubmission.form_id, FormSubmission.status, func.count())
        .where(
            FormSubmission.workspace_id == ctx.workspace_id,
            FormSubmission.form_id.in_(form_ids),
        )
        .group_by(FormSubmission.form_id, FormSubmission.status)
    )
    for form_id, status, count in rows.all():
        counts[form_id]["submissions"] += int(count)
        if status == "confirmed":
            counts[form_id]["confirmed"] += int(count)
    return counts
