from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from mailroom.core.loose import Doc, body_config, nullable, text
from mailroom.core.pagination import Pagination

# A registrable hostname, exactly as the service accepts it (domains.service.clean_domain):
# dot-separated labels of letters, digits and hyphens (1-63, no hyphen at either end), at least
# two labels, the last one (the top-level domain) at least two characters and starting with a
# letter (so never an IP address), nothing under `.localhost`, an optional final dot.
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_TLD = "[A-Za-z][A-Za-z0-9-]{0,61}[A-Za-z0-9]"
_LOCALHOST = "[Ll][Oo][Cc][Aa][Ll][Hh][Oo][Ss][Tt]"
DOMAIN_PATTERN = rf"^(?!(?:.*\.)?{_LOCALHOST}\.?$)(?:{_LABEL}\.)+{_TLD}\.?$"
MAX_DOMAIN = 253


class DomainCreate(BaseModel):
    model_config = body_config("domain", example={"domain": "mail.example.com"})
    domain: Annotated[Any, Doc(text(MAX_DOMAIN, pattern=DOMAIN_PATTERN))] = Field(
        None,
        description="The hostname mail is sent from (the From address's domain), e.g. "
        "`example.com` or `mail.example.com`; not an IP address or localhost. Case and a "
        "final dot are ignored; a Unicode name is stored in its IDNA (xn--) form.",
    )


class DomainUpdate(BaseModel):
    model_config = body_config(forbid_extra=True, example={"link_host": "links.news.example.com"})
    link_host: Annotated[Any, Doc(nullable(text(MAX_DOMAIN, pattern=DOMAIN_PATTERN)))] = Field(
        None,
        description="A host of your own for the links in this domain's campaign and "
        "automation mail (clicks, the open pixel, unsubscribe, preferences, web view, hosted "
        "images), published as a CNAME to the installation's host; null removes it. Used "
        "once its record (in `records`, purpose `link_host`) verifies.",
    )
    skip_warmup: Annotated[Any, Doc({"type": "boolean", "enum": [True]})] = Field(
        None,
        description="`true` ends the domain's warm-up (it already has a reputation): no daily "
        "allowance from now, and campaign mail waiting for tomorrow's goes at once. A "
        "workspace admin (people) or `campaigns:send` (keys); audit-logged as `skip_warmup`.",
    )


class DnsRecordOut(BaseModel):
    type: Literal["TXT", "CNAME"]
    host: str = Field(description="The full name to publish the record at.")
    value: str = Field(description="The record's value, as one string.")
    purpose: Literal["dkim", "spf", "dmarc", "return_path", "link_host"] = Field(
        description="`dkim` is required for the domain to be verified; the others are advised."
    )
    status: Literal["pending", "verified", "failed"] = Field(
        description="`pending` until the first check, then that check's verdict."
    )
    reason: str | None = Field(description="Why the last check failed; null otherwise.")


class DomainCheck(BaseModel):
    rule: Literal[
        "dkim_aligned",
        "spf_aligned",
        "dmarc_published",
        "one_click_unsubscribe",
        "complaint_rate",
        "tls_to_relay",
        "ehlo_name",
        "reverse_dns",
    ]
    ok: bool = Field(description="Whether the rule is met now.")
    detail: str = Field(description="What was found, and what to fix when it is not met.")


class WarmupOut(BaseModel):
    stage: int = Field(description="From 1; one up a UTC day while the domain sends well.")
    daily_limit: int | None = Field(
        description="Campaign messages the domain may send this UTC day; null: no limit "
        "(warm-up skipped or over)."
    )
    sent_today: int = Field(description="Campaign messages it sent this UTC day.")
    skipped: bool = Field(description="An admin skipped warm-up for this domain.")


class DomainOut(BaseModel):
    id: str
    domain: str
    status: Literal["pending", "verified", "failed"]
    dkim_selector: str
    records: list[DnsRecordOut]
    failure_reason: str | None = Field(
        description="While `failed`: the records that failed and why."
    )
    link_host: str | None = Field(
        description="The domain's own host for its mail's links (null: the installation's)."
    )
    verified_at: datetime | None = Field(description="When it became verified (null unless).")
    last_checked_at: datetime | None
    created_at: datetime
    warmup: WarmupOut
    checks: list[DomainCheck] = Field(
        description="Gmail's and Yahoo's bulk-sender rules, each met or not, from the last DNS "
        "check, the workspace's complaint rate and the installation's relay settings."
    )


class DomainEnvelope(BaseModel):
    domain: DomainOut


class DomainPage(BaseModel):
    domains: list[DomainOut]
    pagination: Pagination


class DomainDeleted(BaseModel):
    success: bool
    id: str


class DmarcRowOut(BaseModel):
    day: date = Field(description="The report's UTC day (its date range's first).")
    source_ip: str
    reporter: str = Field(description="Who reported it: google.com, Outlook.com, Yahoo, ...")
    count: int = Field(description="Messages from this source that day.")
    spf_pass: int = Field(description="Of them, messages that passed SPF aligned.")
    dkim_pass: int = Field(description="Of them, messages that passed DKIM aligned.")
    dmarc_pass: int = Field(description="Of them, messages that passed DMARC (either).")
    known: bool = Field(
        description="False when none of the source's mail passed DKIM: not sent by Mailroom."
    )


class DmarcSummary(BaseModel):
    messages: int
    spf_pass_rate: float = Field(description="0 to 1.")
    dkim_pass_rate: float
    dmarc_pass_rate: float
    unknown_sources: int = Field(description="Source IPs whose mail never passed DKIM.")


class DmarcEnvelope(BaseModel):
    reports: list[DmarcRowOut]
    summary: DmarcSummary
