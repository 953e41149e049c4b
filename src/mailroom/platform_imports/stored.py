"""An export kept with its job as zlib-compressed JSON: read from the upload by the POST (which
must read it to refuse what is not an export) or pulled by the job's first run, so the job
never parses a file twice, and a resumed job writes exactly what its first run read instead of
asking the platform again. Also the API credentials, kept sealed (AES-GCM under the
installation secret, bound to the job) until the pull is done."""

from __future__ import annotations

import base64
import os
import zlib
from datetime import datetime
from typing import Any

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mailroom.core.tokens import derive_key
from mailroom.platform_imports.records import FieldSpec, PlatformContact, PlatformExport

NONCE_BYTES = 12


def dump(export: PlatformExport) -> bytes:
    body = {
        "platform": export.platform,
        "fields": [[f.key, f.label, f.type] for f in export.fields],
        "lists": export.lists,
        "skipped": export.skipped,
        "warnings": export.warnings,
        "contacts": [
            [
                c.row,
                c.source,
                c.email,
                c.first_name,
                c.last_name,
                c.status,
                c.suppress,
                c.fields,
                c.tags,
                c.lists,
                c.consent_at.isoformat() if c.consent_at else None,
                c.consent_ip,
                c.language,
            ]
            for c in export.contacts
        ],
    }
    return zlib.compress(orjson.dumps(body), 1)  # fast: it lives for one job


def load(data: bytes) -> PlatformExport:
    body: dict[str, Any] = orjson.loads(zlib.decompress(data))
    contacts = [
        PlatformContact(
            row=row,
            source=source,
            email=email,
            first_name=first,
            last_name=last,
            status=status,
            suppress=suppress,
            fields=fields,
            tags=tags,
            lists=[(name, state) for name, state in lists],
            consent_at=datetime.fromisoformat(consent_at) if consent_at else None,
            consent_ip=consent_ip,
            language=language,
        )
        for (
            row,
            source,
            email,
            first,
            last,
            status,
            suppress,
            fields,
            tags,
            lists,
            consent_at,
            consent_ip,
            language,
        ) in body["contacts"]
    ]
    return PlatformExport(
        platform=body["platform"],
        contacts=contacts,
        fields=[FieldSpec(key, label, kind) for key, label, kind in body["fields"]],
        lists=body["lists"],
        skipped=body["skipped"],
        warnings=body["warnings"],
    )


def _box(secret: str) -> AESGCM:
    return AESGCM(derive_key(secret, "platform-import-credentials"))


def seal(secret: str, job_id: str, credentials: dict[str, Any]) -> str:
    nonce = os.urandom(NONCE_BYTES)
    sealed = _box(secret).encrypt(nonce, orjson.dumps(credentials), job_id.encode())
    return base64.urlsafe_b64encode(nonce + sealed).decode()


def unseal(secret: str, job_id: str, stored: str) -> dict[str, Any] | None:
    """The credentials, or None when they do not open (the secret key changed)."""
    try:
        raw = base64.urlsafe_b64decode(stored)
        opened = _box(secret).decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], job_id.encode())
    except (InvalidTag, ValueError):
        return None
    found: dict[str, Any] = orjson.loads(opened)
    return found
