"""The DMARC aggregate report parser: the reporters' real shapes, namespaces, and the caps
that keep a hostile attachment (bombs, entities, crowded zips) from costing much."""

from __future__ import annotations

import gzip
import logging
import time
import tracemalloc
from datetime import UTC, datetime

import pytest

from mailroom.domains import dmarc_parse
from mailroom.domains.dmarc_parse import (
    MAX_XML_BYTES,
    AggregateReport,
    DmarcRow,
    NotAReport,
    parse_xml,
    reports_in_mail,
)
from tests.domains import dmarc_samples as samples

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<feedback><report_metadata><report_id>&lol9;</report_id></report_metadata></feedback>"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE feedback [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<feedback><report_metadata><org_name>&secret;</org_name></report_metadata></feedback>"""


def test_google_mail_with_a_zip_gives_one_report() -> None:
    [report] = reports_in_mail(samples.google_mail())

    assert report == AggregateReport(
        reporter="google.com",
        reporter_email="noreply-dmarc-support@google.com",
        report_id="949348866075514174",
        begin=datetime(2019, 2, 12, tzinfo=UTC),
        end=datetime(2019, 2, 12, 23, 59, 59, tzinfo=UTC),
        domain="example.com",
        policy="none",
        rows=[
            DmarcRow("209.85.220.41", 12, "none", True, True, "example.com"),
            DmarcRow("2a00:1450:4864:20::52f", 3, "none", True, False, "example.com"),
            DmarcRow("198.51.100.7", 1, "quarantine", False, False, "example.com"),
        ],
    )
    assert report.begin.tzinfo is not None


def test_microsoft_mail_with_a_gzip_gives_one_report() -> None:
    [report] = reports_in_mail(samples.microsoft_mail())

    assert report.reporter == "Outlook.com"
    assert report.reporter_email == "dmarcreport@microsoft.com"
    assert report.report_id == "cfeafefe4129445e8c81018bd9177197"
    assert report.begin == datetime.fromtimestamp(samples.MICROSOFT_BEGIN, UTC)
    assert report.end == datetime.fromtimestamp(samples.MICROSOFT_END, UTC)
    assert report.domain == "example.com"
    assert report.policy == "quarantine"
    assert report.rows == [DmarcRow("40.107.22.58", 5, "none", False, True, "example.com")]


def test_plain_xml_attachment() -> None:
    data = samples.mail([("report.xml", "text/xml", samples.google_xml(report_id="plain-1"))])

    [report] = reports_in_mail(data)

    assert report.report_id == "plain-1"
    assert len(report.rows) == 3


def test_octet_stream_recognised_by_name_and_by_magic() -> None:
    xml = samples.google_xml(report_id="octets")
    by_name = samples.mail([("r.xml.gz", "application/octet-stream", samples.gzip_bytes(xml))])
    # A zip declared as something else entirely is still found by its magic bytes.
    by_magic = samples.mail([("x.bin", "application/pdf", samples.zip_bytes({"r.xml": xml}))])

    assert [r.report_id for r in reports_in_mail(by_name)] == ["octets"]
    assert [r.report_id for r in reports_in_mail(by_magic)] == ["octets"]


@pytest.mark.parametrize(
    ("content_type", "payload", "filename"),
    [
        ("application/gzip", samples.gzip_bytes(samples.google_xml()), "r.xml.gz"),
        ("application/zip", samples.zip_bytes({"r.xml": samples.google_xml()}), "r.zip"),
        ("text/xml", samples.google_xml(), None),
    ],
)
def test_single_part_mail_body_is_the_report(
    content_type: str, payload: bytes, filename: str | None
) -> None:
    data = samples.single_part_mail(content_type, payload, filename)

    [report] = reports_in_mail(data)

    assert report.report_id == "949348866075514174"


def test_dmarcbis_namespace_and_whitespace() -> None:
    report = parse_xml(samples.dmarcbis_xml())

    assert report.reporter == "Example Receiver"
    assert report.report_id == "bis-2024-0001"
    assert report.begin == datetime(2024, 3, 30, tzinfo=UTC)
    assert report.domain == "example.com"
    assert report.policy == "reject"
    assert report.rows == [DmarcRow("192.0.2.10", 7, "reject", False, True, "example.com")]


