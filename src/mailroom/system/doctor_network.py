"""`mailroom doctor`'s conversations with other machines: the SMTP relay (connect, EHLO,
STARTTLS and AUTH as MAILROOM_SMTP_URL asks), the bounce listener, and the public URL's
`/healthz`. None holds a database connection; URLs are shown with the password masked."""

from __future__ import annotations

import asyncio
import ssl
import time
from typing import Any

from mailroom.core.logs import mask_url
from mailroom.settings import Settings
from mailroom.system.doctor_checks import (
    Check,
    connect_error,
    fail,
    is_loopback,
    ok,
    short_error,
    tls_error,
    warn,
)

SMTP_STEP_SECONDS = 10.0  # per SMTP command (connect, EHLO, STARTTLS, AUTH)
SMTP_SECONDS = 25.0  # the whole relay conversation
BOUNCE_SECONDS = 5.0
HTTP_SECONDS = 5.0


# ----------------------------------------------------------------------------- SMTP relay


async def check_smtp(settings: Settings) -> Check:
    from mailroom.sending.transport import relay_urls

    name = "smtp_relay"
    if not settings.smtp_url:
        outbox = settings.data_dir / "outbox"
        return warn(
            name,
            f"MAILROOM_SMTP_URL is not set: every email is written to {outbox}/*.eml "
            "instead of being sent",
            "set MAILROOM_SMTP_URL=smtp://user:password@relay.example.net:587 to send for "
            "real (unset is right for trying Mailroom out)",
        )
    urls = relay_urls(settings.smtp_url)
    if len(urls) > 1:
        # Several relays: each is checked; the worst answer stands for them all.
        found = [await _check_relay(settings, url) for url in urls]
        for status in ("fail", "warn"):
            worst = next((c for c in found if c.status == status), None)
            if worst is not None:
                return worst
        return ok(name, "; ".join(c.detail for c in found))
    return await _check_relay(settings, urls[0] if urls else settings.smtp_url)


async def _check_relay(settings: Settings, url: str) -> Check:
    from mailroom.sending.transport import parse_smtp_url

    name = "smtp_relay"
    shown = mask_url(url)
    try:
        target = parse_smtp_url(url)
    except ValueError as exc:
        return fail(name, f"{shown}: {exc}", "fix MAILROOM_SMTP_URL")
    try:
        async with asyncio.timeout(SMTP_SECONDS):
            return await _smtp_conversation(settings, target, shown)
    except TimeoutError:
        return fail(
            name,
            f"{shown}: no answer within {SMTP_SECONDS:.0f} s",
            f"check that the relay at {target.host}:{target.port} is up and that this "
            "machine may connect to it (firewall, outbound port)",
        )


async def _smtp_conversation(settings: Settings, target: Any, shown: str) -> Check:
    import aiosmtplib

    from mailroom.sending.transport import greet, quit_politely

    name = "smtp_relay"
    where = f"{target.host}:{target.port}"
    context = ssl.create_default_context()
    if not target.verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    client = aiosmtplib.SMTP(
        hostname=target.host,
        port=target.port,
        use_tls=target.implicit_tls,
        start_tls=False,  # step by step below, to say which step failed
        tls_context=context,
        timeout=SMTP_STEP_SECONDS,
        local_hostname=settings.resolved_smtp_helo,
    )
    steps: list[str] = []
    concerns: list[str] = []
    certificate_fix = (
        "give the relay a certificate valid for its name, or add ?verify=false to "
        "MAILROOM_SMTP_URL for a relay with a self-signed one"
    )
    try:
        try:
            greeting = await client.connect()
        except (aiosmtplib.SMTPException, OSError) as exc:
            tls = tls_error(exc)
            if tls is not None:
                return fail(name, f"{shown}: TLS failed ({short_error(tls)})", certificate_fix)
            return fail(
                name,
                f"{shown}: could not connect ({connect_error(exc)})",
                f"check the host and port in MAILROOM_SMTP_URL, that the relay at {where} is "
                "running, and that this machine may connect to it (firewall, outbound port)",
            )
        steps.append(f"connected ({greeting.code}{' TLS' if target.implicit_tls else ''})")
        try:
            await greet(client)
        except aiosmtplib.SMTPException as exc:
            return fail(
                name,
                f"{shown}: refused our EHLO {settings.resolved_smtp_helo} ({short_error(exc)})",
                "set MAILROOM_SMTP_HELO to this machine's public host name (one whose "
                "address resolves back to it)",
            )
        steps.append("EHLO ok")
        if not target.implicit_tls:
            offered = client.supports_extension("starttls")
            if target.starttls is False:
                steps.append("no STARTTLS (?starttls=never)")
                if target.password and not is_loopback(target.host):
                    concerns.append("the password crosses the network unencrypted")
            elif offered:
                try:
                    await client.starttls(tls_context=context)
                except (aiosmtplib.SMTPException, OSError) as exc:
                    problem = tls_error(exc) or exc
                    return fail(
                        name, f"{shown}: STARTTLS failed ({short_error(problem)})", certificate_fix
                    )
                await greet(client)
                steps.append("STARTTLS ok")
            elif target.starttls:
                return fail(
                    name,
                    f"{shown}: the relay does not offer STARTTLS, and MAILROOM_SMTP_URL "
                    "requires it (?starttls=require)",
                    "enable STARTTLS on the relay, or use smtps:// (port 465) if it speaks "
                    "TLS from the first byte",
                )
            else:
                steps.append("STARTTLS not offered")
                if not is_loopback(target.host):
                    concerns.append("the relay offers no STARTTLS: mail travels unencrypted")
        if target.username:
            if not client.supports_extension("auth"):
                return fail(
                    name,
                    f"{shown}: the relay offers no AUTH, but MAILROOM_SMTP_URL has a user name",
                    "remove user:password from MAILROOM_SMTP_URL if the relay accepts this "
                    "machine by its address, or enable AUTH on the relay (many offer it only "
                    "after STARTTLS)",
                )
            try:
                await client.login(target.username, target.password or "")
            except aiosmtplib.SMTPAuthenticationError as exc:
                return fail(
                    name,
                    f"{shown}: the relay refused the user name and password of "
                    f"{target.username} ({exc.code} {exc.message})",
                    "check the user and password in MAILROOM_SMTP_URL (percent-encode @ : / "
                    "and % in them)",
                )
            except aiosmtplib.SMTPException as exc:
                return fail(
                    name,
                    f"{shown}: AUTH failed ({short_error(exc)})",
                    "check the relay's AUTH mechanisms (PLAIN, LOGIN or CRAM-MD5) and the "
                    "user and password in MAILROOM_SMTP_URL",
                )
            steps.append(f"AUTH ok as {target.username}")
        else:
            steps.append("no AUTH configured")
    except aiosmtplib.SMTPServerDisconnected as exc:
        return fail(
            name,
            f"{shown}: the relay hung up after {', '.join(steps) or 'connecting'} "
            f"({short_error(exc)})",
            "look at the relay's log for why it closed the connection",
        )
    finally:
        await quit_politely(client)
    detail = f"{shown}: {', '.join(steps)}"
    if concerns:
        return warn(
            name,
            f"{detail}; {'; '.join(concerns)}",
            "enable STARTTLS on the relay (and drop ?starttls=never), or use smtps://",
        )
    return ok(name, detail)


