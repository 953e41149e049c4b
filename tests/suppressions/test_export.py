"""Spec, Suppressions: GET /api/v1/suppressions/export (CSV)."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from tests.suppressions.helpers import add_ok, create_contact, export, parse_csv

HEADER = ["email", "email_masked", "domain", "reason", "source", "added_at", "contact_id"]
HEADER_LINE = '"email","email_masked","domain","reason","source","added_at","contact_id"'
# Everything OWASP lists as starting a formula, full-width forms included.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


async def test_empty_export_has_the_quoted_header(client, ws):
    response = await export(client, ws.headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    assert response.text.splitlines()[0] == HEADER_LINE
    assert parse_csv(response.text) == [HEADER]


async def test_filename(client, ws):
    response = await export(client, ws.headers)
    disposition = response.headers["content-disposition"]
    assert "attachment" in disposition
    assert 'filename="suppressions.csv"' in disposition
    for reason in ("unsubscribed", "bounced", "complained", "deleted"):
        response = await export(client, ws.headers, reason=reason)
        assert response.status_code == 200
        assert f'filename="suppressions-{reason}.csv"' in response.headers["content-disposition"]


async def test_rows_and_every_cell_quoted(client, ws):
    await add_ok(client, ws.headers, ["orphan@shop.io"], reason="bounced")
    await asyncio.sleep(0.01)
    contact = await create_contact(client, ws.headers, "member@club.io")
    await add_ok(client, ws.headers, ["member@club.io"], reason="complained")
    response = await export(client, ws.headers)
    assert response.status_code == 200
    lines = [line for line in response.text.splitlines() if line]
    assert lines[0] == HEADER_LINE
    for line in lines:
        cells = line.split(",")
        assert all(cell.startswith('"') and cell.endswith('"') for cell in cells), line
    table = parse_csv(response.text)
    assert table[0] == HEADER
    data = [dict(zip(HEADER, row, strict=True)) for row in table[1:]]
    assert len(data) == 2
    newest, oldest = data
    # newest first
    assert newest["domain"] == "club.io"
    assert oldest["domain"] == "shop.io"
    # the full address appears only where a contact row carries it
    assert newest["email"] == "member@club.io"
    assert newest["contact_id"] == contact["id"]
    assert newest["reason"] == "complained"
    assert oldest["email"] == ""
    assert oldest["contact_id"] == ""
    assert oldest["reason"] == "bounced"
    assert "orphan@shop.io" not in response.text
    assert oldest["email_masked"] and "orphan" not in oldest["email_masked"]
    for row in data:
        assert row["source"]
        datetime.fromisoformat(row["added_at"].replace("Z", "+00:00"))


async def test_export_matches_the_list_order(client, ws):
    for i in range(4):
        await add_ok(client, ws.headers, [f"x@d{i}.io"])
        await asyncio.sleep(0.005)
    response = await export(client, ws.headers)
    domains = [row[2] for row in parse_csv(response.text)[1:]]
    assert domains == ["d3.io", "d2.io", "d1.io", "d0.io"]


async def test_reason_and_domain_filters(client, ws):
    await add_ok(client, ws.headers, ["a@shop.io", "b@mall.io"])
    await add_ok(client, ws.headers, ["c@shop.io", "d@Mall.io"], reason="bounced")
    bounced = parse_csv((await export(client, ws.headers, reason="bounced")).text)[1:]
    assert sorted(row[2] for row in bounced) == ["mall.io", "shop.io"]
    assert {row[3] for row in bounced} == {"bounced"}
    mall = parse_csv((await export(client, ws.headers, domain="MALL")).text)[1:]
    assert sorted(row[3] for row in mall) == ["bounced", "unsubscribed"]
    assert {row[2] for row in mall} == {"mall.io"}
    both = parse_csv((await export(client, ws.headers, domain="shop", reason="bounced")).text)
    assert [row[2:4] for row in both[1:]] == [["shop.io", "bounced"]]


async def test_bad_reason_is_400(client, ws):
    response = await export(client, ws.headers, reason="spam")
    assert response.status_code == 400
    assert isinstance(response.json()["error"], str)


@pytest.mark.parametrize("address", ["+tag@example.com", "-x@example.com", "+a@shop.io"])
async def test_cells_are_formula_safe(client, ws, address):
    contact = await create_contact(client, ws.headers, address)
    await add_ok(client, ws.headers, [address], reason="bounced")
    response = await export(client, ws.headers)
    table = parse_csv(response.text)
    assert len(table) == 2
    row = dict(zip(HEADER, table[1], strict=True))
    for value in table[1]:
        assert not value.startswith(FORMULA_STARTS), value
    assert row["email"] == "'" + address
    assert row["contact_id"] == contact["id"]


async def test_deleted_and_erased_rows_in_export(client, ws):
    plain = await create_contact(client, ws.headers, "plain@shop.io")
    erased = await create_contact(client, ws.headers, "erased@erase.io")
    await client.delete(f"/api/v1/contacts/{plain['id']}", headers=ws.headers)
    await client.delete(
        f"/api/v1/contacts/{erased['id']}", params={"mode": "erase"}, headers=ws.headers
    )
    table = parse_csv((await export(client, ws.headers, reason="deleted")).text)
    data = [dict(zip(HEADER, row, strict=True)) for row in table[1:]]
    assert len(data) == 2
    assert "plain@shop.io" not in str(data)
    assert "erased@erase.io" not in str(data)
    assert "erase.io" not in str(data)
    domains = sorted(row["domain"] for row in data)
    assert domains == ["", "shop.io"]
    assert all(row["email"] == "" and row["contact_id"] == "" for row in data)


async def test_export_needs_contacts_export(client, ws, factory):
    await add_ok(client, ws.headers, ["a@shop.io"])
    reader = await factory.key(ws, "contacts:read")
    response = await export(client, reader)
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: contacts:export permission required"}
    exporter = await factory.key(ws, "contacts:export")
    response = await export(client, exporter)
    assert response.status_code == 200
    assert len(parse_csv(response.text)) == 2


async def test_export_is_scoped_to_the_workspace(client, ws, factory):
    await add_ok(client, ws.headers, ["a@shop.io"])
    other = await factory.workspace("pro")
    table = parse_csv((await export(client, other.headers)).text)
    assert table == [HEADER]