def test_several_attachments_give_several_reports() -> None:
    data = samples.mail(
        [
            ("a.zip", "application/zip", samples.zip_bytes({"a.xml": samples.google_xml()})),
            ("b.xml.gz", "application/x-gzip", samples.gzip_bytes(samples.microsoft_xml())),
            ("c.xml", "application/xml", samples.google_xml(report_id="third")),
            ("notes.txt", "text/plain", b"not a report"),
        ]
    )

    reports = reports_in_mail(data)

    assert [r.report_id for r in reports] == [
        "949348866075514174",
        "cfeafefe4129445e8c81018bd9177197",
        "third",
    ]


def test_gzip_bomb_is_refused_without_inflating_it(caplog: pytest.LogCaptureFixture) -> None:
    bomb = gzip.compress(b"\0" * (30 * 1024 * 1024), compresslevel=9)
    # The budget is the mail's: a report before the bomb is kept, the bomb ends the mail.
    data = samples.mail(
        [
            ("good.xml", "text/xml", samples.google_xml(report_id="survivor")),
            ("bomb.xml.gz", "application/gzip", bomb),
            ("late.xml", "text/xml", samples.google_xml(report_id="after the bomb")),
        ]
    )

    tracemalloc.start()
    started = time.monotonic()
    try:
        with caplog.at_level(logging.WARNING, logger="mailroom.dmarc"):
            reports = reports_in_mail(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert [r.report_id for r in reports] == ["survivor"]
    assert "larger than 20 MiB once decompressed" in caplog.text
    # Inflating stops at the cap (plus a chunk, ~23 MiB): the 30 MiB are never held at once.
    assert MAX_XML_BYTES < 28 * 1024 * 1024
    assert peak < 28 * 1024 * 1024
    assert time.monotonic() - started < 10


def test_zip_member_bomb_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dmarc_parse, "MAX_XML_BYTES", 1024 * 1024)
    archive = samples.zip_bytes({"bomb.xml": b"<feedback>" + b" " * (8 * 1024 * 1024)})

    tracemalloc.start()
    try:
        reports = reports_in_mail(samples.mail([("r.zip", "application/zip", archive)]))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert reports == []
    assert peak < 5 * 1024 * 1024


def test_zip_with_too_many_members_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    members = {f"r{n}.xml": samples.google_xml(report_id=str(n)) for n in range(6)}
    data = samples.mail([("r.zip", "application/zip", samples.zip_bytes(members))])

    with caplog.at_level(logging.WARNING, logger="mailroom.dmarc"):
        assert reports_in_mail(data) == []
    assert "more than 5 members" in caplog.text


def test_zip_reads_only_xml_members() -> None:
    members = {
        "readme.txt": b"hello",
        "a.xml": samples.google_xml(report_id="a"),
        "b.XML": samples.google_xml(report_id="b"),
    }
    data = samples.mail([("r.zip", "application/zip", samples.zip_bytes(members))])

    assert [r.report_id for r in reports_in_mail(data)] == ["a", "b"]


@pytest.mark.parametrize("xml", [BILLION_LAUGHS, EXTERNAL_ENTITY])
def test_dtd_and_entities_are_refused(xml: bytes) -> None:
    with pytest.raises(NotAReport, match="DTD"):
        parse_xml(xml)
    assert reports_in_mail(samples.mail([("r.xml", "text/xml", xml)])) == []


def test_broken_attachment_skipped_good_one_kept(caplog: pytest.LogCaptureFixture) -> None:
    data = samples.mail(
        [
            ("broken.xml", "text/xml", b"<?xml version='1.0'?><feedback><report_metadata>"),
            ("corrupt.zip", "application/zip", b"PK\x03\x04 not really a zip"),
            ("truncated.xml.gz", "application/gzip", samples.gzip_bytes(b"<feedback/>")[:12]),
            ("good.xml.gz", "application/gzip", samples.gzip_bytes(samples.google_xml())),
        ]
    )

    with caplog.at_level(logging.WARNING, logger="mailroom.dmarc"):
        reports = reports_in_mail(data)

    assert [r.report_id for r in reports] == ["949348866075514174"]
    assert "broken.xml" in caplog.text
    assert "corrupt.zip" in caplog.text
    assert "truncated.xml.gz" in caplog.text


