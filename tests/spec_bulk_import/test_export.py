"""GET /contacts/export: columns, quoting, formula safety, filters, archived, permission."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from tests.spec_bulk_import.helpers import (
    BULK,
    EXPORT,
    create_contact,
    create_list,
    create_tag,
    import_rows,
    read_export,
    set_status,
    when,
)

COLUMNS = [
    "email",
    "first_name",
    "last_name",
    "status",
    "source",
    "language",
    "tags",
    "lists",
    "created_at",
    "subscribed_at",
    "unsubscribed_at",
]
QUOTED_LINE = re.compile(r'^"(?:[^"]|"")*"(?:,"(?:[^"]|"")*")*$')


async def _export(client, headers, **params):
    response = await client.get(EXPORT, params=params, headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    return response


async def test_columns_and_values(client, ws):
    a = await create_contact(
        client,
        ws.headers,
        "a@acme.io",
        first_name="Ann",
        last_name="Lee",
        language="fr",
        custom_fields={"plan": "gold", "score": 7, "vip": True},
    )
    await create_contact(client, ws.headers, "b@acme.io", custom_fields={"city": "Oslo"})
    tag = await create_tag(client, ws.headers, "VIP")
    await client.post(
        f"/api/v1/contacts/{a['id']}/tags", json={"tag_id": tag["id"]}, headers=ws.headers
    )
    news = await create_list(client, ws.headers, "News")
    await client.post(
        BULK,
        json={"action": "add_to_list", "contact_ids": [a["id"]], "list_id": news["id"]},
        headers=ws.headers,
    )
    response = await _export(client, ws.headers)
    header, rows = read_export(response.text)
    assert header[: len(COLUMNS)] == COLUMNS
    assert sorted(header[len(COLUMNS) :]) == sorted(
        ["custom.plan", "custom.score", "custom.vip", "custom.city"]
    )
    by_email = {r["email"]: r for r in rows}
    assert set(by_email) == {"a@acme.io", "b@acme.io"}
    ann = by_email["a@acme.io"]
    assert (ann["first_name"], ann["last_name"], ann["status"]) == ("Ann", "Lee", "subscribed")
    assert ann["source"] == "api" and ann["language"] == "fr"
    assert ann["tags"] == "VIP"
    assert ann["lists"] == "News"
    assert when(ann["created_at"]) == when(a["created_at"])
    assert when(ann["subscribed_at"]) == when(a["subscribed_at"])
    assert ann["unsubscribed_at"] == ""
    assert ann["custom.plan"] == "gold"
    assert ann["custom.score"] == "7"
    assert ann["custom.vip"] == "true"
    assert ann["custom.city"] == ""
    assert by_email["b@acme.io"]["custom.city"] == "Oslo"


async def test_without_custom_fields_only_the_fixed_columns(client, ws):
    await create_contact(client, ws.headers, "plain@acme.io")
    header, rows = read_export((await _export(client, ws.headers)).text)
    assert header == COLUMNS
    assert len(rows) == 1


async def test_empty_workspace_exports_the_header(client, ws):
    header, rows = read_export((await _export(client, ws.headers)).text)
    assert header == COLUMNS
    assert rows == []


async def test_every_cell_is_quoted(client, ws):
    await create_contact(
        client, ws.headers, "q@acme.io", first_name='Say "hi"', last_name="Comma, Jr"
    )
    await create_contact(client, ws.headers, "r@acme.io")
    text = (await _export(client, ws.headers)).text
    lines = [line for line in text.splitlines() if line]
    assert len(lines) == 3
    for line in lines:
        assert QUOTED_LINE.match(line), line
    _, rows = read_export(text, strict=False)
    by_email = {r["email"]: r for r in rows}
    assert by_email["q@acme.io"]["first_name"] == 'Say "hi"'
    assert by_email["q@acme.io"]["last_name"] == "Comma, Jr"


async def test_formula_cells_are_prefixed_with_a_quote(client, ws):
    await create_contact(
        client,
        ws.headers,
        "f@acme.io",
        first_name="=HYPERLINK(1)",
        last_name="+44 20",
        source="-import",
        custom_fields={"note": "@SUM(A1)", "safe": "a=b", "balance": -5},
    )
    tag = await create_tag(client, ws.headers, "=cmd")
    contact_id = (await client.get("/api/v1/contacts", headers=ws.headers)).json()["contacts"][0][
        "id"
    ]
    await client.post(
        f"/api/v1/contacts/{contact_id}/tags", json={"tag_id": tag["id"]}, headers=ws.headers
    )
    _, rows = read_export((await _export(client, ws.headers)).text)
    row = rows[0]
    assert row["first_name"] == "'=HYPERLINK(1)"
    assert row["last_name"] == "'+44 20"
    assert row["source"] == "'-import"
    assert row["custom.note"] == "'@SUM(A1)"
    assert row["custom.safe"] == "a=b"
    assert row["custom.balance"] == "'-5"
    assert row["tags"] == "'=cmd"


async def test_archived_only_with_status_archived(client, ws):
    keep = await create_contact(client, ws.headers, "keep@acme.io")
    gone = await create_contact(client, ws.headers, "arch@acme.io")
    assert keep
    response = await client.post(
        BULK, json={"action": "archive", "contact_ids": [gone["id"]]}, headers=ws.headers
    )
    assert response.status_code == 200
    _, rows = read_export((await _export(client, ws.headers)).text, strict=False)
    assert [r["email"] for r in rows] == ["keep@acme.io"]
    _, archived = read_export(
        (await _export(client, ws.headers, status="archived")).text, strict=False
    )
    assert [(r["email"], r["status"]) for r in archived] == [("arch@acme.io", "archived")]


async def test_filters(client, ws):
    a = await create_contact(client, ws.headers, "alpha@acme.io", first_name="Zed")
    b = await create_contact(client, ws.headers, "beta@acme.io", source="form")
    await create_contact(client, ws.headers, "gamma@acme.io")
    await set_status(client, ws.headers, b["id"], "unsubscribed")
    tag = await create_tag(client, ws.headers, "t")
    await client.post(
        f"/api/v1/contacts/{a['id']}/tags", json={"tag_id": tag["id"]}, headers=ws.headers
    )
    news = await create_list(client, ws.headers, "News")
    await client.post(
        f"/api/v1/lists/{news['id']}/contacts", json={"contact_ids": [a["id"]]}, headers=ws.headers
    )

    async def emails(**params):
        _, rows = read_export((await _export(client, ws.headers, **params)).text, strict=False)
        return sorted(r["email"] for r in rows)

    assert await emails() == ["alpha@acme.io", "beta@acme.io", "gamma@acme.io"]
    assert await emails(status="unsubscribed") == ["beta@acme.io"]
    assert await emails(q="zed") == ["alpha@acme.io"]
    assert await emails(q="GAMMA") == ["gamma@acme.io"]
    assert await emails(tag=tag["id"]) == ["alpha@acme.io"]
    assert await emails(list=news["id"]) == ["alpha@acme.io"]
    assert await emails(source="form") == ["beta@acme.io"]
    assert await emails(**{"from": "2000-01-01"}) == [
        "alpha@acme.io",
        "beta@acme.io",
        "gamma@acme.io",
    ]
    assert await emails(to="2000-01-01") == []
    day = a["created_at"][:10]
    assert await emails(to=day) == ["alpha@acme.io", "beta@acme.io", "gamma@acme.io"]
    assert await emails(**{"from": "2999-01-01"}) == []


async def test_no_page_limit(client, ws):
    rows = [["email"], *([f"n{i:03d}@acme.io"] for i in range(250))]
    await import_rows(client, ws.headers, rows)
    _, exported = read_export((await _export(client, ws.headers)).text, strict=False)
    assert len(exported) == 250


async def test_imported_values_round_trip(client, ws):
    rows = [
        ["email", "first_name", "status", "tags", "plan", "subscribed_at", "unsubscribed_at"],
        [
            "rt@acme.io",
            "Rita",
            "bounced",
            "x;y",
            "=1+2",
            "2021-06-01T10:30:00+02:00",
            "2022-03-04",
        ],
    ]
    await import_rows(client, ws.headers, rows)
    _, exported = read_export((await _export(client, ws.headers, status="bounced")).text)
    assert len(exported) == 1
    row = exported[0]
    assert row["status"] == "bounced"
    assert sorted(row["tags"].split(";")) == ["x", "y"]
    assert row["custom.plan"] == "'=1+2"
    assert row["source"] == "import"
    assert when(row["subscribed_at"]) == datetime(2021, 6, 1, 8, 30, tzinfo=UTC)
    assert when(row["unsubscribed_at"]) == datetime(2022, 3, 4, tzinfo=UTC)


async def test_needs_contacts_export(client, ws, factory):
    await create_contact(client, ws.headers, "secret@acme.io")
    headers = await factory.key(ws, "contacts:read,contacts:write")
    response = await client.get(EXPORT, headers=headers)
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: contacts:export permission required"}
    only_export = await factory.key(ws, "contacts:export")
    allowed = await client.get(EXPORT, headers=only_export)
    assert allowed.status_code == 200
    assert "secret@acme.io" in allowed.text


async def test_other_workspaces_never_exported(client, ws, factory):
    other = await factory.workspace()
    await create_contact(client, other.headers, "theirs@acme.io", custom_fields={"x": "1"})
    await create_contact(client, ws.headers, "mine@acme.io")
    text = (await _export(client, ws.headers)).text
    assert "theirs@acme.io" not in text
    header, _ = read_export(text, strict=False)
    assert header == COLUMNS


async def test_registered_field_nobody_uses_is_not_a_column(client, ws):
    response = await client.post(
        "/api/v1/custom-fields", json={"key": "unused", "type": "text"}, headers=ws.headers
    )
    assert response.status_code == 201, response.text
    await create_contact(client, ws.headers, "u@acme.io", custom_fields={"used": "yes"})
    header, rows = read_export((await _export(client, ws.headers)).text)
    assert header == [*COLUMNS, "custom.used"]
    assert rows[0]["custom.used"] == "yes"
