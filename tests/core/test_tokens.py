"""Signed tokens: round trip, altered or foreign tokens refused, short enough for their uses."""

from __future__ import annotations

import base64

from hypothesis import given
from hypothesis import strategies as st

from mailroom.core import tokens
from mailroom.core.ids import new_id

SECRET = "test-secret"


def test_round_trip_of_uuids_and_text():
    parts = (new_id(), new_id(), "l3", new_id())
    token = tokens.sign(SECRET, "unsubscribe", *parts)
    assert tokens.read(SECRET, "unsubscribe", token) == list(parts)


def test_three_uuids_make_a_short_url_safe_token():
    token = tokens.sign(SECRET, "unsubscribe", new_id(), new_id(), new_id())
    assert len(token) <= 90
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_another_purpose_or_secret_refuses_the_token():
    token = tokens.sign(SECRET, "unsubscribe", new_id())
    assert tokens.read(SECRET, "click", token) is None
    assert tokens.read("other-secret", "unsubscribe", token) is None


@given(position=st.integers(min_value=0, max_value=60), bit=st.integers(min_value=0, max_value=7))
def test_any_altered_byte_is_refused(position, bit):
    token = tokens.sign(SECRET, "unsubscribe", new_id(), new_id())
    raw = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    raw[position % len(raw)] ^= 1 << bit
    altered = base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
    assert tokens.read(SECRET, "unsubscribe", altered) is None


@given(st.text(max_size=200))
def test_garbage_is_refused_never_raises(garbage):
    assert tokens.read(SECRET, "unsubscribe", garbage) is None
    assert tokens.read_short(SECRET, "bounce", garbage) is None


def test_short_tokens_fit_a_local_part_and_ignore_case():
    row = new_id()
    token = tokens.sign_short(SECRET, "bounce", row)
    assert len(f"bounces+{token}") <= 64
    assert token == token.lower()
    assert tokens.read_short(SECRET, "bounce", token) == row
    assert tokens.read_short(SECRET, "bounce", token.upper()) == row
    assert tokens.read_short(SECRET, "open", token) is None


def test_tokens_in_mail_already_sent_keep_their_exact_form():
    # Made by the implementation before issue 34's faster one: links in old emails must keep
    # working, so the same parts still give these very tokens and read back.
    row = "0192f1e2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"
    click = (
        "AQGS8eI8TX5fipsMHS4_SlsCATcCI2h0dHBzOi8vc2hvcC5leGFtcGxlL2dhcmRlbj9hPTEmYj0yeul36H2gREq"
        "RZJA4Bzii6g"
    )
    url = "https://shop.example/garden?a=1&b=2"
    assert tokens.sign("s3cret", "click", row, "7", url) == click
    assert tokens.read("s3cret", "click", click) == [row, "7", url]
    # An upper-case UUID is text, not packed as 16 bytes (only the canonical form is).
    mixed = tokens.sign("s3cret", "unsubscribe", row, row.upper(), "x" * 300)
    assert mixed.startswith("AQGS8eI8TX5fipsMHS4_SlsCJDAxOTJGMUUyLTNDNEQt")
    assert mixed.endswith("eHp4x453jL1ml2QlKuBRNWE")
    assert (
        tokens.sign_short("s3cret", "bounce", row) == "agjpdyr4jv7f7cu3bqos4p2klpuxozlckywabrzfui"
    )
    assert (
        tokens.read_short("s3cret", "bounce", "agjpdyr4jv7f7cu3bqos4p2klpuxozlckywabrzfui") == row
    )


def test_a_signer_with_shared_first_parts_makes_the_same_tokens():
    row = new_id()
    signer = tokens.Signer("s3cret", "click", row)
    for index, url in enumerate(["https://a.example/", "https://b.example/" + "x" * 300]):
        made = signer.sign(str(index), url)
        assert made == tokens.sign("s3cret", "click", row, str(index), url)
        assert tokens.read("s3cret", "click", made) == [row, str(index), url]
