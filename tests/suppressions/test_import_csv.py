"""Spec, Suppressions: POST /api/v1/suppressions as multipart with a CSV `file`."""

from __future__ import annotations

import pytest

from tests.suppressions.helpers import (
    API,
    address_of_length,
    contact_total,
    counts_add_up,
    create_contact,
    get_contact,
    lookup,
    summary,
    upload,
)

FIVE_MB = 5 * 1024 * 1024


async def test_csv_with_email_and_reason_columns(client, ws):
    content = (
        b"email,reason\n"
        b"a@shop.io,bounced\n"
        b"b@shop.io,spam\n"
        b"c@shop.io,\n"
        b"d@shop.io,opted out\n"
        b"e@shop.io,hard bounce\n"
    )
    response = await upload(client, ws.headers, content)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["received"] == 5
    assert result["added"] == 5
    assert result["invalid"] == 0
    assert result["by_reason"] == {"unsubscribed": 2, "bounced": 2, "complained": 1}
    assert counts_add_up(result)
    expected = {
        "a@shop.io": "bounced",
        "b@shop.io": "complained",
        "c@shop.io": "unsubscribed",
        "d@shop.io": "unsubscribed",
        "e@shop.io": "bounced",
    }
    for email, reason in expected.items():
        assert (await lookup(client, ws.headers, email))["reason"] == reason


async def test_csv_reason_column_can_come_first(client, ws):
    content = b"reason,email\ncomplaint,first@shop.io\n"
    response = await upload(client, ws.headers, content)
    assert response.status_code == 200, response.text
    assert response.json()["by_reason"]["complained"] == 1
    assert (await lookup(client, ws.headers, "first@shop.io"))["reason"] == "complained"


async def test_csv_with_only_an_email_header_defaults_to_unsubscribed(client, ws):
    content = b"email\nx@shop.io\ny@shop.io\n"
    response = await upload(client, ws.headers, content)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["received"] == 2
    assert result["added"] == 2
    assert result["by_reason"] == {"unsubscribed": 2, "bounced": 0, "complained": 0}


async def test_bare_addresses_one_per_line(client, ws):
    content = b"one@shop.io\ntwo@shop.io\nthree@shop.io\n"
    response = await upload(client, ws.headers, content, filename="list.txt")
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["received"] == 3
    assert result["added"] == 3
    for email in ("one@shop.io", "two@shop.io", "three@shop.io"):
        assert (await lookup(client, ws.headers, email))["suppressed"] is True


async def test_byte_order_mark_is_ignored(client, ws):
    content = "\ufeffemail,reason\r\nbom@shop.io,bounced\r\n".encode()
    response = await upload(client, ws.headers, content)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["added"] == 1
    assert result["invalid"] == 0
    assert (await lookup(client, ws.headers, "bom@shop.io"))["reason"] == "bounced"


async def test_byte_order_mark_before_bare_addresses(client, ws):
    content = "\ufeffbare@shop.io\nsecond@shop.io\n".encode()
    response = await upload(client, ws.headers, content)
    assert response.status_code == 200, response.text
    assert response.json()["added"] == 2
    assert (await lookup(client, ws.headers, "bare@shop.io"))["suppressed"] is True


async def test_semicolon_delimiter(client, ws):
    content = b"email;reason\nsemi@shop.io;complained\nother@shop.io;cleaned\n"
    response = await upload(client, ws.headers, content)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["added"] == 2
    assert result["invalid"] == 0
    assert (await lookup(client, ws.headers, "semi@shop.io"))["reason"] == "complained"
    assert (await lookup(client, ws.headers, "other@shop.io"))["reason"] == "bounced"


async def test_quoted_cells_and_crlf(client, ws):
    content = b'"email","reason"\r\n"Quoted@Shop.io","junk"\r\n'
    response = await upload(client, ws.headers, content)
    assert response.status_code == 200, response.text
    assert (await lookup(client, ws.headers, "quoted@shop.io"))["reason"] == "complained"


async def test_csv_invalid_rows_and_duplicates(client, ws):
    content = (
        b"email,reason\n"
        b"good@shop.io,bounced\n"
        b"not-an-address,bounced\n"
        b"good@shop.io,unsubscribed\n"
        b"bad-reason@shop.io,whatever\n"
        b"deleted@shop.io,deleted\n"
        b"," + b"\n"
    )
    response = await upload(client, ws.headers, content)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["received"] == 6
    assert result["added"] == 1
    assert result["unchanged"] == 1
    assert result["invalid"] == 4
    assert counts_add_up(result)
    assert (await lookup(client, ws.headers, "good@shop.io"))["reason"] == "bounced"
    assert (await lookup(client, ws.headers, "deleted@shop.io"))["suppressed"] is False
    assert (await summary(client, ws.headers))["count"] == 1


