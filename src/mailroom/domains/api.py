from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from mailroom.core.context import Context
from mailroom.core.pagination import Pagination
from mailroom.domains import dmarc, service
from mailroom.domains.schemas import (
    DmarcEnvelope,
    DomainCreate,
    DomainDeleted,
    DomainEnvelope,
    DomainPage,
    DomainUpdate,
)
from mailroom.web.deps import Paging, set_audit_operation, set_audit_target, use
from mailroom.web.openapi import errors

router = APIRouter(prefix="/api/v1/domains", tags=["Sending domains"])

RECORDS_NOTE = (
    " `records` lists what to publish: the DKIM TXT record (required for `verified`) and, as "
    "advised, SPF, DMARC (asking for aggregate reports at `dmarc@<return-path domain>` when "
    "the installation has one) and a return-path CNAME, each with its last verdict. `checks` "
    "scores the domain against Gmail's and Yahoo's bulk-sender rules, each with what to fix. "
    "`warmup` is its warm-up: a newly verified domain may send `daily_limit` campaign "
    "messages a UTC day (stage 1: 200, then 500, 1,000, 2,000, 5,000, 10,000, 20,000, ...), "
    "one stage up each day after a day that used at least half of it while bounces and "
    "complaints stay under the health warning levels, until the plan's own limits; what a "
    "campaign cannot send today waits for the next UTC day. Null `daily_limit`: no limit."
)


@router.get(
    "",
    response_model=DomainPage,
    summary="List sending domains",
    description="The workspace's sending domains, newest first." + RECORDS_NOTE,
    responses=errors(400),
)
async def list_domains(
    ctx: Annotated[Context, use("campaigns:read")], paging: Paging
) -> dict[str, Any]:
    domains, total = await service.list_domains(ctx, paging)
    return {
        "domains": await service.describe(ctx, domains),
        "pagination": Pagination.of(paging, total),
    }


@router.post(
    "",
    status_code=201,
    response_model=DomainEnvelope,
    summary="Add a sending domain",
    description="Adds the domain as `pending` with a new RSA-2048 DKIM key (the private key is "
    "kept encrypted and never shown). Publish its records, then call verify." + RECORDS_NOTE,
    responses=errors(400, 409, e409="This domain is already added to the workspace"),
)
async def create_domain(
    body: DomainCreate, request: Request, ctx: Annotated[Context, use("campaigns:write")]
) -> dict[str, Any]:
    domain = await service.create_domain(ctx, body.domain)
    set_audit_target(request, domain.id)
    return {"domain": (await service.describe(ctx, [domain]))[0]}


@router.get(
    "/{id}",
    response_model=DomainEnvelope,
    summary="Get a sending domain",
    description=RECORDS_NOTE.strip(),
    responses=errors(404, e404="Domain not found"),
)
async def get_domain(id: str, ctx: Annotated[Context, use("campaigns:read")]) -> dict[str, Any]:
    return {"domain": (await service.describe(ctx, [await service.get_domain(ctx, id)]))[0]}


@router.patch(
    "/{id}",
    response_model=DomainEnvelope,
    summary="Change a sending domain",
    description="Sets `link_host`, a host of your own for the links in this domain's "
    "campaign and automation mail (e.g. `links.news.example.com`), or null to remove it. "
    "Publish the CNAME `records` then lists (purpose `link_host`, to the installation's "
    "host) and verify: links use the host once that record verifies; until then, or while "
    "it fails, they use the installation's public URL and the domain sends as before. On the "
    "link host Mailroom answers only the paths of those links. `skip_warmup: true` ends the "
    "domain's warm-up (for a domain that already has a reputation): its campaign mail is no "
    "longer held to a daily allowance and what waited for tomorrow goes now; it takes a "
    "workspace admin (people) or `campaigns:send` (keys), and is audit-logged as "
    "`skip_warmup`." + RECORDS_NOTE,
    responses=errors(
        400,
        403,
        404,
        422,
        e403="Forbidden: workspace admin role required",
        e404="Domain not found",
        e422=service.NO_PUBLIC_HOST,
    ),
)
async def update_domain(
    id: str, body: DomainUpdate, request: Request, ctx: Annotated[Context, use("campaigns:write")]
) -> dict[str, Any]:
    given = body.model_dump(exclude_unset=True)
    if given.get("skip_warmup") is True:
        set_audit_operation(request, "skip_warmup")
    domain = await service.update_domain(ctx, id, given)
    set_audit_target(request, domain.id)
    request.app.state.link_hosts.forget()  # this server answers the new host's paths at once
    return {"domain": (await service.describe(ctx, [domain]))[0]}


@router.delete(
    "/{id}",
    response_model=DomainDeleted,
    summary="Delete a sending domain",
    description="Removes the domain and its DKIM key. Refused while a scheduled or sending "
    "campaign sends from it.",
    responses=errors(
        404,
        409,
        e404="Domain not found",
        e409="This domain is used by a scheduled or sending campaign",
    ),
)
async def delete_domain(id: str, ctx: Annotated[Context, use("campaigns:write")]) -> dict[str, Any]:
    await service.delete_domain(ctx, id)
    return {"success": True, "id": id}


@router.post(
    "/{id}/verify",
    response_model=DomainEnvelope,
    summary="Verify a sending domain's DNS records",
    description="Looks every record up now and answers 200 whether it passed or not: read "
    "`status` and each record's `status` and `reason`. The domain is `verified` when its DKIM "
    "record carries exactly its public key, else `failed` (unknown names, timeouts and server "
    "failures included, with the reason). Becoming verified fires `domain.verified`; becoming "
    "failed fires `domain.failed` naming the failed records. Verified domains are re-checked "
    "daily: one whose DKIM record is gone or changed becomes failed (`domain.failed`, lapsed)."
    + RECORDS_NOTE,
    responses=errors(404, e404="Domain not found"),
)
async def verify_domain(id: str, ctx: Annotated[Context, use("campaigns:write")]) -> dict[str, Any]:
    return {"domain": (await service.describe(ctx, [await service.verify_domain(ctx, id)]))[0]}


@router.get(
    "/{id}/dmarc",
    response_model=DmarcEnvelope,
    summary="DMARC aggregate reports about a sending domain",
    description="What mailbox providers reported (RFC 7489 aggregate reports mailed to the "
    "`rua` address of the domain's DMARC record), per UTC day, source IP and reporter, newest "
    "day first: messages seen and how many passed SPF and DKIM aligned, and DMARC. `known` is "
    "false for a source none of whose mail passed DKIM: not Mailroom, which signs everything "
    "(another service sending as the domain, or someone forging it). `summary` totals the "
    "period. A report sent twice counts once.",
    responses=errors(400, 404, e404="Domain not found"),
)
async def domain_dmarc(
    id: str,
    ctx: Annotated[Context, use("campaigns:read")],
    days: Annotated[
        int,
        Query(ge=1, le=dmarc.MAX_DAYS, description="The last N UTC days, today included."),
    ] = dmarc.DEFAULT_DAYS,
) -> dict[str, Any]:
    domain = await service.get_domain(ctx, id)
    rows = await dmarc.rows_of(ctx, domain.id, days)
    return {"reports": rows, "summary": await dmarc.summary_of(ctx, domain.id, days)}
