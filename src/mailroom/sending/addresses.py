"""The addresses and links every message carries, all derived from its send-log row id: the
Message-ID, the VERP envelope sender (bounces map back to the row), the signed unsubscribe,
preferences and web-view links, and the List-Unsubscribe header values."""

from __future__ import annotations

from mailroom.core import tokens
from mailroom.core.emails import email_domain
from mailroom.settings import Settings

BOUNCE = "bounce"  # token purposes; each signs with its own key
UNSUBSCRIBE = "unsubscribe"
MAIL_UNSUBSCRIBE = "mail-unsubscribe"
PREFERENCES = "preferences"
WEBVIEW = "webview"


def message_id(row_id: str, from_email: str) -> str:
    return f"{row_id}@{email_domain(from_email) or 'mailroom.invalid'}"


def bounce_domain(settings: Settings, from_email: str, domain_verified: bool) -> str:
    """Where bounces come back: `<subdomain>.<sending domain>` (a CNAME to the operator's
    bounce host) when the domain is verified and a bounce host is set, else the bounce host
    itself, else the sender's own domain."""
    domain = email_domain(from_email)
    if settings.return_path_domain:
        if domain_verified and domain:
            return f"{settings.return_path_subdomain}.{domain}"
        return settings.return_path_domain
    return domain or "mailroom.invalid"


def return_path(settings: Settings, row_id: str, from_email: str, domain_verified: bool) -> str:
    token = tokens.sign_short(settings.resolved_secret_key, BOUNCE, row_id)
    return f"bounces+{token}@{bounce_domain(settings, from_email, domain_verified)}"


def _link(settings: Settings, path: str, purpose: str, *parts: str) -> str:
    token = tokens.sign(settings.resolved_secret_key, purpose, *parts)
    return f"{settings.public_url.rstrip('/')}/{path}/{token}"


def unsubscribe_url(settings: Settings, workspace_id: str, contact_id: str, row_id: str) -> str:
    return _link(settings, "u", UNSUBSCRIBE, workspace_id, contact_id, row_id)


def preferences_url(settings: Settings, workspace_id: str, contact_id: str, row_id: str) -> str:
    return _link(settings, "p", PREFERENCES, workspace_id, contact_id, row_id)


def webview_url(settings: Settings, workspace_id: str, row_id: str) -> str:
    return _link(settings, "v", WEBVIEW, workspace_id, row_id)


def list_unsubscribe(
    settings: Settings, link: str, row_id: str, from_email: str, domain_verified: bool
) -> tuple[str, ...]:
    """The https link first (one-click, RFC 8058), then a mailto for clients that mail."""
    token = tokens.sign_short(settings.resolved_secret_key, MAIL_UNSUBSCRIBE, row_id)
    host = bounce_domain(settings, from_email, domain_verified)
    return (link, f"mailto:unsubscribe+{token}@{host}")
