"""CSV for spreadsheets: every cell quoted, and no cell a spreadsheet would run as a formula."""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from typing import Any

# Every character OWASP lists as starting a formula (CSV injection): = + - @, TAB, CR, LF, and
# the full-width forms of the first four, which some spreadsheets fold to ASCII. A cell that
# starts with one gets a leading single quote, so it is shown as text and never run.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")
_FORMULA = frozenset(FORMULA_STARTS)


def safe_cell(value: Any) -> str:
    if value is None:
        return ""
    text = value if type(value) is str else str(value)
    if text and text[0] in _FORMULA:
        return "'" + text
    return text


class CsvChunks:
    """Rows in, text chunks out: a writer over a buffer that is emptied every chunk."""

    def __init__(self, columns: Sequence[str]) -> None:
        self._buffer = io.StringIO()
        self._writer = csv.writer(self._buffer, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
        self._writer.writerow([safe_cell(c) for c in columns])

    def add(self, row: Sequence[Any]) -> None:
        self._writer.writerow(list(map(safe_cell, row)))

    def add_text(self, row: Sequence[str | None]) -> None:
        """`add` for rows of str or None only (the export hot path)."""
        self._writer.writerow([("'" + v if v[0] in _FORMULA else v) if v else "" for v in row])

    def size(self) -> int:
        """Characters waiting to be taken."""
        return self._buffer.tell()

    def take(self) -> str:
        text = self._buffer.getvalue()
        self._buffer.seek(0)
        self._buffer.truncate()
        return text


CHUNK_CHARS = 64 * 1024


async def stream_csv(
    columns: Sequence[str],
    rows: AsyncIterable[Sequence[Any]],
    chunk_chars: int = CHUNK_CHARS,
    *,
    text_only: bool = False,
) -> AsyncIterator[str]:
    """The whole CSV as text chunks of about `chunk_chars` characters, however wide the rows:
    memory stays flat, and the producer runs at most one chunk ahead of the client.
    `text_only`: every value is str or None (skips per-cell type checks)."""
    out = CsvChunks(columns)
    add = out.add_text if text_only else out.add
    size = out.size
    async for row in rows:
        add(row)
        if size() >= chunk_chars:
            yield out.take()
    yield out.take()
