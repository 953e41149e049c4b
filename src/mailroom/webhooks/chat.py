"""Slack and Microsoft Teams channels: which URLs are chat, and the readable messages they get
(only the seven chat events; never signed JSON)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from mailroom.events.catalog import CATALOG

TITLES = {
    "workspace.paused": "Sending paused",
    "workspace.resumed": "Sending resumed",
    "workspace.health_warning": "Delivery health warning",
    "automation.failed": "Automation step failed",
    "campaign.sent": "Campaign sent",
    "domain.verified": "Sending domain verified",
    "domain.failed": "Sending domain verification failed",
}


def detect_channel(url: str) -> str:
    """`slack` for an incoming-webhook URL, `teams` for a Teams Workflows (Power Automate)
    URL, else `server`."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host == "hooks.slack.com" and parts.path.startswith(
        ("/services/", "/workflows/", "/triggers/")
    ):
        return "slack"
    if host.endswith((".logic.azure.com", ".powerplatform.com", ".powerautomate.com")):
        return "teams"
    return "server"


def _details(event_type: str, data: dict[str, Any]) -> tuple[str, str]:
    """(one-line summary, path of the relevant page)."""
    if event_type == "campaign.sent":
        campaign = data.get("campaign") or {}
        name = campaign.get("name") or campaign.get("subject") or "A campaign"
        recipients = campaign.get("recipients")
        extra = f" to {recipients:,} recipients" if isinstance(recipients, int) else ""
        return f"{name} finished sending{extra}.", f"/campaigns/{campaign.get('id', '')}"
    if event_type.startswith("domain."):
        domain = data.get("domain") or {}
        name = domain.get("name") or "A sending domain"
        verdict = "is verified" if event_type == "domain.verified" else "failed verification"
        reason = f" ({domain['reason']})" if domain.get("reason") else ""
        return f"{name} {verdict}{reason}.", f"/settings/domains/{domain.get('id', '')}"
    if event_type == "automation.failed":
        automation = data.get("automation") or {}
        name = automation.get("name") or "An automation"
        error = data.get("error") or "a step could not complete"
        return (
            f"{name}: {error}. The automation stays active.",
            f"/automations/{automation.get('id', '')}",
        )
    reason = data.get("reason") or ""
    summary = {
        "workspace.paused": "Sending is paused",
        "workspace.resumed": "Sending has resumed",
        "workspace.health_warning": "Delivery results are deteriorating; sending continues",
    }[event_type]
    return f"{summary}{': ' + reason if reason else ''}.", "/settings/sending"


def render(
    channel: str, event_type: str, data: dict[str, Any], workspace_name: str, public_url: str
) -> dict[str, Any]:
    title = TITLES.get(event_type, CATALOG[event_type].description.capitalize())
    summary, path = _details(event_type, data)
    link = public_url.rstrip("/") + path
    where = workspace_name or "your workspace"
    if data.get("test"):
        title = f"[Test] {title}"
    if channel == "slack":
        return {
            "text": f"{title} in {where}: {summary} {link}",
            "blocks": [
                {"type": "header", "text": {"type": "plain_text", "text": title}},
                {
                    "type": "section",
                    "text": {"type": "mrkdwn", "text": f"*{where}*\n{summary}"},
                },
                {
                    "type": "actions",
                    "elements": [
                        {
                            "type": "button",
                            "text": {"type": "plain_text", "text": "Open in Mailroom"},
                            "url": link,
                        }
                    ],
                },
            ],
        }
    return {  # Teams Workflows: an Adaptive Card
        "type": "message",
        "attachments": [
            {
                "contentType": "application/vnd.microsoft.card.adaptive",
                "contentUrl": None,
                "content": {
                    "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                    "type": "AdaptiveCard",
                    "version": "1.4",
                    "body": [
                        {
                            "type": "TextBlock",
                            "text": title,
                            "weight": "Bolder",
                            "size": "Medium",
                            "wrap": True,
                        },
                        {
                            "type": "TextBlock",
                            "text": where,
                            "isSubtle": True,
                            "spacing": "None",
                            "wrap": True,
                        },
                        {"type": "TextBlock", "text": summary, "wrap": True},
                    ],
                    "actions": [
                        {"type": "Action.OpenUrl", "title": "Open in Mailroom", "url": link}
                    ],
                },
            }
        ],
    }
