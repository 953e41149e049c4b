"""The Sending page (admins): the state and pause/resume, this month's usage, the sender
identity, and sending domains with the DNS records to publish and a check of each, the
bulk-sender rules each meets or not, and its DMARC aggregate reports. The DNS
look-ups run between two transactions, as the API's verify does (no connection held)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from mailroom.core.context import Context
from mailroom.core.pagination import PageParams
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor, audit_write, when
from mailroom.domains import dmarc
from mailroom.domains import service as domains
from mailroom.domains.dns import DMARC_MAILBOX
from mailroom.people import sessions
from mailroom.sending import service as sending
from mailroom.sending.transport import parse_smtp_url, relay_urls

router = APIRouter(include_in_schema=False)


async def _sending_page(visitor: Visitor, ctx: Context, status: int = 200) -> Response:
    state = await sending.describe(ctx)
    rows, _total = await domains.list_domains(ctx, PageParams(1, 100))
    return render.page(
        "sending.html",
        status=status,
        title="Sending",
        section="sending",
        visitor=visitor,
        state=state,
        paused_at=when(state["paused_at"]),
        bounce_rate=f"{state['bounce_rate'] * 100:.2f} %",
        complaint_rate=f"{state['complaint_rate'] * 100:.2f} %",
        domains=await domains.describe(ctx, rows),
        relay=_relay(ctx.settings.smtp_url),
        relays=await sending.relay_states(ctx),
        check_labels=CHECK_LABELS,
        flashes=sessions.take_flash(visitor.row),
    )


CHECK_LABELS = {
    "dkim_aligned": "DKIM, aligned",
    "spf_aligned": "SPF, aligned",
    "dmarc_published": "DMARC published",
    "one_click_unsubscribe": "One-click unsubscribe",
    "complaint_rate": "Spam complaints",
    "tls_to_relay": "TLS to the relay",
    "ehlo_name": "EHLO name",
    "reverse_dns": "Reverse DNS of the relay",
}


@router.get("/settings/sending/domains/{domain_id}/dmarc")
async def dmarc_page(domain_id: str, request: Request) -> Response:
    """What mailbox providers reported about a domain: per day and source, how much passed."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        domain = await domains.get_domain(ctx, domain_id)
        raw = request.query_params.get("days") or ""
        fits = raw.isascii() and raw.isdecimal() and 1 <= int(raw) <= dmarc.MAX_DAYS
        days = int(raw) if fits else dmarc.DEFAULT_DAYS
        rows = await dmarc.rows_of(ctx, domain.id, days)
        found = await dmarc.summary_of(ctx, domain.id, days)
        return render.page(
            "sending_dmarc.html",
            title=f"DMARC reports: {domain.domain}",
            section="sending",
            visitor=visitor,
            domain=domain,
            days=days,
            rows=rows,
            summary=found,
            rates={
                key: f"{found[key] * 100:.1f} %"
                for key in ("spf_pass_rate", "dkim_pass_rate", "dmarc_pass_rate")
            },
            mailbox=f"{DMARC_MAILBOX}@{ctx.settings.return_path_domain}"
            if ctx.settings.return_path_domain
            else None,
            flashes=sessions.take_flash(visitor.row),
        )

    return await as_visitor(request, work, admin=True)


def _relay(url: str) -> str:
    """Where mail goes out, as host:port (never the URL: it may hold the relay's password)."""
    if not url:
        return ""
    try:
        targets = [parse_smtp_url(one) for one in relay_urls(url)]
    except ValueError:
        return "an SMTP relay (MAILROOM_SMTP_URL cannot be read: check it)"
    return ", ".join(f"{t.host}:{t.port}" for t in targets)


@router.get("/settings/sending")
async def sending_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return await _sending_page(visitor, ctx)

    return await as_visitor(request, work, admin=True)


