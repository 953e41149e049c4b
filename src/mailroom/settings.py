"""Every MAILROOM_* setting, typed, with its default.

Settings are read from the environment once per process (`get_settings()`); tests build their own
`Settings(...)` and hand it to `create_app()`, so nothing reads the environment behind their back.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import secrets
from functools import lru_cache
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url

# DNS names of the advised records; `_` is allowed, as in `_spf.example.net`.
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOSTNAME = re.compile(rf"(?:{_LABEL}\.)+{_LABEL}")
_LABEL_PREFIX = re.compile(r"[a-z][a-z0-9-]{0,39}")
_ADDRESS_LITERAL = re.compile(r"\[(?:IPv6:[0-9A-Fa-f:.]+|[0-9.]+)\]")


class Settings(BaseSettings):
    # enable_decoding=False: list settings are plain comma-separated strings, not JSON.
    model_config = SettingsConfigDict(env_prefix="MAILROOM_", extra="ignore", enable_decoding=False)

    # Where the embedded SQLite database, the generated secret, the file outbox and media live.
    data_dir: Path = Path("var")
    database_url: str = ""
    public_url: str = "http://127.0.0.1:8000"
    secret_key: str = ""
    smtp_url: str = ""
    # The name the engine gives in its SMTP greeting (EHLO). Unset: the public URL's host
    # (an IP address as an address literal, `[192.0.2.1]`); relays and filters distrust
    # `localhost`.
    smtp_helo: str = ""
    # The sending engine: persistent SMTP connections, processes that render and DKIM-sign
    # (unset: one per core; 0: a thread of the worker), rows claimed per batch.
    smtp_connections: int = 8
    send_processes: int | None = None
    send_batch: int = 200
    media_dir: Path | None = None
    # Image hosting: `local` (files under media_dir, served by Mailroom), `s3` (any
    # S3-compatible store; for several machines) or `off`.
    media_backend: str = "local"
    s3_bucket: str = ""
    s3_endpoint_url: str = ""
    s3_region: str = "us-east-1"
    s3_access_key_id: str = ""
    s3_secret_access_key: str = ""
    s3_public_url: str = ""  # base URL of public objects; default <endpoint>/<bucket>
    webhook_timeout: float = 8.0
    webhook_retry_delays: list[int] = Field(default_factory=lambda: [30, 300, 3600, 18000])
    webhook_allow_networks: list[str] = Field(default_factory=list)
    dns_nameservers: list[str] = Field(default_factory=list)
    # Imports from Mailchimp's API: the base URL up to and including `/3.0`, replacing the host
    # derived from the key's data centre (for a local stand-in; unset in production).
    mailchimp_api_url: str = ""
    # Sending domains (domains/): the DNS records each domain is advised to publish besides its
    # DKIM key. SPF: `include:<spf_include>` (the relay's SPF name); unset, no SPF record is
    # advised. Return path: `<return_path_subdomain>.<domain>` CNAME `<return_path_domain>`
    # (the operator's bounce host); unset, no CNAME is advised. DMARC: `p=<dmarc_policy>`.
    spf_include: str = ""
    return_path_domain: str = ""
    return_path_subdomain: str = "bounces"
    dmarc_policy: str = "none"
    # DKIM selectors are `<prefix><yyyymm><4 hex>`, a new one for every key.
    dkim_selector_prefix: str = "mr"
    # Background loops: how often they look for due rows when idle, in seconds.
    worker_poll_interval: float = 1.0
    # The backstop for claimed rows: due again after this many seconds whatever happened to
    # their worker. A dead worker's rows come back sooner, ~15 s after its last heartbeat.
    worker_lease_seconds: int = 300
    # The inbound SMTP listener for bounces and complaints (`host:port`; unset: not started by
    # `serve` / `worker`; `mailroom bounces` runs it alone).
    bounce_smtp: str = ""
    # Its limits: a message's size (552 past it; reports are small, and relays are asked to
    # return headers only), connections at once in all and per client address (421 past
    # them), and seconds a client may stay silent or take over one command, its message
    # included, before it is disconnected.
    bounce_max_bytes: int = 512 * 1024
    bounce_max_connections: int = 100
    bounce_max_connections_per_client: int = 20
    bounce_idle_timeout: float = 60.0
    # Delivery health over the last 7 days / 2,000 accepted messages since the last resume: a
    # warning (once a day) past the warn rates, an automatic pause past the pause rates; no
    # decision before `health_min_messages`.
    health_min_messages: int = 20
    health_warn_bounce_rate: float = 0.04
    health_pause_bounce_rate: float = 0.08
    health_warn_complaint_rate: float = 0.001
    health_pause_complaint_rate: float = 0.003
    # Public signup-form submissions per client IP and form in a rolling minute (429 past it).
    form_rate_per_minute: int = 10
    # Reverse proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (addresses or
    # CIDRs). Empty: none, so a client cannot pick the address every rate limit counts by.
    trusted_proxies: list[str] = Field(default_factory=list)
    # Dashboard sessions end after this long without a request.
    session_idle_minutes: int = 720
    # Who sends the system's own emails (invitations, password resets).
    system_from: str = ""
    # Largest accepted JSON body; multipart uploads have their own limits.
    max_json_body_bytes: int = 2 * 1024 * 1024  # 413 past this (web.bodylimit)
    # `GET /metrics`: empty, loopback clients only; set, a Bearer token from anywhere.
    metrics_token: str = ""
    # Log lines: `text`, or `json` (one object a line: core.logs).
    log_format: Literal["text", "json"] = "text"
    # The least severe lines written: `debug` adds one line per campaign message and webhook
    # delivered.
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    @field_validator("webhook_retry_delays", mode="before")
    @classmethod
    def _split_ints(cls, value: object) -> object:
        if isinstance(value, str):
            return [int(part) for part in value.replace(" ", "").split(",") if part]
        if isinstance(value, int):
            return [value]
        return value

    @field_validator("webhook_allow_networks", "dns_nameservers", "trusted_proxies", mode="before")
    @classmethod
    def _split_strings(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("spf_include", "return_path_domain", mode="after")
    @classmethod
    def _hostname(cls, value: str) -> str:
        host = value.strip().lower().rstrip(".")
        if host and not _HOSTNAME.fullmatch(host):
            raise ValueError(f"{value!r} is not a hostname")
        return host

    @field_validator("smtp_helo", mode="after")
    @classmethod
    def _helo(cls, value: str) -> str:
        name = value.strip().rstrip(".")
        if name and not (_HOSTNAME.fullmatch(name.lower()) or _ADDRESS_LITERAL.fullmatch(name)):
            raise ValueError(f"{value!r} is not a hostname or an address literal like [192.0.2.1]")
        return name

    @field_validator("return_path_subdomain", "dkim_selector_prefix", mode="after")
    @classmethod
    def _label(cls, value: str) -> str:
        # Part of one DNS label: the selector adds 10 characters to the prefix.
        label = value.strip().lower()
        if not _LABEL_PREFIX.fullmatch(label):
            raise ValueError(f"{value!r} must be letters, digits and hyphens, 1-40, from a letter")
        return label

    @field_validator("dmarc_policy", mode="after")
    @classmethod
    def _dmarc_policy(cls, value: str) -> str:
        policy = value.strip().lower()
        if policy not in ("none", "quarantine", "reject"):
            raise ValueError("dmarc_policy must be none, quarantine or reject")
        return policy

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'mailroom.db').resolve()}"

    @property
    def resolved_smtp_helo(self) -> str:
        """The EHLO name: the setting, else the public URL's host in its ASCII (IDNA) form,
        an IP address written as an address literal (RFC 5321 4.1.3)."""
        if self.smtp_helo:
            return self.smtp_helo
        host = (urlsplit(self.public_url).hostname or "").rstrip(".")
        if not host:
            return "localhost"
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            pass
        else:
            return f"[IPv6:{address}]" if address.version == 6 else f"[{address}]"
        if not host.isascii():
            import idna  # only here: every command imports settings, few need IDNA

            try:
                host = idna.encode(host, uts46=True).decode()
            except idna.IDNAError:
                return "localhost"
        return host

    @property
    def resolved_media_dir(self) -> Path:
        return self.media_dir or self.data_dir / "media"

    @property
    def resolved_secret_key(self) -> str:
        """The installation secret: the setting, or one generated once into the data dir."""
        if self.secret_key:
            return self.secret_key
        path = self.data_dir / "secret_key"
        if not path.exists():
            private_dir(self.data_dir)
            write_private_once(path, secrets.token_urlsafe(48))
        self.secret_key = path.read_text().strip()
        return self.secret_key

    @property
    def sqlite_path(self) -> Path | None:
        """The SQLite database file, when the database is a SQLite file."""
        url = make_url(self.resolved_database_url)
        if not url.drivername.startswith("sqlite") or url.database in (None, "", ":memory:"):
            return None
        return Path(url.database)

    def prepare_storage(self) -> None:
        """Create the data directory and the SQLite file private (0700, 0600) before anything
        else creates them with the umask's modes: the database holds webhook signing secrets
        and the directory the installation secret. SQLite gives its -wal and -shm files the
        database file's mode. Existing ones are left as the operator made them."""
        private_dir(self.data_dir)
        path = self.sqlite_path
        if path is None:
            return
        private_dir(path.parent)
        # An empty file is a valid empty database; an existing one stays as it is.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))

    @property
    def is_sqlite(self) -> bool:
        return self.resolved_database_url.startswith("sqlite")


def private_dir(path: Path) -> None:
    """`mkdir -p`, the last directory made 0700 from the start (parents made as usual)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)


def write_private_once(path: Path, content: str) -> None:
    """Create `path` holding `content`, readable by the owner only at every moment, unless it
    exists. The content is written to a private temporary file and linked into place, so a
    process starting at the same time reads either no file or the whole one; a link never
    replaces, so the first writer wins and every process uses its secret."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):  # another process was first: use theirs
            os.link(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


@lru_cache
def get_settings() -> Settings:
    return Settings()
