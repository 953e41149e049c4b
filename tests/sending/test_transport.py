"""The SMTP pool against a real SMTP conversation (aiosmtpd on 127.0.0.1), and the outbox."""

from __future__ import annotations

import pytest

from mailroom.sending.transport import NO_ANSWER, Delivery, Outbox, SmtpPool, parse_smtp_url
from tests.sending.sink import Sink


def _delivery(i: int, to: str) -> Delivery:
    body = f"Subject: m{i}\r\nMessage-ID: <m{i}@t>\r\n\r\nbody {i}\r\n.line with a dot\r\n"
    return Delivery(f"k{i}", f"bounces+{i}@acme.io", to, body.encode())


async def test_a_batch_is_spread_over_persistent_connections():
    async with Sink() as sink:
        pool = SmtpPool(sink.url, size=4)
        results = await pool.send([_delivery(i, f"user{i}@example.com") for i in range(40)])
        await pool.close()
    assert [r.code for r in results] == [250] * 40
    assert [r.key for r in results] == [f"k{i}" for i in range(40)]
    got = {r.recipients[0]: r for r in sink.received}
    assert len(got) == 40
    assert got["user7@example.com"].sender == "bounces+7@acme.io"
    # Dot-stuffing is undone by the server: the body arrives as sent.
    assert b"\r\n.line with a dot\r\n" in got["user7@example.com"].data


async def test_refusals_keep_the_relays_code_and_the_connection_goes_on():
    async with Sink() as sink:
        pool = SmtpPool(sink.url, size=1)
        results = await pool.send(
            [
                _delivery(1, "bounce@example.com"),
                _delivery(2, "defer@example.com"),
                _delivery(3, "ok@example.com"),
            ]
        )
        await pool.close()
    codes = {r.key: r.code for r in results}
    assert codes == {"k1": 550, "k2": 451, "k3": 250}
    assert results[0].bounced and not results[0].failed
    assert not results[1].bounced and not results[1].failed and results[2].sent
    assert "No such user" in results[0].text
    assert [r.recipients for r in sink.received] == [["ok@example.com"]]


async def test_a_refused_sender_or_message_fails_the_message_not_the_address():
    sink = Sink()

    async def refuse_sender(server, session, envelope, address, options):
        if address.startswith("blocked"):
            return "550 5.7.1 Sender blocked"
        envelope.mail_from = address
        return "250 OK"

    async def refuse_content(server, session, envelope):
        return "554 5.6.0 Message rejected as spam"

    # aiosmtpd looks its hooks up when a session starts: set them first.
    sink.handler.handle_MAIL = refuse_sender  # type: ignore[attr-defined]
    sink.handler.handle_DATA = refuse_content  # type: ignore[method-assign]
    async with sink:
        pool = SmtpPool(sink.url, size=1)
        blocked = Delivery("k1", "blocked@acme.io", "a@example.com", b"Subject: x\r\n\r\nx\r\n")
        [sender_refused, content_refused] = await pool.send(
            [blocked, _delivery(2, "b@example.com")]
        )
        await pool.close()
    assert (sender_refused.code, sender_refused.failed, sender_refused.bounced) == (
        550,
        True,
        False,
    )
    assert (content_refused.code, content_refused.failed, content_refused.bounced) == (
        554,
        True,
        False,
    )


async def test_a_relay_that_goes_away_gives_no_answer_and_the_pool_reconnects():
    sink = Sink()
    await sink.start()
    pool = SmtpPool(sink.url, size=1, timeout=5)
    assert (await pool.send([_delivery(1, "a@example.com")]))[0].code == 250
    await sink.stop()
    down = await pool.send([_delivery(2, "b@example.com")])
    assert down[0].code == NO_ANSWER and not down[0].sent and not down[0].bounced
    await sink.start()
    again = await pool.send([_delivery(3, "c@example.com")])
    await pool.close()
    await sink.stop()
    assert again[0].code == 250


async def test_outbox_writes_each_message_with_its_return_path(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    results = await outbox.send([_delivery(1, "a@example.com"), _delivery(2, "b@example.com")])
    assert [r.code for r in results] == [250, 250]
    written = (tmp_path / "outbox" / "k1.eml").read_bytes()
    assert written.startswith(b"Return-Path: <bounces+1@acme.io>\r\nSubject: m1\r\n")
    assert sorted(p.name for p in (tmp_path / "outbox").iterdir()) == ["k1.eml", "k2.eml"]


@pytest.mark.parametrize(
    ("url", "host", "port", "user", "implicit", "starttls", "verify"),
    [
        ("smtp://relay.example:587", "relay.example", 587, None, False, None, True),
        ("smtp://u%40x:p%3Aw@relay:25?starttls=require", "relay", 25, "u@x", False, True, True),
        ("smtps://relay?verify=false", "relay", 465, None, True, False, False),
        ("smtp://relay?starttls=never", "relay", 25, None, False, False, True),
    ],
)
def test_smtp_url_settings(url, host, port, user, implicit, starttls, verify):
    target = parse_smtp_url(url)
    assert (target.host, target.port, target.username) == (host, port, user)
    assert (target.implicit_tls, target.starttls, target.verify) == (implicit, starttls, verify)


def test_a_bad_smtp_url_is_refused():
    with pytest.raises(ValueError, match="smtp://user:pass@host:port"):
        parse_smtp_url("http://relay")


def test_the_wire_form_is_dot_stuffed_and_leaves_odd_line_ends_to_aiosmtplib():
    from mailroom.sending.transport import _wire_form

    assert _wire_form(b".first\r\nmid\r\n.dot\r\n..two\r\nend") == (
        b"..first\r\nmid\r\n..dot\r\n...two\r\nend\r\n.\r\n"
    )
    assert _wire_form(b"a\r\nbare\nlf\r\n") is None
    assert _wire_form(b"a\r\nbare\rcr\r\n") is None


async def test_a_message_with_bare_line_feeds_still_arrives_whole():
    async with Sink() as sink:
        pool = SmtpPool(sink.url, size=1)
        [result] = await pool.send(
            [Delivery("k1", "b@acme.io", "a@example.com", b"Subject: x\n\n.hi\nthere\n")]
        )
        await pool.close()
    assert result.sent
    assert sink.received[0].data.endswith(b".hi\r\nthere\r\n")


@pytest.mark.parametrize(
    ("public_url", "helo", "expected"),
    [
        ("https://mail.shop.example/", "", "mail.shop.example"),
        ("http://127.0.0.1:8000", "", "[127.0.0.1]"),
        ("http://[::1]:8000", "", "[IPv6:::1]"),
        ("https://bücher.example", "", "xn--bcher-kva.example"),
        ("http://127.0.0.1:8000", "mx1.shop.example.", "mx1.shop.example"),
        ("http://127.0.0.1:8000", "[192.0.2.1]", "[192.0.2.1]"),
    ],
)
def test_the_ehlo_name_is_the_setting_or_the_public_host(public_url, helo, expected):
    from mailroom.settings import Settings

    assert Settings(public_url=public_url, smtp_helo=helo).resolved_smtp_helo == expected


def test_a_bad_ehlo_name_is_refused():
    from pydantic import ValidationError

    from mailroom.settings import Settings

    with pytest.raises(ValidationError, match="not a hostname or an address literal"):
        Settings(smtp_helo="my relay")
