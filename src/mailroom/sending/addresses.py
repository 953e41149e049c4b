"""The addresses and links every message carries, all derived from its send-log row id: the
Message-ID, the VERP envelope sender (bounces map back to the row), the signed unsubscribe,
preferences and web-view links, and the List-Unsubscribe header values; and every address in
the form it goes on the wire (`wire`: a non-ASCII domain as IDNA)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import idna

from mailroom.core import tokens
from mailroom.core.emails import email_domain
from mailroom.settings import Settings

BOUNCE = "bounce"  # token purposes; each signs with its own key
UNSUBSCRIBE = "unsubscribe"
MAIL_UNSUBSCRIBE = "mail-unsubscribe"
PREFERENCES = "preferences"
WEBVIEW = "webview"


class Unwritable(ValueError):
    """An address whose domain has no IDNA form (the message cannot be addressed)."""


@lru_cache(maxsize=4096)
def _a_labels(domain: str) -> str:
    try:
        # UTS 46 mapping, then IDNA 2008: what email-validator checked the address against.
        return idna.encode(domain, uts46=True).decode()
    except (idna.IDNAError, UnicodeError) as problem:
        raise Unwritable(f"the domain {domain} has no IDNA form ({problem})") from None


def ascii_domain(domain: str) -> str:
    """A domain as it goes on the wire: its IDNA (`xn--`) form. Unwritable when it has none."""
    return domain if domain.isascii() else _a_labels(domain)


def wire(email: str) -> str:
    """An address as it goes into the envelope and the headers: the domain in its IDNA form,
    the local part as it is (non-ASCII only with SMTPUTF8: see `transport`)."""
    if email.isascii():
        return email
    local, at, domain = email.rpartition("@")
    return f"{local}@{ascii_domain(domain)}" if at else email


def needs_smtputf8(email: str) -> bool:
    """A non-ASCII local part: no ASCII form exists; only an SMTPUTF8 relay can take it."""
    return not email.rpartition("@")[0].isascii()


def message_id(row_id: str, from_email: str) -> str:
    return f"{row_id}@{wire_domain(email_domain(from_email)) or 'mailroom.invalid'}"


def wire_domain(domain: str) -> str:
    """The domain's IDNA form, or "" when it has none (the caller's fallback applies)."""
    try:
        return ascii_domain(domain)
    except Unwritable:
        return ""


def bounce_domain(settings: Settings, from_email: str, domain_verified: bool) -> str:
    """Where bounces come back: `<subdomain>.<sending domain>` (a CNAME to the operator's
    bounce host) when the domain is verified and a bounce host is set, else the bounce host
    itself, else the sender's own domain."""
    domain = wire_domain(email_domain(from_email))
    if settings.return_path_domain:
        if domain_verified and domain:
            return f"{settings.return_path_subdomain}.{domain}"
        return settings.return_path_domain
    return domain or "mailroom.invalid"


def return_path(settings: Settings, row_id: str, from_email: str, domain_verified: bool) -> str:
    token = tokens.sign_short(settings.resolved_secret_key, BOUNCE, row_id)
    return f"bounces+{token}@{bounce_domain(settings, from_email, domain_verified)}"


# The mail whose links may use its domain's own link host (a marketer's mail, not a receipt).
LINK_HOST_KINDS = frozenset({"campaign", "automation"})
# The paths those links use; on a link host nothing else is answered (web.linkhost).
LINK_PATHS = ("/l/", "/o/", "/u/", "/p/", "/v/", "/media/", "/static/")


def link_base(settings: Settings, domain: Any, kind: str) -> str:
    """Where a message's links point: its sending domain's link host once that host's CNAME
    verified (campaign and automation mail), else the installation's public URL."""
    host = getattr(domain, "link_host", None) if kind in LINK_HOST_KINDS else None
    verdict = ((getattr(domain, "record_status", None) or {}).get("link_host") or {}).get("status")
    if not host or verdict != "verified":
        return settings.public_url
    scheme = urlsplit(settings.public_url).scheme or "https"
    return f"{scheme}://{host}"


def _link(settings: Settings, path: str, purpose: str, *parts: str, base: str = "") -> str:
    token = tokens.sign(settings.resolved_secret_key, purpose, *parts)
    return f"{(base or settings.public_url).rstrip('/')}/{path}/{token}"


def unsubscribe_url(
    settings: Settings, workspace_id: str, contact_id: str, row_id: str, base: str = ""
) -> str:
    return _link(settings, "u", UNSUBSCRIBE, workspace_id, contact_id, row_id, base=base)


def preferences_url(
    settings: Settings, workspace_id: str, contact_id: str, row_id: str, base: str = ""
) -> str:
    return _link(settings, "p", PREFERENCES, workspace_id, contact_id, row_id, base=base)


def webview_url(settings: Settings, workspace_id: str, row_id: str, base: str = "") -> str:
    return _link(settings, "v", WEBVIEW, workspace_id, row_id, base=base)


def list_unsubscribe(
    settings: Settings, link: str, row_id: str, from_email: str, domain_verified: bool
) -> tuple[str, ...]:
    """The https link first (one-click, RFC 8058), then a mailto for clients that mail."""
    token = tokens.sign_short(settings.resolved_secret_key, MAIL_UNSUBSCRIBE, row_id)
    host = bounce_domain(settings, from_email, domain_verified)
    return (link, f"mailto:unsubscribe+{token}@{host}")


# Mail someone asked for (a receipt, a signup confirmation) carries no List-Unsubscribe: a
# client's one-click unsubscribe there would stop all later mail of its kind to that person.
# Campaigns, automations and test sends of campaigns carry it.
LIST_MAIL = frozenset({"campaign", "automation", "test"})


def feedback_id(kind: str, source_id: str, workspace_id: str) -> tuple[tuple[str, str], ...]:
    """The `Feedback-ID` header of campaign and automation mail (mailbox providers' complaint
    loops group complaints by it): ids only, nothing personal. None for other mail."""
    if kind not in ("campaign", "automation") or not source_id:
        return ()
    return (("Feedback-ID", f"{source_id}:{kind}:{workspace_id}:mailroom"),)
