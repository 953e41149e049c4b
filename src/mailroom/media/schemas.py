from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel


class MediaFileOut(BaseModel):
    id: str
    url: str
    name: str
    size: int
    type: str
    uploaded: datetime


class MediaLibrary(BaseModel):
    configured: bool
    files: list[MediaFileOut]
    count: int
    used_bytes: int
    quota_bytes: int
    max_bytes: int
    types: list[str]
    truncated: bool


class MediaUploaded(BaseModel):
    file: MediaFileOut
    used_bytes: int
    quota_bytes: int


class MediaDeleted(BaseModel):
    ok: bool
    id: str
    note: str


UPLOAD_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {
                        "type": "string",
                        "format": "binary",
                        "description": "A PNG, JPEG, GIF or WebP image, 2 MB at most; "
                        "the type is read from the bytes.",
                    }
                },
            },
            "encoding": {"file": {"contentType": "image/png, image/jpeg, image/gif, image/webp"}},
        }
    },
}
