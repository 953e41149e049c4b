"""Property tests for the rules every contact write relies on."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mailroom.core.emails import email_hash, is_valid_email, mask_email, normalize_email
from mailroom.core.languages import ISO_639_1, reduce_language

local = st.from_regex(r"[a-zA-Z0-9][a-zA-Z0-9._+-]{0,20}[a-zA-Z0-9]", fullmatch=True).filter(
    lambda s: ".." not in s
)
domain = st.from_regex(r"[a-zA-Z0-9]{1,20}\.(com|org|io|co\.uk)", fullmatch=True)
space = st.sampled_from(["", " ", "  ", "\t", "\n"])


@settings(max_examples=150)
@given(local, domain, space, space)
def test_normalising_trims_lowercases_and_is_idempotent(user, host, left, right):
    raw = f"{left}{user}@{host}{right}"
    normal = normalize_email(raw)
    assert normal == f"{user}@{host}".lower()
    assert normalize_email(normal) == normal
    assert is_valid_email(normal)
    assert email_hash("k", raw) == email_hash("k", normal.upper())
    masked = mask_email(normal)
    assert masked.endswith("@" + host.lower()) and "***" in masked


@settings(max_examples=150)
@given(st.text(max_size=30))
def test_anything_without_at_sign_is_invalid(text):
    if "@" not in text:
        assert not is_valid_email(normalize_email(text))


@settings(max_examples=150)
@given(
    st.sampled_from(sorted(ISO_639_1)),
    st.sampled_from(["", "-", "_"]),
    st.from_regex(r"[A-Za-z]{2}", fullmatch=True),
)
def test_language_reduces_to_primary_code(code, sep, region):
    tag = code.upper() + (sep + region if sep else "")
    assert reduce_language(tag) == code


@settings(max_examples=150)
@given(st.from_regex(r"[a-z]{2,3}", fullmatch=True))
def test_unknown_codes_reduce_to_nothing(code):
    assert (reduce_language(code) is None) == (code not in ISO_639_1)
