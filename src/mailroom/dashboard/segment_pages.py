"""Segments (`/app/segments`): the saved segments, and a builder (match all/any, conditions
by field with the operators of its type, nested groups (a group inside a group at most, as the
API nests three levels), tags and lists by name, email activity with a campaign)
whose count and sample update as the form changes (htmx posts it on every change; without
script the "Update the count" button does). Counting and saving use `segments.service`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from mailroom.campaigns import service as campaigns
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.dashboard import render
from mailroom.dashboard import segment_form as sf
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, refused
from mailroom.lists import service as lists
from mailroom.people import sessions
from mailroom.segments import service as segments
from mailroom.segments.rules import Registry
from mailroom.tags import service as tags

router = APIRouter(include_in_schema=False)
PATH = "/app/segments"
SHOWN = 500


@dataclass
class RuleChoices:
    """What a rule builder offers and needs: fields with their operators, tags and lists by
    name (and back), campaigns for email activity. Shared with automations' conditions."""

    registry: Registry
    by_name: dict[str, dict[str, str]]
    by_id: dict[str, dict[str, str]]
    campaigns: list[tuple[str, str]]

    @property
    def fields(self) -> list[tuple[str, str, tuple[str, ...]]]:
        return sf.fields_of(self.registry)

    def shown(self) -> dict[str, Any]:
        fields = self.fields
        return {
            "fields": fields,
            "ops": {name: ops for name, _label, ops in fields},
            "campaigns": self.campaigns,
            "tag_names": sorted(self.by_id["tags"].values(), key=str.casefold),
            "list_names": sorted(self.by_id["lists"].values(), key=str.casefold),
        }


async def rule_choices(ctx: Context) -> RuleChoices:
    tag_rows, _ = await tags.list_tags(ctx, PageParams(1, SHOWN), None)
    list_rows, _ = await lists.list_lists(ctx, PageParams(1, SHOWN))
    campaign_rows, _ = await campaigns.list_campaigns(ctx, PageParams(1, SHOWN), None, None)
    return RuleChoices(
        registry=await segments.rule_registry(ctx),
        by_name={
            "tags": {t.name.casefold(): t.id for t in tag_rows},
            "lists": {m.name.casefold(): m.id for m in list_rows},
        },
        by_id={
            "tags": {t.id: t.name for t in tag_rows},
            "lists": {m.id: m.name for m in list_rows},
        },
        campaigns=[(c.id, c.name) for c in campaign_rows],
    )


async def _builder_page(
    visitor: Visitor,
    ctx: Context,
    builder: sf.Builder,
    *,
    segment_id: str = "",
    fragment: bool = False,
    status: int = 200,
) -> Response:
    choices = await rule_choices(ctx)
    preview, problem = None, None
    counted = sf.filled(builder)
    if counted.rows:
        try:
            rule = sf.to_rule(counted, choices.registry, choices.by_name)
            preview = await segments.preview_rules(ctx, rule)
        except ApiError as refused:
            problem = refused.message
    return render.page(
        "segment_builder.html" if fragment else "segment.html",
        status=status,
        title=builder.name or "New segment",
        section="segments",
        visitor=visitor,
        builder=builder,
        segment_id=segment_id,
        fragment=fragment,
        preview=preview,
        problem=problem,
        flashes=sessions.take_flash(visitor.row),
        **choices.shown(),
    )


@router.get(PATH)
async def segments_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        rows, total = await segments.list_segments(ctx, PageParams(1, SHOWN), None)
        return render.page(
            "segments.html",
            title="Segments",
            section="segments",
            visitor=visitor,
            rows=rows,
            total=total,
            flashes=sessions.take_flash(visitor.row),
        )

    return await as_visitor(request, work)


@router.get(f"{PATH}/new")
async def new_segment(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return await _builder_page(visitor, ctx, sf.Builder(rows=[sf.Row()]))

    return await as_visitor(request, work)


@router.get(f"{PATH}/{{segment_id}}")
async def segment_page(segment_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        segment = segments.as_dict(await segments.get_segment(ctx, segment_id))
        by_id = (await rule_choices(ctx)).by_id
        builder = sf.from_rule(segment["name"], segment["rules"], by_id)
        return await _builder_page(visitor, ctx, builder, segment_id=segment_id)

    return await as_visitor(request, work)


@router.post(f"{PATH}/builder")
async def rebuild(request: Request) -> Response:
    """The form posted back: add a row if asked, then the count and sample again."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        builder = sf.from_form(form)
        if form.get("add") or not builder.rows:
            builder.rows.append(sf.Row())
        return await _builder_page(
            visitor,
            ctx,
            builder,
            segment_id=str(form.get("segment_id") or ""),
            fragment=bool(request.headers.get("HX-Request")),
        )

    return await as_visitor(request, work)


@router.post(f"{PATH}/save")
async def save_segment(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        builder = sf.from_form(form)
        segment_id = str(form.get("segment_id") or "")
        htmx = bool(request.headers.get("HX-Request"))
        try:
            choices = await rule_choices(ctx)
            rule = sf.to_rule(builder, choices.registry, choices.by_name)
            body = {"name": builder.name, "rules": rule}
            if segment_id:
                saved = await segments.update_segment(ctx, segment_id, body)
            else:
                saved = await segments.create_segment(ctx, body)
        except ApiError as problem:
            if problem.status == 404:
                raise
            await refused(ctx, visitor, problem)
            return await _builder_page(
                visitor,
                ctx,
                builder,
                segment_id=segment_id,
                # htmx swaps only 2xx answers: the refusal is shown in place.
                fragment=htmx,
                status=200 if htmx else problem.status,
            )
        operation = "update_segment" if segment_id else "create_segment"
        audit_write(ctx, request, operation, saved.id, 200 if segment_id else 201)
        sessions.flash(visitor.row, "ok", f"Segment “{saved.name}” saved.")
        if htmx:
            return Response(status_code=204, headers={"HX-Redirect": f"{PATH}/{saved.id}"})
        return RedirectResponse(f"{PATH}/{saved.id}", status_code=303)

    return await as_visitor(request, work)


@router.post(f"{PATH}/{{segment_id}}/delete")
async def delete_segment(segment_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        name = (await segments.get_segment(ctx, segment_id)).name
        await segments.delete_segment(ctx, segment_id)
        audit_write(ctx, request, "delete_segment", segment_id, 200)
        sessions.flash(visitor.row, "ok", f"Segment “{name}” deleted.")
        return RedirectResponse(PATH, status_code=303)

    return await as_visitor(request, work)
