"""A sending domain scored against the bulk-sender rules Gmail and Yahoo enforce since 2024,
each rule met or not with what to fix: DKIM and SPF passing and aligned with the From domain,
DMARC published, one-click unsubscribe, a complaint rate under 0.3 % (a warning from 0.1 %),
TLS to the relay, a proper EHLO name, and the relay's reverse DNS when it is known (a relay
elsewhere, looked up at each DNS check).

Read from what is stored (the last DNS check, the workspace's delivery health, the settings):
no DNS or network here, so a domain's page answers at once. The DNS verdicts are the last
`verify` or daily re-check's.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from mailroom.domains import dns
from mailroom.models import SendingDomain
from mailroom.sending.transport import (  # the engine's own reading of the URL
    parse_smtp_url,
    relay_urls,
)
from mailroom.settings import Settings

COMPLAINT_LIMIT = 0.003  # Gmail and Yahoo: stay under 0.3 %
COMPLAINT_WARNING = 0.001  # and aim under 0.1 %
LOOPBACK = ("localhost", "127.0.0.1", "::1")


def _check(rule: str, ok: bool, detail: str) -> dict[str, Any]:
    return {"rule": rule, "ok": ok, "detail": detail}


def _verdict(domain: SendingDomain, purpose: str) -> tuple[str, str | None]:
    found = (domain.record_status or {}).get(purpose) or {}
    return found.get("status", "pending"), found.get("reason")


def _record_rule(domain: SendingDomain, purpose: str, rule: str, ok_text: str) -> dict[str, Any]:
    status, reason = _verdict(domain, purpose)
    if status == "verified":
        return _check(rule, True, ok_text)
    if status == "pending":
        return _check(
            rule, False, f"Not checked yet: publish the {dns.LABELS[purpose]} record, then verify."
        )
    return _check(
        rule, False, f"{reason or 'The record failed its check'}: publish the record shown."
    )


def _spf(settings: Settings, domain: SendingDomain) -> dict[str, Any]:
    """SPF aligns (relaxed) when the envelope sender is under the From domain: the return-path
    CNAME, whose target's SPF is the operator's."""
    if not settings.return_path_domain:
        return _check(
            "spf_aligned",
            False,
            "The envelope sender is not under this domain, so SPF cannot align: the operator "
            "sets MAILROOM_RETURN_PATH_DOMAIN and you publish its CNAME (DKIM still aligns).",
        )
    status, reason = _verdict(domain, dns.RETURN_PATH)
    host = f"{settings.return_path_subdomain}.{domain.domain}"
    if status != "verified":
        return _check(
            "spf_aligned",
            False,
            f"Publish the CNAME {host} -> {settings.return_path_domain}"
            + (f" ({reason})" if reason else "")
            + ": the envelope sender is then under this domain and SPF aligns.",
        )
    if settings.spf_include:
        spf_status, spf_reason = _verdict(domain, dns.SPF)
        if spf_status != "verified":
            return _check(
                "spf_aligned",
                False,
                f"{spf_reason or 'SPF not checked yet'}: include {settings.spf_include} in the "
                "domain's SPF record.",
            )
    return _check("spf_aligned", True, f"Bounces return to {host}, under this domain: SPF aligns.")


def _complaints(rate: float | None) -> dict[str, Any]:
    if rate is None:
        return _check("complaint_rate", True, "Nothing sent in the last 7 days.")
    shown = f"{rate * 100:.2f} %"
    if rate >= COMPLAINT_LIMIT:
        return _check(
            "complaint_rate",
            False,
            f"{shown} of recent mail was reported as spam: over Gmail's and Yahoo's 0.3 % "
            "limit. Mail only people who asked for it, and make unsubscribing easy.",
        )
    if rate >= COMPLAINT_WARNING:
        return _check(
            "complaint_rate",
            True,
            f"{shown} reported as spam: under the 0.3 % limit, over the 0.1 % to aim for.",
        )
    return _check("complaint_rate", True, f"{shown} reported as spam (under 0.1 %).")


def _tls(settings: Settings) -> dict[str, Any]:
    if not settings.smtp_url:
        return _check(
            "tls_to_relay",
            False,
            "No relay is configured (MAILROOM_SMTP_URL): mail goes to the outbox folder.",
        )
    urls = relay_urls(settings.smtp_url)
    if len(urls) > 1:
        # Several relays: met when each is (the first not met says why).
        found = [_tls_of(url) for url in urls]
        return next((c for c in found if not c["ok"]), None) or _check(
            "tls_to_relay", True, " ".join(c["detail"] for c in found)
        )
    return _tls_of(urls[0] if urls else settings.smtp_url)


def _tls_of(url: str) -> dict[str, Any]:
    try:
        target = parse_smtp_url(url)
    except ValueError as problem:
        return _check("tls_to_relay", False, str(problem))
    if target.host in LOOPBACK:
        return _check(
            "tls_to_relay",
            True,
            "The relay runs on this machine: its own TLS to mailbox providers is what counts "
            "(Postfix: smtp_tls_security_level = may or higher).",
        )
    if target.implicit_tls or target.starttls is True:
        return _check("tls_to_relay", True, f"Every connection to {target.host} uses TLS.")
    if target.starttls is False:
        return _check(
            "tls_to_relay",
            False,
            f"MAILROOM_SMTP_URL says starttls=never: mail to {target.host} goes unencrypted.",
        )
    return _check(
        "tls_to_relay",
        False,
        f"TLS to {target.host} only when it offers STARTTLS: add ?starttls=require to "
        "MAILROOM_SMTP_URL (or use smtps://) to make it a must.",
    )


def _ehlo(settings: Settings) -> dict[str, Any]:
    name = settings.resolved_smtp_helo
    literal = name.startswith("[")
    try:
        ipaddress.ip_address(name.strip("[]"))
        is_ip = True
    except ValueError:
        is_ip = False
    if name == "localhost" or literal or is_ip or "." not in name:
        return _check(
            "ehlo_name",
            False,
            f"The relay is greeted as {name!r}: set MAILROOM_SMTP_HELO (or MAILROOM_PUBLIC_URL) "
            "to a full host name whose address points back to it.",
        )
    return _check("ehlo_name", True, f"The relay is greeted as {name}.")


def checks_of(
    settings: Settings, domain: SendingDomain, complaint_rate: float | None
) -> list[dict[str, Any]]:
    """The domain's rules, in the order a person fixes them."""
    return [
        _record_rule(
            domain,
            dns.DKIM,
            "dkim_aligned",
            f"Mail is signed with d={domain.domain}, the From domain: DKIM aligns.",
        ),
        _spf(settings, domain),
        _record_rule(
            domain,
            dns.DMARC,
            "dmarc_published",
            "A DMARC record is published (p=none is enough for the bulk-sender rules).",
        ),
        _check(
            "one_click_unsubscribe",
            True,
            "Campaign and automation mail carries List-Unsubscribe with "
            "List-Unsubscribe-Post: List-Unsubscribe=One-Click (RFC 8058).",
        ),
        _complaints(complaint_rate),
        _tls(settings),
        _ehlo(settings),
        *_reverse_dns(domain),
    ]


def _reverse_dns(domain: SendingDomain) -> list[dict[str, Any]]:
    """The relay's reverse DNS from the last check, only when it was known then."""
    found = (domain.record_status or {}).get(dns.REVERSE_DNS)
    if not isinstance(found, dict) or "ok" not in found:
        return []
    return [_check("reverse_dns", bool(found["ok"]), str(found.get("detail", "")))]
