"""The 26 events: name, group, the filter dimensions each carries, and which reach chat."""

from __future__ import annotations

from dataclasses import dataclass

DIMENSIONS = ("list_ids", "form_ids", "tag_ids", "campaign_ids", "domain_ids")


@dataclass(frozen=True)
class EventType:
    name: str
    group: str
    description: str
    dimensions: frozenset[str] = frozenset()  # filter keys this event can match
    chat: bool = False  # delivered to Slack / Teams channels


def _e(name: str, group: str, description: str, *dims: str, chat: bool = False) -> EventType:
    return EventType(name, group, description, frozenset(dims), chat)


# Contact events a public form submission creates also carry the form dimension.
_FORM = "form_ids"

CATALOG: dict[str, EventType] = {
    e.name: e
    for e in [
        _e("contact.created", "Contacts", "a contact is added by any route", _FORM),
        _e("contact.updated", "Contacts", "contact fields change (tag membership excluded)"),
        _e(
            "contact.unsubscribed",
            "Contacts",
            "a contact unsubscribed or was set to unsubscribed",
            _FORM,
        ),
        _e(
            "contact.resubscribed",
            "Contacts",
            "a previously unsubscribed contact subscribed again",
            _FORM,
        ),
        _e("contact.bounced", "Contacts", "address hard-bounced and is suppressed"),
        _e("contact.complained", "Contacts", "contact marked a message as spam and is suppressed"),
        _e("contact.deleted", "Contacts", "contact deleted (erasure or manual)"),
        _e("contact.tag_added", "Contacts", "tag added to a contact", "tag_ids"),
        _e("contact.tag_removed", "Contacts", "tag removed from a contact", "tag_ids"),
        _e("contact.list_joined", "Contacts", "contact joined a list", "list_ids", _FORM),
        _e("contact.list_left", "Contacts", "contact left or was removed from a list", "list_ids"),
        _e("email.sent", "Email", "email accepted by managed delivery", "campaign_ids"),
        _e("email.delivered", "Email", "delivered to the recipient's mail server", "campaign_ids"),
        _e("email.opened", "Email", "first open only", "campaign_ids"),
        _e("email.clicked", "Email", "first click only", "campaign_ids"),
        _e("email.bounced", "Email", "email bounced", "campaign_ids"),
        _e("email.complained", "Email", "recipient marked email as spam", "campaign_ids"),
        _e("campaign.sent", "Campaigns", "campaign finished sending", "campaign_ids", chat=True),
        _e("form.submitted", "Forms", "signup or contact form submitted and accepted", _FORM),
        _e("domain.verified", "Domains", "sending domain verified", "domain_ids", chat=True),
        _e("domain.failed", "Domains", "verification failed or lapsed", "domain_ids", chat=True),
        _e("workspace.paused", "Workspace", "sending stopped", chat=True),
        _e("workspace.resumed", "Workspace", "sending started again", chat=True),
        _e("workspace.health_warning", "Workspace", "delivery results deteriorating", chat=True),
        _e("automation.failed", "Automations", "an automation step could not complete", chat=True),
        _e("automation.step_reached", "Automations", "a contact reached a call-a-webhook step"),
    ]
}

EVENT_NAMES: tuple[str, ...] = tuple(CATALOG)
CHAT_EVENTS: frozenset[str] = frozenset(name for name, e in CATALOG.items() if e.chat)
