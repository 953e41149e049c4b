"""Reports at the generic `bounces@` address, mapped by the Message-ID they quote and nothing
signed: anyone can write them, and a Message-ID is seen by whoever sees the message. One that
is about another recipient than the message's (a forged one) changes nothing; one about the
message's own recipient bounces or complains the contact but never counts toward delivery
health; a report through the signed return path still counts, also for a message a
Message-ID-only report marked first. Delivered over SMTP to the listener, seen through the API."""

from __future__ import annotations

from sqlalchemy import select

from mailroom.models import DeliveryReport
from tests.bounces.fixtures import report
from tests.bounces.test_health_reports import _sending, _sent_to, _thresholds
from tests.bounces.test_listener import _contact, _deliver
from tests.sending.helpers import events_of, ok

OTHER = "someone-else@mail.example"


def _generic(return_path: str) -> str:
    return f"bounces@{return_path.rpartition('@')[2]}"


def _without(data: bytes, *headers: str) -> bytes:
    """The report without the lines starting with `headers` (an ARF naming its recipient
    only in the quoted message's To:)."""
    lines = data.split(b"\r\n")
    return b"\r\n".join(ln for ln in lines if not ln.startswith(tuple(h.encode() for h in headers)))


async def _suppressed(client, ws) -> list[tuple[str, str]]:
    """The suppression list as the API shows it: (the contact's address, reason)."""
    page = await ok(await client.get("/api/v1/suppressions/list?limit=100", headers=ws.headers))
    return sorted(
        ((r["contact"] or {}).get("email", ""), r["reason"]) for r in page["suppressions"]
    )


async def _report_kinds(db) -> list[tuple[str, bool]]:
    """(kind, signed) of every stored delivery report."""
    async with db.session() as session:
        rows = await session.execute(select(DeliveryReport.kind, DeliveryReport.signed))
        return sorted((kind, bool(signed)) for kind, signed in rows.all())


def _strict(settings) -> None:
    """Thresholds that one counted bounce or complaint among 25 messages pauses on."""
    _thresholds(settings, minimum=20, pause=0.01)
    settings.health_warn_bounce_rate = 0.01
    settings.health_pause_bounce_rate = 0.02


async def test_a_forged_report_about_another_recipient_changes_nothing(
    client, db, ws, sink, driver, bounce_listener, settings
):
    """The message's Message-ID at its own domain's generic address, but each report (its
    Final-Recipient, Original-Rcpt-To and quoted To, the address a text bounce names) is
    about someone else, or names no recipient at all."""
    _strict(settings)
    sent = await _sent_to(client, db, ws, driver, sink, 25)
    victim = sorted(sent)[0]
    return_path, message_id = sent[victim]
    generic = _generic(return_path)
    forged = [
        report(shape, return_path=generic, recipient=OTHER, message_id=message_id)
        for shape in ("postfix_hard", "gmail_hard", "exchange_hard", "exim_text", "yahoo_arf")
    ]
    anonymous = report("outlook_arf", return_path=generic, recipient="", message_id=message_id)
    forged.append(_without(anonymous, "Removal-Recipient", "X-HmXmrOriginalRecipient"))
    for data in forged:
        await _deliver(bounce_listener, generic, data)

    assert (await _contact(client, ws, victim))["status"] == "subscribed"
    assert await _suppressed(client, ws) == []
    assert await _report_kinds(db) == []
    assert (
        await events_of(db, ws.workspace_id, "email.bounced", "email.complained", "contact.bounced")
        == []
    )
    state = await _sending(client, ws)
    assert (state["paused"], state["bounce_rate"], state["complaint_rate"]) == (False, 0.0, 0.0)


async def test_a_report_naming_the_recipient_bounces_it_but_never_counts_toward_health(
    client, db, ws, sink, driver, bounce_listener, settings
):
    _strict(settings)
    sent = await _sent_to(client, db, ws, driver, sink, 25)
    jane, tom = sorted(sent)[:2]

    return_path, message_id = sent[jane]
    generic = _generic(return_path)
    hard = report("postfix_hard", return_path=generic, recipient=jane, message_id=message_id)
    await _deliver(bounce_listener, generic, hard)
    assert (await _contact(client, ws, jane))["status"] == "bounced"
    assert await _suppressed(client, ws) == [(jane, "bounced")]
    [bounced] = await events_of(db, ws.workspace_id, "email.bounced")
    assert bounced.data["recipient"]["email"] == jane

    # A feedback report naming the recipient only in the quoted message's To: still matches.
    return_path, message_id = sent[tom]
    arf = report("yahoo_arf", return_path=generic, recipient=tom, message_id=message_id)
    await _deliver(bounce_listener, generic, _without(arf, "Original-Rcpt-To"))
    assert (await _contact(client, ws, tom))["status"] == "complained"
    assert await _suppressed(client, ws) == [(jane, "bounced"), (tom, "complained")]

    # 1 bounce and 1 complaint among 25 would pause at these thresholds; neither counts.
    state = await _sending(client, ws)
    assert (state["paused"], state["bounce_rate"], state["complaint_rate"]) == (False, 0.0, 0.0)
    assert state["messages_in_window"] == 25
    assert (
        await events_of(db, ws.workspace_id, "workspace.paused", "workspace.health_warning") == []
    )
    assert await _report_kinds(db) == [("complaint", False), ("hard", False)]


async def test_signed_reports_still_count_also_for_a_message_marked_by_message_id(
    client, db, ws, sink, driver, bounce_listener, settings
):
    _thresholds(settings, minimum=20, pause=0.05)  # 1/25 = 4 % goes on, 2/25 = 8 % pauses
    sent = await _sent_to(client, db, ws, driver, sink, 25)
    first, second = sorted(sent)[:2]

    return_path, message_id = sent[first]
    generic = _generic(return_path)
    unsigned = report("yahoo_arf", return_path=generic, recipient=first, message_id=message_id)
    await _deliver(bounce_listener, generic, unsigned)
    assert (await _contact(client, ws, first))["status"] == "complained"
    assert (await _sending(client, ws))["complaint_rate"] == 0.0

    # The same complaint through the signed return path: now it counts (1/25).
    signed = report("outlook_arf", return_path=return_path, recipient=first, message_id=message_id)
    await _deliver(bounce_listener, return_path, signed)
    state = await _sending(client, ws)
    assert (state["paused"], state["complaint_rate"]) == (False, 0.04)
    assert len(await events_of(db, ws.workspace_id, "email.complained")) == 1

    return_path, message_id = sent[second]
    signed = report("yahoo_arf", return_path=return_path, recipient=second, message_id=message_id)
    await _deliver(bounce_listener, return_path, signed)
    state = await _sending(client, ws)
    assert (state["paused"], state["paused_by"], state["reason"]) == (
        True,
        "health",
        "complaint_rate",
    )
    assert state["complaint_rate"] == 0.08
    assert await _report_kinds(db) == [
        ("complaint", False),
        ("complaint", True),
        ("complaint", True),
    ]


async def test_a_signed_hard_bounce_still_counts(
    client, db, ws, sink, driver, bounce_listener, settings
):
    _strict(settings)
    sent = await _sent_to(client, db, ws, driver, sink, 25)
    jane = sorted(sent)[0]
    return_path, message_id = sent[jane]
    data = report("gmail_hard", return_path=return_path, recipient=jane, message_id=message_id)
    await _deliver(bounce_listener, return_path, data)
    state = await _sending(client, ws)
    assert (state["paused"], state["reason"], state["bounce_rate"]) == (True, "bounce_rate", 0.04)