def test_rows_with_bad_ip_or_count_are_skipped() -> None:
    rows: list[samples.Row] = [
        ("not-an-ip", "4", "none", "pass", "pass"),
        ("999.1.1.1", "4", "none", "pass", "pass"),
        ("fe80::1%eth0", "4", "none", "pass", "pass"),
        ("192.0.2.1", "-1", "none", "pass", "pass"),
        ("192.0.2.2", "many", "none", "pass", "pass"),
        ("192.0.2.3", "99999999999", "none", "pass", "pass"),
        ("2001:DB8:0:0::1", "2", "none", "pass", "pass"),
        ("192.0.2.4", "0", "reject", "fail", "fail"),
    ]

    report = parse_xml(samples.google_xml(rows=rows))

    assert report.rows == [
        DmarcRow("2001:db8::1", 2, "none", True, True, "example.com"),
        DmarcRow("192.0.2.4", 0, "reject", False, False, "example.com"),
    ]


def test_domain_is_normalised_to_idna() -> None:
    report = parse_xml(samples.google_xml(domain="Bücher.Example."))

    assert report.domain == "xn--bcher-kva.example"


@pytest.mark.parametrize(
    ("xml", "why"),
    [
        (b"not xml at all", "well-formed"),
        (b"<html><body/></html>", "<feedback>"),
        (samples.google_xml(report_id=""), "report_id"),
        (samples.google_xml(domain=""), "domain"),
        (samples.google_xml().replace(b"<begin>1549929600</begin>", b""), "begin"),
        (samples.google_xml().replace(b"<end>1550015999</end>", b"<end>soon</end>"), "end"),
        (
            b"<feedback><report_metadata><report_id>x</report_id></report_metadata></feedback>",
            "date_range",
        ),
    ],
)
def test_not_a_report(xml: bytes, why: str) -> None:
    with pytest.raises(NotAReport, match=why):
        parse_xml(xml)


def test_too_many_records_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dmarc_parse, "MAX_ROWS", 2)
    rows = samples.GOOGLE_ROWS

    with pytest.raises(NotAReport, match="more than 2 records"):
        parse_xml(samples.google_xml(rows=rows))
    assert len(parse_xml(samples.google_xml(rows=rows[:2])).rows) == 2


def test_ordinary_mail_has_no_report() -> None:
    plain = samples.mail([], body="Hello, see you tomorrow.")
    with_pdf = samples.mail([("invoice.pdf", "application/pdf", b"%PDF-1.4 ...")])
    html = samples.single_part_mail("text/html", b"<html><body>Hi</body></html>")

    assert reports_in_mail(plain) == []
    assert reports_in_mail(with_pdf) == []
    assert reports_in_mail(html) == []
    assert reports_in_mail(b"") == []


def test_a_flood_of_tags_is_refused_before_any_tree_is_built() -> None:
    flood = b"<feedback>" + b"<a/>" * (dmarc_parse.MAX_TAGS + 1) + b"</feedback>"
    started = time.monotonic()
    with pytest.raises(dmarc_parse.NotAReport, match="more tags than"):
        dmarc_parse.parse_xml(flood)
    assert time.monotonic() - started < 2


def test_an_unknown_encoding_skips_that_report_only(caplog: pytest.LogCaptureFixture) -> None:
    bogus = b'<?xml version="1.0" encoding="bogus"?><feedback></feedback>'
    data = samples.mail(
        [
            ("bad.xml", "text/xml", bogus),
            ("good.xml", "text/xml", samples.google_xml(report_id="kept")),
        ]
    )
    with caplog.at_level(logging.WARNING, logger="mailroom.dmarc"):
        reports = reports_in_mail(data)
    assert [r.report_id for r in reports] == ["kept"]
    assert "bad.xml skipped" in caplog.text


def test_at_most_ten_reports_a_mail() -> None:
    parts = [(f"r{i}.xml", "text/xml", samples.google_xml(report_id=f"r{i}")) for i in range(12)]
    reports = reports_in_mail(samples.mail(parts))
    assert [r.report_id for r in reports] == [f"r{i}" for i in range(10)]
