"""Reading what comes back to the return path: RFC 3464 delivery status notifications, RFC 5965
(ARF) feedback reports, and everything else (auto-replies, out-of-office), which is ignored.

Pure parsing, no database: `read(data) -> Report`. A DSN gives one `Outcome` per recipient
(`Action` + `Status`); a bounce that is not `multipart/report` (older Exim, qmail, some
Exchange set-ups) is read from its text when it says a delivery failed and names an enhanced
status code. The original message's Message-ID is taken from the returned headers when there.
Each outcome names the recipient it is about in every way the report does (`Outcome.names`):
a report matched by Message-ID alone is acted on only when one of them is the message's own
recipient.
"""

from __future__ import annotations

import contextlib
import email
import re
from dataclasses import dataclass, field
from email import policy
from email.message import Message
from email.utils import getaddresses

KINDS = ("hard", "soft", "delivered", "complaint", "ignored")

_STATUS = re.compile(r"\b([245])\.(\d{1,3})\.(\d{1,3})\b")
_SMTP_CODE = re.compile(r"\b([245])\d\d\b")
_ADDRESS = re.compile(r"[A-Za-z0-9._%+'=-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_MESSAGE_ID = re.compile(
    r"^(?:original-)?message-id:\s*(<[^>\r\n]+>)", re.IGNORECASE | re.MULTILINE
)
_FAILURE_WORDS = re.compile(
    r"delivery (status notification|has failed|failed)|undeliver|could not be delivered|"
    r"returned mail|mail delivery (failed|system)|failure notice|non.?delivery",
    re.IGNORECASE,
)
_AUTO_REPLY = re.compile(r"auto.?(reply|submitted|response)|out of (the )?office|vacation", re.I)


@dataclass
class Outcome:
    kind: str  # hard | soft | delivered | complaint
    recipient: str = ""
    status: str = ""  # enhanced status code, e.g. 5.1.1
    diagnostic: str = ""
    # Other addresses the report gives for the same recipient: a DSN's Original-Recipient,
    # an ARF's Removal-Recipient or the quoted message's To.
    also: tuple[str, ...] = ()

    def names(self, email: str) -> bool:
        """Whether the report says it is about `email`."""
        wanted = normal_address(email)
        return bool(wanted) and any(
            normal_address(a) == wanted for a in (self.recipient, *self.also) if a
        )


@dataclass
class Report:
    kind: str  # dsn | arf | text-bounce | ignored
    outcomes: list[Outcome] = field(default_factory=list)
    original_message_id: str | None = None


def read(data: bytes) -> Report:
    message = email.message_from_bytes(data, policy=policy.compat32)
    if message.get_content_type() == "multipart/report":
        report_type = str(message.get_param("report-type") or "").lower()
        if report_type == "delivery-status":
            return _dsn(message)
        if report_type == "feedback-report":
            return _arf(message)
    if _is_auto_reply(message):
        return Report("ignored")
    return _text_bounce(message)


def _field_blocks(part: Message) -> list[Message]:
    """The header blocks of a `message/delivery-status` or `message/feedback-report` part:
    Python parses them as sub-messages, or leaves them as text when the part is not MIME-clean."""
    payload = part.get_payload()
    if isinstance(payload, list):
        return [p for p in payload if isinstance(p, Message)]
    text = payload if isinstance(payload, str) else ""
    blocks = [b for b in re.split(r"\r?\n\s*\r?\n", text.strip()) if b.strip()]
    return [email.message_from_string(b + "\n", policy=policy.compat32) for b in blocks]


def _address(value: str | None) -> str:
    """`rfc822; jane@example.com` -> `jane@example.com`."""
    text = (value or "").split(";", 1)[-1].strip().strip("<>").strip()
    return text.lower()


def normal_address(address: str) -> str:
    """An address as compared: lower case, its domain in IDNA (a report may write the
    recipient's domain in either form)."""
    local, at, domain = address.strip().strip("<>").strip().lower().rpartition("@")
    if not at or not local:
        return ""
    domain = domain.rstrip(".")
    with contextlib.suppress(UnicodeError):  # not a valid name: compared as written
        domain = domain.encode("idna").decode("ascii")
    return f"{local}@{domain}"


def _kind(action: str, status: str) -> str | None:
    action = action.strip().lower()
    if action in ("delivered", "relayed", "expanded"):
        return "delivered"
    if action == "delayed":
        return "soft"
    if action == "failed" or status:
        if status.startswith("5"):
            return "hard"
        if status.startswith("4"):
            return "soft"
        return "hard" if action == "failed" else None
    return None


def _dsn(message: Message) -> Report:
    report = Report("dsn", original_message_id=_original_message_id(message))
    for part in message.walk():
        if part.get_content_type() not in (
            "message/delivery-status",
            "message/global-delivery-status",
        ):
            continue
        for block in _field_blocks(part)[1:] or _field_blocks(part):
            original = _address(block.get("Original-Recipient"))
            recipient = _address(block.get("Final-Recipient")) or original
            if not recipient:
                continue
            found = _STATUS.search(str(block.get("Status") or ""))
            status = ".".join(found.groups()) if found else ""
            diagnostic = " ".join(str(block.get("Diagnostic-Code") or "").split())
            if not status:
                code = _STATUS.search(diagnostic)
                status = ".".join(code.groups()) if code else ""
            kind = _kind(str(block.get("Action") or ""), status)
            if kind is not None:
                also = (original,) if original and original != recipient else ()
                report.outcomes.append(Outcome(kind, recipient, status, diagnostic[:500], also))
    return report


