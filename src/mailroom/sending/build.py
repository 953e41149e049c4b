"""Turning claimed send-log rows into signed message bytes: render (template compiled once per
campaign), build the MIME, DKIM-sign. Pure CPU work with no database and no event loop, so the
engine runs it in a process pool (both cores; RSA signing holds the GIL, threads would not
help), or in a thread when `MAILROOM_SEND_PROCESSES=0`.

Everything a job needs travels with it and is picklable; each process keeps compiled
templates (`templates.render.compile_cached`) and opened keys (`domains.dkim.cached_signer`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from mailroom.domains import dkim
from mailroom.domains.keys import KeyUnavailable
from mailroom.sending import addresses, mime
from mailroom.templates.render import (
    Compiled,
    Rendered,
    RenderError,
    compile_cached,
    merge_context,
)
from mailroom.tracking import links as tracking


@dataclass(frozen=True)
class Content:
    key: tuple[str, ...]  # what compiled forms are cached by, e.g. (campaign id, updated_at)
    subject: str
    preheader: str
    html: str
    text: str
    track_opens: bool = False  # a campaign's settings; other messages are not tracked
    track_clicks: bool = False  # ... except an automation email's links


@dataclass(frozen=True)
class SignerSpec:
    domain_id: str
    domain: str
    selector: str
    sealed_key: str


@dataclass(frozen=True)
class Sender:
    from_email: str
    from_name: str
    reply_to: str
    signer: SignerSpec | None  # None: unsigned (no verified domain: file outbox only)


@dataclass(frozen=True)
class Recipient:
    row_id: str
    email: str
    first_name: str
    last_name: str
    custom_fields: Mapping[str, Any]
    message_id: str
    unsubscribe_url: str
    list_unsubscribe: tuple[str, ...]
    variables: Mapping[str, Any] | None = None
    webview_url: str = ""
    preferences_url: str = ""


@dataclass(frozen=True)
class Job:
    content: Content
    sender: Sender
    workspace_name: str
    secret: str
    date: datetime
    recipients: list[Recipient] = field(default_factory=list)
    subject_prefix: str = ""  # `[Test] ` for test sends
    base_url: str = ""  # where tracking links point: the public URL, or a link host
    public_url: str = ""  # the installation's: hosted images move to base_url when it differs
    headers: tuple[tuple[str, str], ...] = ()  # added to every message (Feedback-ID)


@dataclass(frozen=True)
class Built:
    row_id: str
    data: bytes | None  # None: failed, see `error`
    error: str | None = None
    # Seconds its DKIM signature took (0: unsigned); the worker observes it (core.metrics),
    # as builds may run in other processes.
    signing_seconds: float = 0.0


def personalise(
    compiled: Compiled,
    recipient: Recipient,
    *,
    workspace_name: str,
    secret: str,
    base_url: str,
    opens: bool,
    clicks: bool,
) -> Rendered:
    """One recipient's message: merged, then its links and pixel tracked as asked (never the
    subscriber links). The web view calls it too, without the pixel. RenderError on failure."""
    rendered = compiled.render(
        merge_context(
            recipient,
            workspace_name=workspace_name,
            unsubscribe_url=recipient.unsubscribe_url,
            preferences_url=recipient.preferences_url,
            webview_url=recipient.webview_url,
            variables=recipient.variables,
        )
    )
    if not rendered.html or not (opens or clicks):
        return rendered
    html = tracking.track(
        rendered.html,
        secret=secret,
        base_url=base_url,
        row_id=recipient.row_id,
        opens=opens,
        clicks=clicks,
        untracked=(recipient.unsubscribe_url, recipient.preferences_url, recipient.webview_url),
    )
    return replace(rendered, html=html)


def build(job: Job) -> list[Built]:
    """Every recipient's message of one job; one recipient's failure (its render, or a key
    that does not open) never stops the others."""
    content = job.content
    try:
        compiled = compile_cached(
            content.key, content.subject, content.preheader, content.html, content.text
        )
    except RenderError as error:
        return [Built(r.row_id, None, str(error)) for r in job.recipients]
    signer = None
    if job.sender.signer is not None:
        spec = job.sender.signer
        try:
            signer = dkim.cached_signer(
                domain_id=spec.domain_id,
                domain=spec.domain,
                selector=spec.selector,
                sealed_key=spec.sealed_key,
                secret=job.secret,
            )
        except KeyUnavailable as problem:
            return [Built(r.row_id, None, f"DKIM key: {problem}") for r in job.recipients]
    try:
        from_email = addresses.wire(job.sender.from_email)
        reply_to = addresses.wire(job.sender.reply_to) if job.sender.reply_to else None
    except addresses.Unwritable as problem:
        return [Built(r.row_id, None, f"sender: {problem}") for r in job.recipients]
    built: list[Built] = []
    for recipient in job.recipients:
        try:
            to = addresses.wire(recipient.email)
        except addresses.Unwritable as problem:
            built.append(Built(recipient.row_id, None, str(problem)))
            continue
        try:
            rendered = personalise(
                compiled,
                recipient,
                workspace_name=job.workspace_name,
                secret=job.secret,
                base_url=job.base_url,
                opens=content.track_opens,
                clicks=content.track_clicks,
            )
        except RenderError as error:
            built.append(Built(recipient.row_id, None, str(error)))
            continue
        html = rendered.html
        if html and job.public_url and job.base_url != job.public_url:
            # Hosted images come from the link host too (one host for the whole message).
            media = f"{job.public_url.rstrip('/')}/media/"
            html = html.replace(media, f"{job.base_url.rstrip('/')}/media/")
        raw = mime.build(
            mime.Message(
                from_email=from_email,
                from_name=job.sender.from_name,
                to=to,
                to_name=f"{recipient.first_name} {recipient.last_name}",
                subject=job.subject_prefix + rendered.subject,
                html=html,
                text=rendered.text,
                message_id=recipient.message_id,
                date=job.date,
                reply_to=reply_to,
                list_unsubscribe=recipient.list_unsubscribe,
                headers=job.headers,
            )
        )
        signing = 0.0
        if signer is not None:
            started = time.perf_counter()
            raw = signer.signature(raw) + raw
            signing = time.perf_counter() - started
        built.append(Built(recipient.row_id, raw, signing_seconds=signing))
    return built