# ---------------------------------------------------------------------------- bounce listener


async def check_bounce_listener(settings: Settings) -> Check:
    import aiosmtplib

    from mailroom.bounces.listener import parse_address
    from mailroom.sending.transport import greet, quit_politely

    name = "bounce_listener"
    if not settings.bounce_smtp:
        if not settings.smtp_url:
            return ok(name, "MAILROOM_BOUNCE_SMTP is not set (no relay: nothing can bounce)")
        return warn(
            name,
            "MAILROOM_BOUNCE_SMTP is not set: bounces and complaints that come back to the "
            "return path are not received (unless `mailroom bounces --listen` runs apart)",
            "set MAILROOM_BOUNCE_SMTP=0.0.0.0:25 (the worker starts the listener; or run "
            "`mailroom bounces`) and point the return-path domain's MX at this machine",
        )
    try:
        host, port = parse_address(settings.bounce_smtp)
    except ValueError as exc:
        return fail(name, str(exc), "set MAILROOM_BOUNCE_SMTP to host:port, e.g. 0.0.0.0:25")
    # Listening on every address: ask this machine (a comparison, not a bind).
    anywhere = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}  # noqa: S104
    asked = anywhere.get(host, host)
    where = f"[{asked}]:{port}" if ":" in asked else f"{asked}:{port}"
    client = aiosmtplib.SMTP(
        hostname=asked,
        port=port,
        start_tls=False,
        timeout=BOUNCE_SECONDS,
        local_hostname=settings.resolved_smtp_helo,
    )
    try:
        async with asyncio.timeout(BOUNCE_SECONDS * 2):
            greeting = await client.connect()
            await greet(client)
    except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
        return fail(
            name,
            f"nothing answers SMTP at {where} (MAILROOM_BOUNCE_SMTP): {connect_error(exc)}",
            "start the listener: `mailroom worker` or `mailroom serve` start it when "
            "MAILROOM_BOUNCE_SMTP is set, `mailroom bounces` runs it alone",
        )
    finally:
        await quit_politely(client)
    banner = greeting.message.splitlines()[0] if greeting.message else ""
    return ok(name, f"{where} answered {greeting.code} {banner}".strip())


# ------------------------------------------------------------------------------ public URL


async def check_public_url(settings: Settings) -> Check:
    import httpx

    name = "public_url"
    base = settings.public_url.rstrip("/")
    url = f"{base}/healthz"
    shown = mask_url(url)
    serve_fix = (
        "start `mailroom serve`, or set MAILROOM_PUBLIC_URL to the address people reach "
        "Mailroom at (and check the reverse proxy in front of it)"
    )
    started = time.perf_counter()
    try:
        async with (
            asyncio.timeout(HTTP_SECONDS * 2),
            httpx.AsyncClient(timeout=HTTP_SECONDS, follow_redirects=False) as client,
        ):
            response = await client.get(url)
    except (httpx.HTTPError, OSError, TimeoutError, ValueError) as exc:
        return fail(name, f"{shown} did not answer ({connect_error(exc)})", serve_fix)
    took = (time.perf_counter() - started) * 1000
    if response.is_redirect:
        where = response.headers.get("location", "")
        return fail(
            name,
            f"{shown} redirects ({response.status_code}) to {mask_url(where)}: links in "
            "emails take a detour, or break",
            "set MAILROOM_PUBLIC_URL to the address it redirects to (usually https://...)",
        )
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict) or "database" not in body:
        return fail(
            name,
            f"{shown} answered {response.status_code}, but not as Mailroom does",
            "point the reverse proxy (or MAILROOM_PUBLIC_URL) at Mailroom",
        )
    if response.status_code != 200:
        return fail(
            name,
            f"{shown} answered {response.status_code}: the server cannot reach its database "
            f"({body.get('error') or body.get('database')})",
            "check the server's MAILROOM_DATABASE_URL and the database server",
        )
    version = body.get("version")
    return ok(name, f"{shown} answered 200 in {took:.0f} ms (Mailroom {version})")
