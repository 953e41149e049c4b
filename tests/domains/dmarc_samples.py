"""Builders of DMARC aggregate reports and the mail that carries them, shaped like what Google
and Microsoft (Outlook.com) send, for the parser's tests. Written from the published shapes:
no reporter's file is copied."""

from __future__ import annotations

import gzip
import io
import zipfile
from email.message import EmailMessage
from xml.sax.saxutils import escape

GOOGLE_BEGIN = 1549929600
GOOGLE_END = 1550015999
MICROSOFT_BEGIN = 1711756800
MICROSOFT_END = 1711843200
DMARCBIS_NS = "urn:ietf:params:xml:ns:dmarc-2.0"

# (source_ip, count, disposition, dkim, spf)
Row = tuple[str, str, str, str, str]

GOOGLE_ROWS: list[Row] = [
    ("209.85.220.41", "12", "none", "pass", "pass"),
    ("2a00:1450:4864:20::52f", "3", "none", "pass", "fail"),
    ("198.51.100.7", "1", "quarantine", "fail", "fail"),
]


def _records(rows: list[Row], header_from: str, extra_identifiers: str = "") -> str:
    return "".join(
        f"<record><row><source_ip>{escape(ip)}</source_ip><count>{escape(count)}</count>"
        f"<policy_evaluated><disposition>{disposition}</disposition><dkim>{dkim}</dkim>"
        f"<spf>{spf}</spf></policy_evaluated></row>"
        f"<identifiers>{extra_identifiers}<header_from>{header_from}</header_from></identifiers>"
        f"<auth_results><spf><domain>{header_from}</domain><result>{spf}</result></spf>"
        f"</auth_results></record>"
        for ip, count, disposition, dkim, spf in rows
    )


def google_xml(
    domain: str = "example.com",
    report_id: str = "949348866075514174",
    rows: list[Row] | None = None,
    policy: str = "none",
) -> bytes:
    rows = GOOGLE_ROWS if rows is None else rows
    return (
        "<?xml version='1.0' encoding='UTF-8'?>\n<feedback><report_metadata>"
        "<org_name>google.com</org_name><email>noreply-dmarc-support@google.com</email>"
        "<extra_contact_info>https://support.google.com/a/answer/2466580</extra_contact_info>"
        f"<report_id>{report_id}</report_id><date_range><begin>{GOOGLE_BEGIN}</begin>"
        f"<end>{GOOGLE_END}</end></date_range></report_metadata><policy_published>"
        f"<domain>{domain}</domain><adkim>r</adkim><aspf>r</aspf><p>{policy}</p><sp>none</sp>"
        f"<pct>100</pct></policy_published>{_records(rows, 'example.com')}</feedback>"
    ).encode()


def microsoft_xml(domain: str = "example.com") -> bytes:
    rows: list[Row] = [("40.107.22.58", "5", "none", "fail", "pass")]
    identifiers = "<envelope_to>hotmail.com</envelope_to><envelope_from>example.com</envelope_from>"
    return (
        '<?xml version="1.0"?>\n<feedback xmlns:xsd="http://www.w3.org/2001/XMLSchema" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><version>1.0</version>'
        "<report_metadata><org_name>Outlook.com</org_name>"
        "<email>dmarcreport@microsoft.com</email>"
        "<report_id>cfeafefe4129445e8c81018bd9177197</report_id>"
        f"<date_range><begin>{MICROSOFT_BEGIN}</begin><end>{MICROSOFT_END}</end></date_range>"
        f"</report_metadata><policy_published><domain>{domain}</domain><adkim>r</adkim>"
        "<aspf>r</aspf><p>quarantine</p><sp>quarantine</sp><pct>100</pct><fo>0</fo>"
        f"</policy_published>{_records(rows, 'example.com', identifiers)}</feedback>"
    ).encode()


def dmarcbis_xml() -> bytes:
    """The DMARCbis shape: a default namespace on every element, whitespace around values."""
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<feedback xmlns="{DMARCBIS_NS}">\n'
        "  <version>1.0</version>\n  <report_metadata>\n"
        "    <org_name> Example Receiver </org_name>\n"
        "    <email>dmarc@receiver.example</email>\n"
        "    <report_id>\n      bis-2024-0001\n    </report_id>\n"
        "    <date_range><begin> 1711756800 </begin><end>1711843199</end></date_range>\n"
        "  </report_metadata>\n  <policy_published>\n"
        "    <domain>Example.COM.</domain><p>reject</p><np>reject</np><discovery_method>treewalk"
        "</discovery_method>\n  </policy_published>\n"
        "  <record>\n    <row>\n      <source_ip> 192.0.2.10 </source_ip>\n"
        "      <count> 7 </count>\n      <policy_evaluated><disposition> Reject </disposition>"
        "<dkim> FAIL </dkim><spf> Pass </spf></policy_evaluated>\n    </row>\n"
        "    <identifiers><header_from> Example.com </header_from></identifiers>\n"
        "  </record>\n</feedback>\n"
    ).encode()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def gzip_bytes(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9)


def mail(
    attachments: list[tuple[str, str, bytes]],
    sender: str = "reports@receiver.example",
    subject: str = "Report domain: example.com",
    body: str | None = "",
) -> bytes:
    """A multipart/mixed mail: a text/plain body (unless None), then each (filename,
    content type, data) as a base64 attachment."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = "dmarc@rp.example.com"
    message["Subject"] = subject
    if body is not None:
        message.set_content(body)
    for filename, content_type, data in attachments:
        maintype, subtype = content_type.split("/")
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    return message.as_bytes()


def google_mail(xml: bytes | None = None) -> bytes:
    name = f"google.com!example.com!{GOOGLE_BEGIN}!{GOOGLE_END}"
    archive = zip_bytes({f"{name}.xml": google_xml() if xml is None else xml})
    return mail(
        [(f"{name}.zip", "application/zip", archive)],
        sender="noreply-dmarc-support@google.com",
        subject="Report domain: example.com Submitter: google.com Report-ID: 949348866075514174",
    )


def microsoft_mail() -> bytes:
    name = f"protection.outlook.com!example.com!{MICROSOFT_BEGIN}!{MICROSOFT_END}.xml.gz"
    return mail(
        [(name, "application/gzip", gzip_bytes(microsoft_xml()))],
        sender="dmarcreport@microsoft.com",
        subject="Report Domain: example.com Submitter: protection.outlook.com "
        "Report-ID: <cfeafefe4129445e8c81018bd9177197>",
        body="This is a DMARC aggregate report from Microsoft Corporation.",
    )


def single_part_mail(content_type: str, data: bytes, filename: str | None = None) -> bytes:
    """A mail whose whole body is the report (no multipart)."""
    message = EmailMessage()
    message["From"] = "reports@receiver.example"
    message["Subject"] = "Report domain: example.com"
    maintype, subtype = content_type.split("/")
    message.set_content(data, maintype=maintype, subtype=subtype, filename=filename)
    if filename is None:
        del message["Content-Disposition"]
    return message.as_bytes()
