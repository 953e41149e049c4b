"""Messages built by hand parse back, with a standard parser, to exactly what went in."""

from __future__ import annotations

import binascii
import email
from datetime import UTC, datetime
from email import policy

from hypothesis import given, settings
from hypothesis import strategies as st

from mailroom.sending import mime


def _message(**overrides):
    values = {
        "from_email": "news@acme.io",
        "from_name": "Acme News",
        "to": "jane@example.com",
        "subject": "Hello Jane",
        "html": "<p>Hi <b>Jane</b></p>",
        "text": "Hi Jane",
        "message_id": "0195f3b2-0000-7000-8000-000000000001@acme.io",
        "date": datetime(2026, 11, 23, 12, 0, tzinfo=UTC),
        "reply_to": "help@acme.io",
        "list_unsubscribe": ("https://mail.acme.io/u/tok", "mailto:unsubscribe+tok@acme.io"),
    }
    return mime.Message(**{**values, **overrides})


def _parse(raw: bytes):
    return email.message_from_bytes(raw, policy=policy.default)


def test_headers_and_parts_round_trip():
    raw = mime.build(_message())
    assert b"\n" not in raw.replace(b"\r\n", b"")  # CRLF only
    parsed = _parse(raw)
    assert parsed["From"] == "Acme News <news@acme.io>"
    assert parsed["To"] == "jane@example.com"
    assert parsed["Subject"] == "Hello Jane"
    assert parsed["Message-ID"] == "<0195f3b2-0000-7000-8000-000000000001@acme.io>"
    assert parsed["Reply-To"] == "help@acme.io"
    assert parsed["List-Unsubscribe"] == (
        "<https://mail.acme.io/u/tok>, <mailto:unsubscribe+tok@acme.io>"
    )
    assert parsed["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert parsed.get_content_type() == "multipart/alternative"
    text, html = parsed.get_payload()
    assert text.get_content_type() == "text/plain"
    assert text.get_content().rstrip("\n") == "Hi Jane"
    assert html.get_content_type() == "text/html"
    assert html.get_content().rstrip("\n") == "<p>Hi <b>Jane</b></p>"


def test_non_ascii_subject_and_name_are_encoded_words():
    raw = mime.build(_message(subject="Grüße, Zoë — 20 % off 🎉" * 4, from_name="Café Ümlaut"))
    head = raw.split(b"\r\n\r\n", 1)[0]
    assert head.isascii()
    assert all(len(line) <= 78 for line in head.split(b"\r\n"))
    parsed = _parse(raw)
    assert parsed["Subject"] == "Grüße, Zoë — 20 % off 🎉" * 4
    assert parsed["From"].addresses[0].display_name == "Café Ümlaut"


def test_a_line_break_in_a_header_value_cannot_add_a_header():
    parsed = _parse(mime.build(_message(subject="Hi\r\nBcc: victim@example.com")))
    assert parsed["Bcc"] is None
    assert parsed["Subject"] == "Hi Bcc: victim@example.com"


@settings(max_examples=60, deadline=None)  # a loaded machine is slow, not wrong
@given(
    html=st.text(min_size=0, max_size=400),
    text=st.text(min_size=0, max_size=400),
    subject=st.text(min_size=1, max_size=80).filter(lambda s: s.strip() == s and s.isprintable()),
)
def test_any_content_round_trips(html, text, subject):
    parsed = _parse(mime.build(_message(html=html, text=text, subject=subject)))
    plain, rich = parsed.get_payload()

    def normal(value: str) -> str:
        return value.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")

    assert normal(plain.get_content()) == normal(text)
    assert normal(rich.get_content()) == normal(html)
    assert parsed["Subject"] == " ".join(subject.splitlines())


def test_plain_ascii_parts_go_unencoded_and_others_quoted_printable():
    raw = mime.build(_message(html="<p>plain</p>", text="Grüße"))
    assert b"Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: 7bit" in raw
    assert (
        b"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable"
        in raw
    )
    long_line = "x" * 1200
    raw = mime.build(_message(html=long_line))
    assert all(len(line) <= 998 for line in raw.split(b"\r\n"))
    assert _parse(raw).get_payload()[1].get_content().rstrip("\n") == long_line


def _head_lines(raw: bytes) -> list[str]:
    return raw.split(b"\r\n\r\n", 1)[0].decode().split("\r\n")


def _foldable(line: str) -> bool:
    """A space after the value's first word: somewhere the line could have been folded."""
    value = line.lstrip(" \t").split(": ", 1)[-1].strip(" ")
    return " " in value


def test_the_recipients_name_is_quoted_or_encoded():
    def to_of(name: str) -> str:
        raw = mime.build(_message(to_name=name))
        return raw.split(b"\r\nTo: ", 1)[1].split(b"\r\nSubject:", 1)[0].decode()

    assert to_of("Jane Doe") == '"Jane Doe" <jane@example.com>'
    assert to_of('Jane "JD" O\'Neil, Jr.') == '"Jane \\"JD\\" O\'Neil, Jr." <jane@example.com>'
    assert to_of("  ") == "jane@example.com"
    assert to_of("Zoë") == "=?utf-8?b?Wm/Dqw==?= <jane@example.com>"
    assert to_of("Jane\r\nBcc: x@evil.example\x00") == (
        '"Jane Bcc: x@evil.example" <jane@example.com>'
    )
    parsed = _parse(mime.build(_message(to_name='Zoë "Z" Ünal')))
    assert parsed["To"].addresses[0].display_name == 'Zoë "Z" Ünal'
    assert parsed["To"].addresses[0].addr_spec == "jane@example.com"


def test_long_headers_are_folded_where_they_can_be():
    long_url = "https://mail.acme.io/u/" + "t" * 180
    raw = mime.build(
        _message(
            subject="A subject that goes on and on about the many things on sale this week",
            to_name="Maximilian Alexander Fitzgerald-Worthington the Third of Many",
            list_unsubscribe=(long_url, "mailto:unsubscribe+tok@acme.io"),
        )
    )
    lines = _head_lines(raw)
    assert all(len(line) <= 998 for line in lines)
    assert [line for line in lines if len(line) > 78] == [f"List-Unsubscribe: <{long_url}>,"]
    assert "List-Unsubscribe: <" + long_url + ">,\r\n <mailto:unsubscribe+tok@acme.io>" in (
        raw.decode()
    )
    assert (
        'To: "Maximilian Alexander Fitzgerald-Worthington the Third of Many"\r\n'
        " <jane@example.com>\r\n"
    ) in raw.decode()
    parsed = _parse(raw)
    assert parsed["Subject"] == (
        "A subject that goes on and on about the many things on sale this week"
    )
    assert parsed["List-Unsubscribe"] == f"<{long_url}>, <mailto:unsubscribe+tok@acme.io>"
    assert parsed.get_param("boundary") == "=_0195f3b2-0000-7000-8000-000000000001"


def test_a_word_too_long_for_any_line_is_encoded_so_it_folds():
    subject = "x" * 1200
    raw = mime.build(_message(subject=subject))
    assert all(len(line) <= 78 for line in _head_lines(raw))
    assert _parse(raw)["Subject"] == subject


@settings(max_examples=80, deadline=None)
@given(
    subject=st.text(min_size=1, max_size=300).filter(lambda s: s.strip() == s and s.isprintable()),
    name=st.text(max_size=120),
)
def test_any_subject_and_name_fold_and_parse_back(subject, name):
    raw = mime.build(_message(subject=subject, to_name=name))
    for line in _head_lines(raw):
        assert len(line.encode()) <= 998
        assert len(line) <= 78 or not _foldable(line), line
    parsed = _parse(raw)
    assert parsed["Subject"] == " ".join(subject.splitlines())
    assert parsed["To"].addresses[0].addr_spec == "jane@example.com"


def test_fold_unfolds_to_the_same_line():
    line = "Subject: " + " ".join(["word", "two  spaces", "x" * 90, "end"] * 5)
    folded = mime.fold(line)
    assert folded.replace("\r\n", "") == line
    assert all(part.strip() for part in folded.split("\r\n"))  # no blank continuation line
    assert mime.fold("Subject: " + "y" * 100) == "Subject: " + "y" * 100  # nowhere to fold


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=" \t=.<>aZ3D\n", max_size=600))
def test_quoted_printable_fast_path_decodes_back_and_keeps_lines_short(text):
    # Printable ASCII with long lines (minified HTML) takes the fast path: `=` escapes never
    # cut by a soft break, no line over 76, no trailing space or tab, the same text back.
    data = text.encode()
    encoded = mime.quoted_printable(data)
    lines = encoded.split(b"\r\n")
    assert all(len(line) <= 76 for line in lines)
    assert not any(line.endswith((b" ", b"\t")) for line in lines)
    assert binascii.a2b_qp(encoded.replace(b"\r\n", b"\n")) == data


def test_a_minified_html_line_is_soft_broken_and_8bit_text_still_encoded():
    html = '<p style="color:red">' + "word " * 4000 + "</p>"
    encoded = mime.quoted_printable(html.encode())
    assert encoded.count(b"=\r\n") == len(encoded.split(b"\r\n")) - 1
    assert b"style=3D" in encoded
    assert mime.quoted_printable("caf\u00e9\n".encode()) == b"caf=C3=A9\r\n"
