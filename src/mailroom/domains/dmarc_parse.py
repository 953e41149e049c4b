"""Reading DMARC aggregate reports (RFC 7489 appendix C, and DMARCbis, which differs only by
its namespace) out of the mail that carries them. Pure: bytes in, dataclasses out.

Reporters attach the XML plain, gzipped (`.xml.gz`, Microsoft) or zipped (`.zip`, Google).
Everything here is untrusted input, so the XML parser refuses DTDs and entities (no billion
laughs, no external entities), decompression stops at MAX_XML_BYTES whatever the archive
claims, and a report may hold at most MAX_ROWS records. A part that looks like a report but
does not parse is logged and skipped: one bad attachment does not lose the others.
"""

from __future__ import annotations

import email
import gzip
import io
import ipaddress
import logging
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import Message
from xml.etree.ElementTree import Element

from defusedxml import DefusedXmlException  # type: ignore[import-untyped]
from defusedxml.ElementTree import ParseError, fromstring  # type: ignore[import-untyped]

log = logging.getLogger("mailroom.dmarc")

MAX_XML_BYTES = 20 * 1024 * 1024  # all of a mail's reports together, once decompressed
MAX_ROWS = 20_000
MAX_ZIP_MEMBERS = 5
MAX_REPORTS_PER_MAIL = 10
# Tags a report may hold before it is parsed (counted in C, before any tree is built): a real
# record has about 25 elements; a flood of empty ones would cost seconds of CPU and GBs.
MAX_TAGS = 2 * 30 * MAX_ROWS + 1000
MAX_COUNT = 2**31 - 1  # the count column is a 32-bit integer
MAX_IP_CHARS = 45  # the source_ip column; longer only with a scope id, meaningless here
_READ_CHUNK = 1024 * 1024

_ZIP_TYPES = {"application/zip", "application/x-zip-compressed"}
_GZIP_TYPES = {"application/gzip", "application/x-gzip"}
_XML_TYPES = {"application/xml", "text/xml"}


class NotAReport(ValueError):
    """The bytes are not a (usable) DMARC aggregate report; the message says why."""


@dataclass(frozen=True)
class DmarcRow:
    source_ip: str
    count: int
    disposition: str
    dkim_aligned_pass: bool
    spf_aligned_pass: bool
    header_from: str


@dataclass(frozen=True)
class AggregateReport:
    reporter: str
    reporter_email: str
    report_id: str
    begin: datetime
    end: datetime
    domain: str
    policy: str
    rows: list[DmarcRow]


# ---------------------------------------------------------------------------- the XML


def _local(tag: object) -> str:
    # Namespaced tags read "{urn:...}name"; comments and processing instructions are not str.
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _child(element: Element | None, name: str) -> Element | None:
    if element is None:
        return None
    return next((child for child in element if _local(child.tag) == name), None)


def _text(element: Element | None, *path: str) -> str:
    for name in path:
        element = _child(element, name)
    return (element.text or "").strip() if element is not None else ""


def _timestamp(value: str, name: str) -> datetime:
    try:
        seconds = int(value)
        if seconds < 0:
            raise ValueError
        return datetime.fromtimestamp(seconds, UTC)
    except (ValueError, OverflowError, OSError):
        raise NotAReport(f"date_range/{name} missing or not unix seconds") from None


def _domain(value: str) -> str:
    name = value.strip().lower()
    name = name[:-1] if name.endswith(".") else name
    if not name:
        raise NotAReport("policy_published/domain missing")
    if not name.isascii():
        try:
            name = name.encode("idna").decode()  # as domains.service.clean_domain stores it
        except UnicodeError:
            raise NotAReport("policy_published/domain is not a hostname") from None
    if len(name) > 253:
        raise NotAReport("policy_published/domain too long")
    return name


def _row(record: Element) -> DmarcRow | None:
    """A record's row, or None when its IP or count is unusable."""
    row = _child(record, "row")
    try:
        source_ip = str(ipaddress.ip_address(_text(row, "source_ip")))
        count = int(_text(row, "count"))
    except ValueError:
        return None
    if not 0 <= count <= MAX_COUNT or len(source_ip) > MAX_IP_CHARS or "%" in source_ip:
        return None
    evaluated = _child(row, "policy_evaluated")
    return DmarcRow(
        source_ip=source_ip,
        count=count,
        disposition=_text(evaluated, "disposition").lower()[:16],
        dkim_aligned_pass=_text(evaluated, "dkim").lower() == "pass",
        spf_aligned_pass=_text(evaluated, "spf").lower() == "pass",
        header_from=_text(record, "identifiers", "header_from").lower()[:255],
    )