async def test_csv_upgrade_and_unchanged(client, ws):
    await upload(client, ws.headers, b"email\nw@shop.io\ns@shop.io\n")
    content = b"email,reason\nw@shop.io,bounced\ns@shop.io,unsubscribed\n"
    result = (await upload(client, ws.headers, content)).json()
    assert (result["added"], result["upgraded"], result["unchanged"]) == (0, 1, 1)
    assert (await lookup(client, ws.headers, "w@shop.io"))["reason"] == "bounced"


async def test_csv_switches_subscribed_contacts(client, ws):
    contact = await create_contact(client, ws.headers, "csvsub@shop.io")
    before = await contact_total(client, ws.headers)
    content = b"email,reason\ncsvsub@shop.io,complained\nnew@shop.io,complained\n"
    response = await upload(client, ws.headers, content)
    assert response.status_code == 200, response.text
    assert response.json()["contacts_updated"] == 1
    updated = await get_contact(client, ws.headers, contact["id"])
    assert updated["status"] == "complained"
    assert updated["unsubscribed_at"] is not None
    assert await contact_total(client, ws.headers) == before


async def test_csv_over_five_megabytes_is_413(client, ws):
    line = b"someone.with.a.long.address@padding-domain.io\n"
    content = b"email\n" + line * (FIVE_MB // len(line) + 10)
    assert len(content) > FIVE_MB
    response = await upload(client, ws.headers, content)
    assert response.status_code == 413
    assert "5 MB" in response.json()["error"]
    assert (await summary(client, ws.headers))["count"] == 0


async def test_csv_one_byte_over_five_megabytes_is_413(client, ws):
    head = b"email\nedge@shop.io\n"
    content = head + b" " * (FIVE_MB + 1 - len(head))
    assert len(content) == FIVE_MB + 1
    response = await upload(client, ws.headers, content)
    assert response.status_code == 413
    assert isinstance(response.json()["error"], str)
    assert (await summary(client, ws.headers))["count"] == 0


async def test_csv_just_under_the_limit_is_accepted(client, ws):
    head = b"email\nedge@shop.io\n"
    content = head + b"   \n" * ((4_900_000 - len(head)) // 4)
    assert len(content) < 5_000_000
    response = await upload(client, ws.headers, content)
    assert response.status_code == 200, response.text
    assert response.json()["added"] == 1


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"\n\n  \n", id="blank-lines"),
        pytest.param(b"email\n", id="header-only"),
        pytest.param(b"email,reason\r\n", id="header-only-two-columns"),
        pytest.param(b"name,company\nJane,Acme\nJohn,Corp\n", id="no-email-column"),
    ],
)
async def test_no_data_rows_or_no_email_column_is_422(client, ws, content):
    response = await upload(client, ws.headers, content)
    assert response.status_code == 422
    body = response.json()
    assert isinstance(body["error"], str)
    assert "invalid" in body
    assert isinstance(body["invalid"], int)
    assert (await summary(client, ws.headers))["count"] == 0


async def test_multipart_without_file_is_400(client, ws):
    response = await client.post(
        API, files={"other": ("x.csv", b"email\na@shop.io\n", "text/csv")}, headers=ws.headers
    )
    assert response.status_code == 400
    assert isinstance(response.json()["error"], str)
    assert (await summary(client, ws.headers))["count"] == 0


async def test_csv_import_needs_contacts_write(client, ws, factory):
    headers = await factory.key(ws, "contacts:read")
    response = await upload(client, headers, b"email\na@shop.io\n")
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: contacts:write permission required"}


async def test_short_row_without_reason_cell_uses_default(client, ws):
    content = b"email,reason\nshort@shop.io\nlong@shop.io,bounced\n"
    response = await upload(client, ws.headers, content)
    assert response.status_code == 200, response.text
    assert (await lookup(client, ws.headers, "short@shop.io"))["reason"] == "unsubscribed"
    assert (await lookup(client, ws.headers, "long@shop.io"))["reason"] == "bounced"


async def test_csv_over_254_character_address_is_invalid(client, ws):
    content = f"email\n{address_of_length(255)}\n{address_of_length(254)}\n".encode()
    response = await upload(client, ws.headers, content)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["received"] == 2
    assert result["invalid"] == 1
    assert result["added"] == 1