def _arf(message: Message) -> Report:
    report = Report("arf", original_message_id=_original_message_id(message))
    for part in message.walk():
        if part.get_content_type() != "message/feedback-report":
            continue
        fields: dict[str, str] = {}
        for block in _field_blocks(part):
            for name, value in block.items():
                fields.setdefault(name.lower(), str(value))
        feedback = fields.get("feedback-type", "abuse").strip().lower()
        if feedback in ("abuse", "fraud", "virus", "other", "not-spam") and feedback != "not-spam":
            named = [
                _address(fields.get("original-rcpt-to")),
                _address(fields.get("removal-recipient")),
                *_quoted_recipients(message),
            ]
            names = list(dict.fromkeys(a for a in named if a))
            recipient = names[0] if names else ""
            report.outcomes.append(Outcome("complaint", recipient, "", feedback, tuple(names[1:])))
    return report


def _quoted_recipients(message: Message) -> list[str]:
    """The `To` addresses of the message a report quotes (whole or its headers only)."""
    for headers in _quoted_headers(message):
        found = [a.lower() for _name, a in getaddresses(headers.get_all("To") or []) if "@" in a]
        if found:
            return found
    return []


def _quoted_headers(message: Message) -> list[Message]:
    quoted = []
    for part in message.walk():
        kind = part.get_content_type()
        if kind in ("message/rfc822", "message/global"):
            payload = part.get_payload()
            inner = payload[0] if isinstance(payload, list) and payload else None
            if isinstance(inner, Message):
                quoted.append(inner)
        elif kind in ("text/rfc822-headers", "text/global-headers"):
            payload = part.get_payload(decode=True)
            text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
            quoted.append(email.message_from_string(text, policy=policy.compat32))
    return quoted


def _text_bounce(message: Message) -> Report:
    subject = str(message.get("Subject") or "")
    sender = str(message.get("From") or "").lower()
    body = _plain_text(message)
    from_daemon = "mailer-daemon" in sender or "postmaster" in sender
    if not (from_daemon or _FAILURE_WORDS.search(subject) or _FAILURE_WORDS.search(body[:2000])):
        return Report("ignored")
    found = _STATUS.search(body)
    if found is None:
        code = _SMTP_CODE.search(body)
        if code is None:
            return Report("ignored")
        status = f"{code.group(1)}.0.0"
    else:
        status = ".".join(found.groups())
    if status.startswith("2"):
        return Report("ignored")
    line = next((ln.strip() for ln in body.splitlines() if status in ln or "550" in ln), "")
    recipient = ""
    for candidate in _ADDRESS.findall(body):
        if "mailer-daemon" not in candidate.lower() and "postmaster" not in candidate.lower():
            recipient = candidate.lower()
            break
    kind = "hard" if status.startswith("5") else "soft"
    return Report(
        "text-bounce",
        [Outcome(kind, recipient, status, line[:500])],
        _original_message_id(message),
    )


def _plain_text(message: Message) -> str:
    chunks = []
    for part in message.walk():
        if part.get_content_maintype() == "text" and part.get_content_subtype() in (
            "plain",
            "html",
        ):
            payload = part.get_payload(decode=True)
            if isinstance(payload, bytes):
                chunks.append(payload.decode(part.get_content_charset() or "utf-8", "replace"))
    return "\n".join(chunks)


def _original_message_id(message: Message) -> str | None:
    """The bounced message's Message-ID, from the returned message or its headers."""
    for part in message.walk():
        kind = part.get_content_type()
        if kind in ("message/rfc822", "message/global"):
            payload = part.get_payload()
            inner = payload[0] if isinstance(payload, list) and payload else None
            if isinstance(inner, Message) and inner.get("Message-ID"):
                return str(inner["Message-ID"]).strip()
        elif kind in ("text/rfc822-headers", "text/global-headers"):
            payload = part.get_payload(decode=True)
            text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
            found = _MESSAGE_ID.search(text)
            if found:
                return found.group(1)
    # Some reports name it only as `Original-Message-ID`, in their own headers or in the
    # machine-readable part.
    if message.get("Original-Message-ID"):
        return str(message["Original-Message-ID"]).strip()
    for part in message.walk():
        if part.get_content_type() in ("message/delivery-status", "message/feedback-report"):
            found = _MESSAGE_ID.search(part.as_string())
            if found:
                return found.group(1)
    found = _MESSAGE_ID.search(_plain_text(message))
    return found.group(1) if found else None


def _is_auto_reply(message: Message) -> bool:
    if str(message.get("Auto-Submitted") or "no").lower() not in ("", "no"):
        # Bounces are auto-generated too: only a reply that is not a failure report counts.
        return not _FAILURE_WORDS.search(str(message.get("Subject") or ""))
    return bool(_AUTO_REPLY.search(str(message.get("Subject") or "")))
