"""Row ids: UUID version 7 (time-ordered), so bulk inserts append to indexes instead of
scattering over them, while staying ordinary UUID strings in the API."""

from __future__ import annotations

import os
import time
import uuid


def new_id() -> str:
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version 7
    value |= (rand >> 68) << 64 & (0xFFF << 64)  # 12 random bits
    value |= 0b10 << 62  # RFC 4122 variant
    value |= rand & ((1 << 62) - 1)
    h = f"{value:032x}"  # formatted by hand: uuid.UUID() is the slow part in bulk imports
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def is_uuid(value: object) -> bool:
    if not isinstance(value, str) or len(value) != 36:
        return False
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
