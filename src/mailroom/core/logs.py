"""How every process logs: plain lines, or one JSON object a line (`MAILROOM_LOG_FORMAT=json`:
time, level, logger, message, and the request's id, workspace, route, status and duration
when a request is being answered), and nothing a log reader should not see.

Every line goes through `redact` whatever logged it (ours, uvicorn, a library, a traceback):
addresses are masked as suppressions mask them (`j***@example.com`); API keys, assistant
grants and tokens, webhook secrets, bearer tokens and URL passwords are cut to their prefix;
the token of a subscriber link (unsubscribe, preferences, web view, confirmation, open and
click paths) is replaced. The access log (web.observe) writes a path's route template with
its token-like parameters redacted and no query string.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from mailroom.core.emails import mask_email

# What the request being answered sets (web.observe; the key check adds the workspace).
REQUEST_ID: ContextVar[str | None] = ContextVar("mailroom_request_id", default=None)
WORKSPACE_ID: ContextVar[str | None] = ContextVar("mailroom_workspace_id", default=None)


def current_request_id() -> str | None:
    """The id of the request being answered: kept on the work it queues (a job, an import),
    so the worker's lines about that work carry it too."""
    return REQUEST_ID.get()


_EMAIL = re.compile(
    r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+(?:@|%40)[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+", re.IGNORECASE
)
_SECRETS = re.compile(
    # keys, assistant grants and tokens, webhook and store secrets
    r"\b(mr_live_|mr_grant_|mr_at_|mr_rt_|whsec_|mrs_)[A-Za-z0-9_\-]+"
)
_MAILCHIMP_KEY = re.compile(r"\b[0-9a-f]{32}-us[0-9]{1,2}\b")
_BEARER = re.compile(r"(?i)\b((?:bearer|basic)\s+)[A-Za-z0-9._~+/=\-]+")
# A query string's values (a token, an address, an OAuth code or state): never needed to
# read a log.
_QUERY = re.compile(r"(\?|&)([A-Za-z0-9_.\-]+)=[^&\s\"']*")
# A URL's password: through the last `@` of the URL, as `mask_url` reads it (a password may
# hold an unencoded `@`, `#`, `?` or `/`).
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^:/@\s]*:)\S*@")
# Subscriber and sign-in links: /u/<token>, /p/, /v/, /o/, /l/, /confirm/, /f/confirm/, /app/link/
_LINK_TOKEN = re.compile(r"(/(?:u|p|v|o|l|confirm|f/confirm|app/link)/)[A-Za-z0-9._~%\-]{8,}")
_PASSWORD_FIELD = re.compile(r"(?i)([\"']?password[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]+")
REDACTED = "[redacted]"


def redact(text: str) -> str:
    text = _URL_PASSWORD.sub(r"\1***@", text)
    text = _QUERY.sub(r"\1\2=***", text)
    text = _SECRETS.sub(r"\1***", text)
    text = _MAILCHIMP_KEY.sub("***-us", text)
    text = _BEARER.sub(r"\1***", text)
    text = _LINK_TOKEN.sub(r"\1" + REDACTED, text)
    text = _PASSWORD_FIELD.sub(r"\1***", text)
    return _EMAIL.sub(lambda m: mask_email(m.group(0).replace("%40", "@")), text)


def mask_url(url: str) -> str:
    """`url` with its password (if any) replaced by `***`: everything between `user:` and
    the last `@`, so a password holding an unencoded `#`, `?`, `/` or `@` is hidden too."""
    scheme, found, rest = url.partition("://")
    at = rest.rfind("@")
    if found and at > 0 and ":" in rest[:at]:
        user = rest[: rest.index(":")]
        return f"{scheme}://{user}:***@{rest[at + 1 :]}"
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = f"{parts.username or ''}:***@{host}"
        if parts.port is not None:
            netloc += f":{parts.port}"
    except ValueError:  # a port that is not a number: show no part of it
        return "(unreadable URL)"
    return urlunsplit(parts._replace(netloc=netloc))


class PlainFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        request_id = getattr(record, "request_id", None) or REQUEST_ID.get()
        return redact(f"{line} [request {request_id}]" if request_id else line)


class JsonFormatter(logging.Formatter):
    """One JSON object a line; the fields a request sets only while one is answered."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        request_id = getattr(record, "request_id", None) or REQUEST_ID.get()
        workspace_id = getattr(record, "workspace_id", None) or WORKSPACE_ID.get()
        if request_id:
            entry["request_id"] = request_id
        if workspace_id:
            entry["workspace_id"] = workspace_id
        for field in ("method", "route", "path", "status", "duration_ms"):
            value = getattr(record, field, None)
            if value is not None:
                entry[field] = redact(value) if isinstance(value, str) else value
        if record.exc_info:
            entry["exception"] = redact(self.formatException(record.exc_info))
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure(log_format: str = "text", level: int | str = logging.INFO) -> None:
    """The root logger writes to stderr in `log_format` (text or json), every line redacted;
    uvicorn's loggers go through it (its own access log is replaced by web.observe's)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else PlainFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    # The level is Mailroom's own: debug never turns on the libraries' debug lines (botocore
    # prints signed request headers, aiosmtpd every SMTP command).
    chosen = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    logging.getLogger("mailroom").setLevel(chosen)
    root.setLevel(max(chosen, logging.INFO))
    for name in ("uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    # uvicorn's access line prints the raw path and query string: web.observe writes the
    # redacted one instead.
    logging.getLogger("uvicorn.access").disabled = True
    # httpx logs every request's URL with its query string at INFO (the MCP tools call the
    # API through it): warnings and errors only.
    logging.getLogger("httpx").setLevel(logging.WARNING)
