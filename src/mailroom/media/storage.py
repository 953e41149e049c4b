"""Where image bytes live: a local directory served by Mailroom, or an S3-compatible bucket."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, Protocol

from mailroom.settings import Settings


class StoreUnavailable(RuntimeError):
    """The store could not be read or written (answered as 503)."""


class MediaStore(Protocol):
    async def put(self, key: str, data: bytes, content_type: str) -> None: ...
    async def delete(self, key: str) -> None: ...
    def url(self, key: str) -> str: ...


class LocalStore:
    """Files under MAILROOM_MEDIA_DIR, served at <public url>/media/<key>."""

    def __init__(self, root: Path, public_url: str) -> None:
        self.root = root
        self.public_url = public_url.rstrip("/")

    def path(self, key: str) -> Path:
        return self.root / key

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        def write() -> None:
            self.root.mkdir(parents=True, exist_ok=True)
            temporary = self.path(key).with_suffix(".part")
            temporary.write_bytes(data)
            os.replace(temporary, self.path(key))  # readers never see half a file

        try:
            await asyncio.to_thread(write)
        except OSError as exc:
            raise StoreUnavailable(str(exc)) from exc

    async def delete(self, key: str) -> None:
        try:
            await asyncio.to_thread(self.path(key).unlink, True)
        except OSError as exc:
            raise StoreUnavailable(str(exc)) from exc

    async def read(self, key: str) -> bytes | None:
        try:
            return await asyncio.to_thread(self.path(key).read_bytes)
        except FileNotFoundError:
            return None

    def url(self, key: str) -> str:
        return f"{self.public_url}/media/{key}"


class S3Store:
    """Objects in an S3-compatible bucket, uploaded public-read; URLs point at the bucket."""

    def __init__(self, settings: Settings) -> None:
        import boto3  # only needed for this backend

        self.bucket = settings.s3_bucket
        self.client: Any = boto3.client(
            "s3",
            endpoint_url=settings.s3_endpoint_url or None,
            region_name=settings.s3_region,
            aws_access_key_id=settings.s3_access_key_id or None,
            aws_secret_access_key=settings.s3_secret_access_key or None,
        )
        base = settings.s3_public_url or (
            f"{settings.s3_endpoint_url.rstrip('/')}/{self.bucket}"
            if settings.s3_endpoint_url
            else f"https://{self.bucket}.s3.{settings.s3_region}.amazonaws.com"
        )
        self.base = base.rstrip("/")

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        try:
            await asyncio.to_thread(
                self.client.put_object,
                Bucket=self.bucket,
                Key=key,
                Body=data,
                ContentType=content_type,
                CacheControl="public, max-age=31536000, immutable",
                ACL="public-read",
            )
        except Exception as exc:  # botocore raises many kinds; all mean "not stored"
            raise StoreUnavailable(str(exc)) from exc

    async def delete(self, key: str) -> None:
        try:
            await asyncio.to_thread(self.client.delete_object, Bucket=self.bucket, Key=key)
        except Exception as exc:
            raise StoreUnavailable(str(exc)) from exc

    def url(self, key: str) -> str:
        return f"{self.base}/{key}"


def make_store(settings: Settings) -> MediaStore | None:
    """The configured store, or None when image hosting is off."""
    backend = settings.media_backend.strip().lower()
    if backend == "off":
        return None
    if backend == "s3":
        if not settings.s3_bucket:
            return None
        return S3Store(settings)
    return LocalStore(settings.resolved_media_dir, settings.public_url)
