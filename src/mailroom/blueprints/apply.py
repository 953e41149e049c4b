"""Applying a blueprint to the key's workspace: the plan first, then (unless a dry run) every
object written in the request's one transaction, so the apply is all or nothing.

The plan has one row per object of the document: `create` (no object of that name here),
`unchanged` (one with the same content), `update` or `skip` (one with other content;
`on_conflict` decides), `conflict` (cannot be reconciled: a custom field of the same key with
another type, a name the object refers to that is neither in the blueprint nor here). A real
apply with a conflict is refused (409, the plan with it) and changes nothing. A dry run writes
the plan's objects in a savepoint and rolls it back: the services judge every object as a real
apply would (a refusal is the same 400 naming the object), and nothing stays.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from mailroom.blueprints.document import KIND_NOUN
from mailroom.blueprints.names import Refs, load_refs, map_automation, map_rule, match, name_key
from mailroom.blueprints.parts import PARTS, PERMISSIONS, Part
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.custom_fields import service as custom_fields
from mailroom.webhooks import service as webhooks

CONFLICTS = "Blueprint conflicts with this workspace"
OTHER_CONTENT = "an object of this name exists here with other content"
FIELDS_FULL = (
    f"the workspace would have more than {custom_fields.MAX_FIELDS} custom fields (the limit)"
)
ON_CONFLICT = ("skip", "update")


@dataclass
class Step:
    part: Part
    index: int
    obj: dict[str, Any]
    action: str


def check_write(ctx: Context, document: dict[str, Any]) -> None:
    """Each part's write permission, in the parts' order: 403 naming the first missing."""
    for part_name in PERMISSIONS:
        if part_name in document["parts"]:
            ctx.principal.check(f"{PERMISSIONS[part_name]}:write")


async def check_urls(ctx: Context, document: dict[str, Any]) -> dict[str, str | ApiError]:
    """Every webhook URL's verdict from the outbound guard (DNS, the names resolved side by
    side: call it before the transaction opens): URL -> the URL as passed, or the refusal.
    Only the endpoints the plan creates are refused for it (`_refuse_urls`)."""

    async def verdict(url: Any) -> str | ApiError:
        try:
            return await webhooks.check_url(ctx, url)
        except ApiError as exc:
            return exc

    urls = list(dict.fromkeys(obj.get("url") for obj in document["parts"].get("webhooks", [])))
    found = await asyncio.gather(*(verdict(url) for url in urls))
    return {str(url): answer for url, answer in zip(urls, found, strict=True)}


def _refuse_urls(steps: list[Step], verdicts: dict[str, str | ApiError]) -> dict[str, str]:
    """400 `webhooks[<i>].url is not allowed: ...` for the first endpoint to create whose URL
    the guard refused (an update keeps the endpoint's URL: it never writes it); else the
    passed URLs."""
    for step in steps:
        verdict = verdicts.get(step.part.key(step.obj))
        if (
            step.part.name == "webhooks"
            and step.action == "create"
            and isinstance(verdict, ApiError)
        ):
            raise ApiError(verdict.status, f"webhooks[{step.index}].{verdict.message}")
    return {url: v for url, v in verdicts.items() if isinstance(v, str)}


async def apply(
    ctx: Context,
    document: dict[str, Any],
    *,
    dry_run: bool,
    on_conflict: str,
    url_verdicts: dict[str, str | ApiError],
) -> dict[str, Any]:
    check_write(ctx, document)
    rows, steps = await plan(ctx, document, on_conflict)
    checked_urls = _refuse_urls(steps, url_verdicts)
    conflicted = any(row["action"] == "conflict" for row in rows)
    if conflicted and not dry_run:
        raise ApiError(409, CONFLICTS, plan=rows)
    answer: dict[str, Any] = {"dry_run": dry_run, "applied": not dry_run, "plan": rows}
    if conflicted:
        return answer
    if dry_run:
        savepoint = await ctx.session.begin_nested()
        try:
            await _write(ctx, steps, checked_urls)
        finally:
            await savepoint.rollback()
        return answer
    secrets = await _write(ctx, steps, checked_urls)
    if secrets:
        answer["secrets"] = secrets  # each new endpoint's signing secret, shown this once
    return answer


async def plan(
    ctx: Context, document: dict[str, Any], on_conflict: str
) -> tuple[list[dict[str, Any]], list[Step]]:
    parts: dict[str, list[dict[str, Any]]] = document["parts"]
    here = await load_refs(ctx)
    in_document = {
        kind: {match(kind, PARTS[kind].key(o)) for o in parts.get(kind, [])}
        if kind in PARTS
        else set()
        for kind in KIND_NOUN
    }
    rows: list[dict[str, Any]] = []
    steps: list[Step] = []
    for part_name, part in PARTS.items():
        if part_name not in parts:
            continue
        current = {match(part_name, part.key(o)): o for o in await part.current(ctx)}
        for index, obj in enumerate(parts[part_name]):
            name = part.key(obj)
            row: dict[str, Any] = {"part": part_name, "name": name}
            missing = [
                (kind, ref)
                for _path, kind, ref in part.references(obj)
                if match(kind, ref) not in in_document[kind] and here.get(kind, ref) is None
            ]
            existing = current.get(match(part_name, name))
            reason = part.conflict(obj, existing) if existing is not None else None
            if missing:
                kind, ref = missing[0]
                row.update(
                    action="conflict",
                    reason=f"{KIND_NOUN[kind]} {ref!r} is neither in the blueprint nor here",
                )
            elif existing is None:
                row["action"] = "unchanged" if part.empty(obj) else "create"
            elif reason is not None:
                row.update(action="conflict", reason=reason)
            elif _same(part, obj, existing):
                row["action"] = "unchanged"
            elif on_conflict == "update":
                row.update(action="update", reason=OTHER_CONTENT)
            else:
                row.update(action="skip", reason=OTHER_CONTENT)
            if (
                part_name == "custom_fields"
                and row["action"] == "create"
                and len(current) + sum(s.action == "create" for s in steps if s.part is part)
                >= custom_fields.MAX_FIELDS
            ):
                row.update(action="conflict", reason=FIELDS_FULL)
            rows.append(row)
            if row["action"] in ("create", "update"):
                steps.append(Step(part, index, obj, row["action"]))
    return rows, steps


def _comparable(part: Part, obj: dict[str, Any]) -> dict[str, Any]:
    """What decides `unchanged`: the fields the document gives, normalised as stored, names
    compared as names."""
    shown = part.normalise(obj)
    if part.key_field in shown:
        shown[part.key_field] = match(part.name, shown[part.key_field])
    if "rules" in shown:
        shown["rules"] = map_rule(shown["rules"], lambda _kind, v, _p: name_key(v))
    # Names inside an object are matched as references are resolved: ignoring case.
    if part.name == "automations":
        shown = map_automation(shown, lambda kind, v, _p: match(kind, v))
    if part.name == "forms" and isinstance(shown.get("list_ids"), list):
        shown["list_ids"] = [name_key(v) for v in shown["list_ids"]]
    if part.name == "webhooks" and isinstance(shown.get("filters"), dict):
        shown["filters"] = {
            k: [name_key(v) for v in vs] if isinstance(vs, list) else vs
            for k, vs in shown["filters"].items()
        }
    return shown


def _same(part: Part, wanted: dict[str, Any], current: dict[str, Any]) -> bool:
    mine, theirs = _comparable(part, wanted), _comparable(part, current)
    return all(theirs.get(key) == value for key, value in mine.items())


async def _write(
    ctx: Context, steps: list[Step], checked_urls: dict[str, str]
) -> list[dict[str, str]]:
    refs: Refs = await load_refs(ctx)
    refs.checked_urls = checked_urls
    for step in steps:
        try:
            if step.action == "create":
                await step.part.create(ctx, step.obj, refs)
            else:
                await step.part.update(ctx, step.obj, refs)
        except ApiError as exc:
            if exc.status == 403:  # a plan cap: its own message
                raise
            raise ApiError(
                exc.status, f"{step.part.name}[{step.index}]: {exc.message}", **exc.extras
            ) from None
    return refs.secrets
