"""Reading each real-world report shape: what happened, to whom, the status and the original
Message-ID."""

from __future__ import annotations

import pytest

from mailroom.bounces import reports
from tests.bounces.fixtures import EXPECTED, report

RETURN_PATH = "bounces+abc@shop.example"
RECIPIENT = "jane@mail.example"
MESSAGE_ID = "0193a1b2-0000-7000-8000-000000000001@shop.example"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_shape_is_read(name):
    kind, status = EXPECTED[name]
    data = report(name, return_path=RETURN_PATH, recipient=RECIPIENT, message_id=MESSAGE_ID)
    found = reports.read(data)
    if kind == "ignored":
        assert (found.kind, found.outcomes) == ("ignored", [])
        return
    [outcome] = found.outcomes
    assert (outcome.kind, outcome.status, outcome.recipient) == (kind, status, RECIPIENT)
    assert found.original_message_id == f"<{MESSAGE_ID}>"


def test_not_spam_feedback_and_plain_mail_are_ignored():
    plain = b"From: a@b.example\r\nTo: x@y.example\r\nSubject: hello\r\n\r\nJust saying hi\r\n"
    assert reports.read(plain).outcomes == []
    not_spam = report("yahoo_arf", return_path=RETURN_PATH, recipient=RECIPIENT, message_id="x@y")
    assert (
        reports.read(not_spam.replace(b"Feedback-Type: abuse", b"Feedback-Type: not-spam")).outcomes
        == []
    )


def test_garbage_never_raises():
    for data in (
        b"",
        b"\xff\xfe\x00garbage",
        b"Content-Type: multipart/report; report-type=delivery-status\r\n\r\n--x",
    ):
        assert reports.read(data).outcomes == []
