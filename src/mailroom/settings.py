"""Every MAILROOM_* setting, typed, with its default.

Settings are read from the environment once per process (`get_settings()`); tests build their own
`Settings(...)` and hand it to `create_app()`, so nothing reads the environment behind their back.
"""

from __future__ import annotations

import secrets
from functools import lru_cache
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    # enable_decoding=False: list settings are plain comma-separated strings, not JSON.
    model_config = SettingsConfigDict(env_prefix="MAILROOM_", extra="ignore", enable_decoding=False)

    # Where the embedded SQLite database, the generated secret, the file outbox and media live.
    data_dir: Path = Path("var")
    database_url: str = ""
    public_url: str = "http://127.0.0.1:8000"
    secret_key: str = ""
    smtp_url: str = ""
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
    # Background loops: how often they look for due rows when idle, in seconds.
    worker_poll_interval: float = 1.0
    # A claimed row whose worker died becomes due again after this many seconds.
    worker_lease_seconds: int = 300
    # Largest accepted JSON body; multipart uploads have their own limits.
    max_json_body_bytes: int = 4 * 1024 * 1024

    @field_validator("webhook_retry_delays", mode="before")
    @classmethod
    def _split_ints(cls, value: object) -> object:
        if isinstance(value, str):
            return [int(part) for part in value.replace(" ", "").split(",") if part]
        if isinstance(value, int):
            return [value]
        return value

    @field_validator("webhook_allow_networks", "dns_nameservers", mode="before")
    @classmethod
    def _split_strings(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'mailroom.db').resolve()}"

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
            self.data_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(secrets.token_urlsafe(48))
            path.chmod(0o600)
        self.secret_key = path.read_text().strip()
        return self.secret_key

    @property
    def is_sqlite(self) -> bool:
        return self.resolved_database_url.startswith("sqlite")


@lru_cache
def get_settings() -> Settings:
    return Settings()
