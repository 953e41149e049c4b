"""POST /contacts/import, the file itself: exports of other tools, delimiters, BOM, quoting,
the 5 MB limit, empty files and malformed requests."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.spec_bulk_import.helpers import (
    IMPORT,
    get,
    import_ok,
    make_csv,
    tag_names,
    total,
    upload,
    when,
)

MB5 = 5 * 1024 * 1024


async def test_mailchimp_style_export(client, ws):
    content = make_csv(
        [
            [
                "Email Address",
                "First Name",
                "Last Name",
                "MEMBER_RATING",
                "OPTIN_TIME",
                "OPTIN_IP",
                "Status",
                "TAGS",
            ],
            [
                "Ana.Silva@Acme.io",
                "Ana",
                "Silva",
                "4",
                "2023-03-14 09:26:53",
                "198.51.100.7",
                "subscribed",
                "Customers;VIP",
            ],
            ["bo@acme.io", "Bo", "Li", "2", "2022-11-02 18:00:00", "", "cleaned", ""],
            ["cy@acme.io", "Cy", "", "1", "2021-01-05 07:30:00", "", "unsubscribed", ""],
        ]
    )
    body = await import_ok(client, ws.headers, content)
    assert body["imported"] == 3
    assert body["invalid"] == 0
    assert body["dropped_columns"] == []
    ana = await get(client, ws.headers, "ana.silva@acme.io")
    assert (ana["first_name"], ana["last_name"], ana["status"]) == ("Ana", "Silva", "subscribed")
    assert ana["custom_fields"]["member_rating"] == "4"
    assert ana["custom_fields"]["optin_ip"] == "198.51.100.7"
    assert when(ana["subscribed_at"]) == datetime(2023, 3, 14, 9, 26, 53, tzinfo=UTC)
    assert ana["source"] == "import"
    assert {"member_rating", "optin_ip"} <= set(body["custom_field_keys"])
    bo = await get(client, ws.headers, "bo@acme.io")
    assert bo["status"] == "bounced"  # cleaned = bounced
    assert "status" not in bo["custom_fields"] and "tags" not in bo["custom_fields"]
    assert (await get(client, ws.headers, "cy@acme.io"))["status"] == "unsubscribed"
    assert tag_names(ana) == {"Customers", "VIP"}


@pytest.mark.parametrize("delimiter", [";", "\t"])
async def test_semicolon_and_tab_delimiters(client, ws, delimiter):
    content = make_csv(
        [
            ["email", "first_name", "last_name", "city", "tags"],
            ["semi@acme.io", "Jean", "Dupont, Jr", "Paris", "x|y"],
            ["two@acme.io", "Marie", "Curie", "Lyon", "y;z"],
        ],
        delimiter=delimiter,
    )
    body = await import_ok(client, ws.headers, content)
    assert body["imported"] == 2 and body["invalid"] == 0
    jean = await get(client, ws.headers, "semi@acme.io")
    assert jean["first_name"] == "Jean"
    assert jean["last_name"] == "Dupont, Jr"
    assert jean["custom_fields"] == {"city": "Paris"}
    assert tag_names(jean) == {"x", "y"}
    assert tag_names(await get(client, ws.headers, "two@acme.io")) == {"y", "z"}


async def test_utf8_bom_is_ignored(client, ws):
    content = make_csv(
        [["Email", "Prénom", "Nom de famille"], ["bom@acme.io", "Zoë", "Ñúñez"]], bom=True
    )
    body = await import_ok(client, ws.headers, content)
    assert body["imported"] == 1 and body["invalid"] == 0
    contact = await get(client, ws.headers, "bom@acme.io")
    assert contact["status"] == "subscribed"
    # The header with the BOM still matched `email`; accented headers become snake_case keys.
    assert contact["custom_fields"] == {"prenom": "Zoë", "nom_de_famille": "Ñúñez"}


async def test_quoted_fields_with_embedded_newlines_and_commas(client, ws):
    content = (
        b"email,first_name,last_name,notes\r\n"
        b'"q1@acme.io","Mary, Ann","O\'Neil","line one\nline two, with comma"\r\n'
        b'q2@acme.io,"He said ""hi""",Smith,"a\r\nb"\r\n'
    )
    body = await import_ok(client, ws.headers, content)
    assert body["imported"] == 2 and body["invalid"] == 0
    one = await get(client, ws.headers, "q1@acme.io")
    assert one["first_name"] == "Mary, Ann"
    assert one["last_name"] == "O'Neil"
    assert one["custom_fields"]["notes"] == "line one\nline two, with comma"
    two = await get(client, ws.headers, "q2@acme.io")
    assert two["first_name"] == 'He said "hi"'
    assert two["custom_fields"]["notes"] == "a\r\nb"


