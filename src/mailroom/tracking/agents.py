"""Telling people from machines by User-Agent, for opens and clicks.

Security gateways (Microsoft Defender Safe Links, Proofpoint, Mimecast, Barracuda, Cisco,
Sophos, Trend Micro, Forcepoint, Symantec), link-preview fetchers (Slack, Teams, Skype,
WhatsApp, Telegram, Discord, Facebook, LinkedIn, Twitter/X, Apple's link presentation), search
and monitoring bots, command-line and library clients (curl, Wget, python-requests, aiohttp,
httpx, Go, Java, okhttp, libwww) and headless browsers follow every link in a message before
anyone reads it. Their requests are recorded with `automated` set and counted nowhere.

A browser's User-Agent (Chrome, Firefox, Safari, Edge) always counts as a person (unless it
calls itself a bot, crawler, spider, headless or preview); so do mail
clients and image proxies that fetch on behalf of a reader (Gmail's GoogleImageProxy, Yahoo's
proxy, Outlook, Apple Mail, Thunderbird). An empty User-Agent is a machine.
"""

from __future__ import annotations

import re

MACHINES = re.compile(
    r"bot\b|bot/|crawler|spider|scanner|preview|headless|phantomjs|"
    r"safelinks|defender|proofpoint|mimecast|barracuda|ironport|cisco|sophos|trendmicro|"
    r"forcepoint|symantec|messagelabs|fortiguard|zscaler|checkpoint|"
    r"slack|teams|skype|whatsapp|telegram|discord|facebookexternalhit|linkedin|twitter|"
    r"embedly|applebot|bingpreview|"
    r"^curl/|^wget/|python-|python/|aiohttp|httpx|go-http-client|^java/|okhttp|libwww|"
    r"^node-fetch|axios|monitoring|uptime|pingdom",
    re.IGNORECASE,
)
# `Mozilla/5.0 (...) ... Chrome/120 Safari/537.36`, `... Firefox/121.0`, `... Version/17 Safari/`
BROWSER = re.compile(r"^Mozilla/5\.0 \(.*\).*\b(Chrome|CriOS|Firefox|FxiOS|Safari|Edg)/[\d.]+")
# What a crawler dressed as a browser still says about itself (Googlebot's smartphone agent).
SELF_DECLARED = re.compile(r"bot\b|bot/|crawler|spider|headless|preview", re.IGNORECASE)


def is_automated(user_agent: str | None) -> bool:
    agent = (user_agent or "").strip()
    if not agent:
        return True
    if BROWSER.search(agent) and not SELF_DECLARED.search(agent):
        return False
    return MACHINES.search(agent) is not None
