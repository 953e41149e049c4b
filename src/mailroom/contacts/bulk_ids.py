"""Row ids in bulk: the same UUID version 7 strings as core.ids.new_id, for the thousands of
rows one import makes. new_id formats each id from a 128-bit integer (~5 µs); here one clock
read and one os.urandom call serve a block of ids, each then cut from a hex string."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

BLOCK = 1000  # ids per clock reading: later blocks sort after earlier ones, as new_id's do
# The variant nibble (RFC 4122: 0b10xx) from any random hex digit's two low bits.
_VARIANT = {f"{n:x}": "89ab"[n & 3] for n in range(16)}


def new_ids() -> Iterator[str]:
    """An endless supply of fresh ids; take as many as needed."""
    while True:
        millis = (time.time_ns() // 1_000_000) & ((1 << 48) - 1)
        stamp = f"{millis:012x}"
        head = f"{stamp[:8]}-{stamp[8:]}-7"
        random = os.urandom(10 * BLOCK).hex()  # 74 of each id's 80 bits are used
        variant = _VARIANT
        for i in range(0, 20 * BLOCK, 20):
            yield (
                f"{head}{random[i : i + 3]}-{variant[random[i + 3]]}{random[i + 4 : i + 7]}"
                f"-{random[i + 7 : i + 19]}"
            )
