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