def parse_xml(data: bytes) -> AggregateReport:
    """One aggregate report from its XML. NotAReport when it is not one."""
    if len(data) > MAX_XML_BYTES:
        raise NotAReport(f"report larger than {MAX_XML_BYTES >> 20} MiB")
    if data.count(b"<") > MAX_TAGS:
        raise NotAReport(f"more tags than {MAX_ROWS} records would hold")
    try:
        root: Element = fromstring(data, forbid_dtd=True)
    except DefusedXmlException:
        raise NotAReport("XML with a DTD or entities refused") from None
    except ParseError as problem:
        raise NotAReport(f"not well-formed XML ({problem})") from None
    if _local(root.tag) != "feedback":
        raise NotAReport("root element is not <feedback>")
    metadata = _child(root, "report_metadata")
    report_id = _text(metadata, "report_id")[:200]
    if not report_id:
        raise NotAReport("report_metadata/report_id missing")
    date_range = _child(metadata, "date_range")
    if date_range is None:
        raise NotAReport("report_metadata/date_range missing")
    published = _child(root, "policy_published")
    records = [child for child in root if _local(child.tag) == "record"]
    if len(records) > MAX_ROWS:
        raise NotAReport(f"more than {MAX_ROWS} records")
    return AggregateReport(
        reporter=_text(metadata, "org_name")[:200],
        reporter_email=_text(metadata, "email")[:320],
        report_id=report_id,
        begin=_timestamp(_text(date_range, "begin"), "begin"),
        end=_timestamp(_text(date_range, "end"), "end"),
        domain=_domain(_text(published, "domain")),
        policy=_text(published, "p").lower()[:32],
        rows=[row for row in map(_row, records) if row is not None],
    )


# ---------------------------------------------------------------------------- the mail


class _Budget:
    """What one mail may still decompress: MAX_XML_BYTES for all its reports together."""

    def __init__(self) -> None:
        self.left = MAX_XML_BYTES


def _read_capped(read: Callable[[int], bytes], budget: _Budget) -> bytes:
    """All of a decompressing stream, in chunks, refusing past the mail's budget: an archive's
    declared sizes are not trusted, and a bomb is never inflated beyond the cap."""
    chunks: list[bytes] = []
    while chunk := read(_READ_CHUNK):
        budget.left -= len(chunk)
        if budget.left < 0:
            raise NotAReport(f"reports larger than {MAX_XML_BYTES >> 20} MiB once decompressed")
        chunks.append(chunk)
    return b"".join(chunks)


def _gunzip(data: bytes, budget: _Budget) -> bytes:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            return _read_capped(stream.read, budget)
    except (OSError, EOFError, zlib.error) as problem:
        raise NotAReport(f"bad gzip ({problem})") from None


def _zip_members(data: bytes, budget: _Budget) -> Iterator[tuple[str, bytes]]:
    """(name, XML) of each `.xml` member; NotAReport for a bad or crowded archive."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
            if len(members) > MAX_ZIP_MEMBERS:
                raise NotAReport(f"zip with more than {MAX_ZIP_MEMBERS} members")
            for member in members:
                if not member.is_dir() and member.filename.lower().endswith(".xml"):
                    with archive.open(member) as stream:
                        yield member.filename, _read_capped(stream.read, budget)
    except NotAReport:
        raise
    except Exception as problem:  # BadZipFile, zlib/lzma/bz2 errors, encrypted, unknown codec
        # RuntimeError: encrypted; NotImplementedError (a RuntimeError): unknown compression.
        raise NotAReport(f"bad zip ({problem})") from None


def _kind(part: Message, payload: bytes) -> str | None:
    """zip, gzip or xml when the part looks like a report (magic bytes, else its declared
    type), None when it does not."""
    if payload.startswith(b"PK\x03\x04"):
        return "zip"
    if payload.startswith(b"\x1f\x8b"):
        return "gzip"
    head = payload[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith((b"<?xml", b"<feedback")):
        return "xml"
    content_type = part.get_content_type()
    name = (part.get_filename() or "").strip().lower()
    octets = content_type == "application/octet-stream"
    if content_type in _ZIP_TYPES or (octets and name.endswith(".zip")):
        return "zip"
    if content_type in _GZIP_TYPES or (octets and name.endswith(".gz")):
        return "gzip"
    if content_type in _XML_TYPES or (octets and name.endswith(".xml")):
        return "xml"
    return None


def _parsed(xml: bytes) -> AggregateReport:
    """parse_xml, any failure a NotAReport (an unknown encoding declared, a codec error...):
    one bad report must never fail the mail and lose the good ones beside it."""
    try:
        return parse_xml(xml)
    except NotAReport:
        raise
    except Exception as problem:
        raise NotAReport(f"unreadable XML ({type(problem).__name__})") from None


def _reports_in_part(
    kind: str, payload: bytes, label: str, budget: _Budget
) -> Iterator[AggregateReport]:
    try:
        if kind == "xml":
            budget.left -= len(payload)
            if budget.left < 0:
                raise NotAReport(f"reports larger than {MAX_XML_BYTES >> 20} MiB")
            yield _parsed(payload)
        elif kind == "gzip":
            yield _parsed(_gunzip(payload, budget))
        else:
            for name, xml in _zip_members(payload, budget):
                try:
                    yield _parsed(xml)
                except NotAReport as problem:
                    log.warning("DMARC report %s in %s skipped: %s", name[:100], label, problem)
    except NotAReport as problem:
        log.warning("DMARC report %s skipped: %s", label, problem)


def reports_in_mail(data: bytes) -> list[AggregateReport]:
    """Every aggregate report a whole RFC 5322 message carries, in order; [] for none."""
    message = email.message_from_bytes(data)
    reports: list[AggregateReport] = []
    budget = _Budget()
    for part in message.walk():
        if len(reports) >= MAX_REPORTS_PER_MAIL or budget.left <= 0:
            break
        if part.is_multipart():
            continue
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes) or not payload:
            continue
        kind = _kind(part, payload)
        if kind is not None:
            label = (part.get_filename() or part.get_content_type())[:100]
            reports.extend(_reports_in_part(kind, payload, label, budget))
    return reports[:MAX_REPORTS_PER_MAIL]
