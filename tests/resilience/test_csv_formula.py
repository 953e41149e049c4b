"""Issue 12 item 8: no CSV cell starts with anything a spreadsheet runs as a formula.

OWASP's list (CSV injection): = + - @, TAB (0x09), CR (0x0D), LF (0x0A), and the full-width
forms of the first four, which some spreadsheets fold to ASCII. Such a cell gets a leading
single quote; nothing else changes.
"""

from __future__ import annotations

import csv
import io

import pytest

from mailroom.core.csvsafe import safe_cell, stream_csv

TRIGGERS = ["=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20"]
FULL_WIDTH = ["\uff1d", "\uff0b", "\uff0d", "\uff20"]


def _table(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


async def test_export_quotes_every_trigger_in_custom_fields_and_names(client, ws):
    for n, trigger in enumerate(TRIGGERS):
        body = {
            "email": f"c{n}@shop.io",
            "custom_fields": {"note": f"{trigger}SUM(A1)"},
        }
        if trigger in FULL_WIDTH:  # names keep no control characters, so only these
            body["first_name"] = f"{trigger}cmd"
        made = await client.post("/api/v1/contacts", json=body, headers=ws.headers)
        assert made.status_code == 201, made.text
        assert made.json()["contact"]["custom_fields"]["note"] == f"{trigger}SUM(A1)"

    for response in (
        await client.get("/api/v1/contacts/export", headers=ws.headers),
        await client.post(
            "/api/v1/contacts/bulk", json={"action": "export", "filter": {}}, headers=ws.headers
        ),
    ):
        assert response.status_code == 200
        table = _table(response.text)
        header, rows = table[0], table[1:]
        note, first_name = header.index("custom.note"), header.index("first_name")
        by_email = {row[0]: row for row in rows}
        assert len(by_email) == len(TRIGGERS)
        for n, trigger in enumerate(TRIGGERS):
            row = by_email[f"c{n}@shop.io"]
            assert row[note] == f"'{trigger}SUM(A1)", repr(trigger)
            if trigger in FULL_WIDTH:
                assert row[first_name] == f"'{trigger}cmd"
        for row in rows:
            for cell in row:
                assert not cell.startswith(tuple(TRIGGERS)), repr(cell)


@pytest.mark.parametrize("trigger", TRIGGERS)
def test_a_cell_starting_with_a_trigger_gets_a_quote(trigger):
    assert safe_cell(f"{trigger}1+2") == f"'{trigger}1+2"


@pytest.mark.parametrize(
    "value", ["plain", "a=1", "x\t", "1-2", "mail@shop.io", "'quoted", " =lead", "\u00a0+", "\x0b"]
)
def test_other_cells_are_left_as_they_are(value):
    assert safe_cell(value) == value


async def test_stream_csv_neutralises_header_and_both_row_paths():
    async def rows():
        yield ["\tA", None, 5]
        yield ["\uff20B", "", "ok"]

    plain = "".join([chunk async for chunk in stream_csv(["=h", "b", "c"], rows())])
    assert _table(plain) == [["'=h", "b", "c"], ["'\tA", "", "5"], ["'\uff20B", "", "ok"]]

    async def text_rows():
        yield ["\rA", None, "\n"]
        yield ["-1", "", "x"]

    text_only = "".join([c async for c in stream_csv(["a", "b", "c"], text_rows(), text_only=True)])
    assert _table(text_only) == [["a", "b", "c"], ["'\rA", "", "'\n"], ["'-1", "", "x"]]