async def test_header_case_spaces_and_punctuation_fold(client, ws):
    content = make_csv(
        [
            ["E-Mail", "FIRST NAME", "last.name", "Status ", "Sign-up Date!"],
            ["fold@acme.io", "Fa", "Fb", " Active ", "2020-02-02"],
        ]
    )
    await import_ok(client, ws.headers, content)
    contact = await get(client, ws.headers, "fold@acme.io")
    assert (contact["first_name"], contact["last_name"]) == ("Fa", "Fb")
    assert contact["status"] == "subscribed"
    assert contact["custom_fields"] == {"sign_up_date": "2020-02-02"}


async def test_file_over_5_mb_is_413_and_nothing_written(client, ws):
    head = b"email,first_name\r\nbig@acme.io,Big\r\n"
    content = head + b"\n" * (MB5 + 1 - len(head))
    assert len(content) == MB5 + 1
    response = await upload(client, ws.headers, content)
    assert response.status_code == 413
    assert isinstance(response.json()["error"], str)
    assert "5 MB" in response.json()["error"]
    assert await total(client, ws.headers) == 0


async def test_file_of_five_million_bytes_is_accepted(client, ws):
    head = b"email,first_name\r\nalmost@acme.io,Al\r\n"
    content = head + b"\n" * (5_000_000 - len(head))
    body = await import_ok(client, ws.headers, content)
    assert body["imported"] == 1


@pytest.mark.parametrize(
    "content",
    [b"", b"email,first_name,last_name\r\n", b"\xef\xbb\xbfemail\n\n\n"],
    ids=["empty", "header-only", "bom-header-blank-lines"],
)
async def test_no_rows_is_422_with_counts(client, ws, content):
    response = await upload(client, ws.headers, content)
    assert response.status_code == 422
    body = response.json()
    assert body["error"].startswith("No valid contacts found")
    assert body["invalid"] == 0
    assert body["skipped_unconfirmed"] == 0


async def test_only_invalid_or_pending_rows_is_422_with_counts(client, ws):
    content = make_csv(
        [
            ["email", "status"],
            ["not-an-address", ""],
            ["p1@acme.io", "pending"],
            ["p2@acme.io", "unconfirmed"],
            ["x@acme.io", "vip"],
        ]
    )
    response = await upload(client, ws.headers, content)
    assert response.status_code == 422
    body = response.json()
    assert body["error"].startswith("No valid contacts found")
    assert body["invalid"] == 2
    assert body["skipped_unconfirmed"] == 2
    assert await total(client, ws.headers) == 0


async def test_file_without_email_column_imports_nothing(client, ws):
    content = make_csv([["name", "city"], ["Ann", "Oslo"]])
    response = await upload(client, ws.headers, content)
    assert response.status_code == 422
    assert "invalid" in response.json() and "skipped_unconfirmed" in response.json()


async def test_not_multipart_is_400(client, ws):
    response = await client.post(IMPORT, json={"file": "email\na@acme.io"}, headers=ws.headers)
    assert response.status_code == 400
    assert isinstance(response.json()["error"], str)
    urlencoded = await client.post(IMPORT, data={"file": "email\na@acme.io"}, headers=ws.headers)
    assert urlencoded.status_code == 400


async def test_missing_file_field_is_400(client, ws):
    response = await client.post(
        IMPORT,
        files={"upload": ("c.csv", b"email\r\nm@acme.io\r\n", "text/csv")},
        data={"default_status": "subscribed"},
        headers=ws.headers,
    )
    assert response.status_code == 400
    assert "file" in response.json()["error"]
    assert await total(client, ws.headers) == 0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("default_status", "bounced"),
        ("default_status", "pending"),
        ("default_status", "yes"),
        ("skip_duplicates", "maybe"),
        ("skip_duplicates", "2"),
    ],
)
async def test_bad_option_values_are_400(client, ws, field, value):
    content = make_csv([["email"], ["opt@acme.io"]])
    response = await upload(client, ws.headers, content, **{field: value})
    assert response.status_code == 400
    assert field in response.json()["error"]
    assert await total(client, ws.headers) == 0


async def test_import_needs_contacts_write(client, factory):
    workspace = await factory.workspace(permissions="contacts:read,contacts:export")
    response = await upload(client, workspace.headers, make_csv([["email"], ["w@acme.io"]]))
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: contacts:write permission required"}


async def test_import_without_key_is_401(client):
    response = await upload(client, {}, make_csv([["email"], ["w@acme.io"]]))
    assert response.status_code == 401
    assert response.json() == {"error": "Unauthorized"}


async def test_unparseable_multipart_body_is_400(client, ws):
    response = await client.post(
        IMPORT,
        content=b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n',
        headers={**ws.headers, "content-type": "multipart/form-data; boundary=xyz"},
    )
    assert response.status_code == 400
    assert isinstance(response.json()["error"], str)