@router.post("/settings/sending/identity")
async def save_identity(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        body = {k: str(form.get(k) or "") for k in ("from_name", "from_email", "reply_to")}
        await sending.update_identity(ctx, body)
        audit_write(ctx, request, "update_sending", None, 200)
        sessions.flash(visitor.row, "ok", "Sender identity saved.")
        return RedirectResponse("/settings/sending", status_code=303)

    return await as_visitor(request, work, admin=True)


@router.post("/settings/sending/pause")
async def pause_sending(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        note = str(form.get("note") or "").strip() or None
        await sending.pause(ctx, by="workspace", reason="workspace", note=note)
        audit_write(ctx, request, "pause_sending", None, 200)
        sessions.flash(visitor.row, "ok", "Sending is paused.")
        return RedirectResponse("/settings/sending", status_code=303)

    return await as_visitor(request, work, admin=True)


@router.post("/settings/sending/resume")
async def resume_sending(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        await sending.resume(ctx, by="workspace")
        audit_write(ctx, request, "resume_sending", None, 200)
        sessions.flash(visitor.row, "ok", "Sending is on again.")
        return RedirectResponse("/settings/sending", status_code=303)

    return await as_visitor(request, work, admin=True)


@router.post("/settings/sending/domains")
async def add_domain(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        domain = await domains.create_domain(ctx, str(form.get("domain") or ""))
        audit_write(ctx, request, "create_domain", domain.id, 201)
        sessions.flash(
            visitor.row, "ok", f"{domain.domain} added. Publish its records, then check DNS."
        )
        return RedirectResponse("/settings/sending", status_code=303)

    return await as_visitor(request, work, admin=True)


@router.post("/settings/sending/domains/{domain_id}/link-host")
async def save_link_host(domain_id: str, request: Request) -> Response:
    """The domain's own host for its mail's links (empty: none), as PATCH /domains/{id}."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        typed = str(form.get("link_host") or "").strip()
        domain = await domains.update_domain(ctx, domain_id, {"link_host": typed or None})
        request.app.state.link_hosts.forget()
        audit_write(ctx, request, "update_domain", domain.id, 200)
        text = (
            f"Link host {domain.link_host} saved: publish its CNAME below, then check DNS."
            if domain.link_host
            else f"{domain.domain} has no link host: its links use this installation's host."
        )
        sessions.flash(visitor.row, "ok", text)
        return RedirectResponse("/settings/sending", status_code=303)

    return await as_visitor(request, work, admin=True)


@router.post("/settings/sending/domains/{domain_id}/skip-warmup")
async def skip_warmup(domain_id: str, request: Request) -> Response:
    """An admin ends a domain's warm-up (as PATCH /domains/{id} `skip_warmup: true`)."""

    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        domain = await domains.update_domain(ctx, domain_id, {"skip_warmup": True})
        audit_write(ctx, request, "skip_warmup", domain.id, 200)
        sessions.flash(
            visitor.row,
            "ok",
            f"Warm-up skipped for {domain.domain}: its campaigns send without a daily "
            "allowance, and what waited for tomorrow goes now.",
        )
        return RedirectResponse("/settings/sending", status_code=303)

    return await as_visitor(request, work, admin=True)


@router.post("/settings/sending/domains/{domain_id}/verify")
async def check_domain(domain_id: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        row_id = visitor.row.id
        domain = await domains.verify_domain(ctx, domain_id)  # ends the transaction for DNS
        # The page's rows were read before: read the session again in the new transaction.
        await ctx.session.refresh(visitor.row)
        assert visitor.row.id == row_id
        audit_write(ctx, request, "verify_domain", domain.id, 200)
        text = (
            f"{domain.domain} is verified."
            if domain.status == "verified"
            else f"{domain.domain} is not verified yet: {domain.failure_reason or 'see below'}."
        )
        sessions.flash(visitor.row, "ok" if domain.status == "verified" else "error", text)
        return RedirectResponse("/settings/sending", status_code=303)

    return await as_visitor(request, work, admin=True)
