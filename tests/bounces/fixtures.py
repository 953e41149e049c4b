"""Bounce and complaint reports in the shapes real systems write (Postfix, Exim, Exchange,
Gmail, Yahoo's and Outlook.com's feedback loops), from RFC 3464 / RFC 5965 and public
examples, with the placeholders {RETURN_PATH}, {RECIPIENT} and {MESSAGE_ID} filled per test."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent / "fixtures"
# name -> (what the report says, the enhanced status it names)
EXPECTED = {
    "postfix_hard": ("hard", "5.1.1"),
    "postfix_delayed": ("soft", "4.4.1"),
    "postfix_success": ("delivered", "2.0.0"),
    "exim_text": ("hard", "5.1.1"),
    "exchange_hard": ("hard", "5.1.10"),
    "gmail_hard": ("hard", "5.1.1"),
    "yahoo_arf": ("complaint", ""),
    "outlook_arf": ("complaint", ""),
    "auto_reply": ("ignored", ""),
}


def report(name: str, *, return_path: str, recipient: str, message_id: str) -> bytes:
    text = (HERE / f"{name}.eml").read_text()
    text = text.replace("{RETURN_PATH}", return_path).replace("{RECIPIENT}", recipient)
    return text.replace("{MESSAGE_ID}", message_id).replace("\n", "\r\n").encode()
