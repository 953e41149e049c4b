"""What one upload may cost: at most 50,000 rows (the spec's "about 50,000" as a hard bound),
at most 1,000 full address checks, and no input that turns into a 500 (a deeply nested
`mapping` raised RecursionError). Each refusal keeps nothing of the upload."""

from __future__ import annotations

import csv
import io

import pytest

ROWS = "File too large: CSV uploads are limited to 50,000 rows; split the file"


def unusual(what: str) -> str:
    return (
        f"The {what} has more than 1,000 distinct addresses or domains in an unusual form "
        "(non-ASCII or odd punctuation); split it"
    )


async def _import(client, headers, content: bytes, **fields: str):
    return await client.post(
        "/api/v1/contacts/import",
        files={"file": ("c.csv", content, "text/csv")},
        data=fields,
        headers=headers,
    )


async def _total(client, headers) -> int:
    response = await client.get("/api/v1/contacts", headers=headers)
    return int(response.json()["pagination"]["total"])


async def test_more_than_50000_rows_is_413_and_keeps_nothing(client, factory):
    ws = await factory.workspace("business")
    rows = "".join(f"{i}@b.io\n" for i in range(50_001))
    response = await _import(client, ws.headers, f"email\n{rows}".encode())
    assert response.status_code == 413
    assert response.json() == {"error": ROWS}
    assert await _total(client, ws.headers) == 0


async def test_row_limit_also_without_an_email_column(client, factory):
    ws = await factory.workspace("business")
    rows = "x\n" * 50_001
    response = await _import(client, ws.headers, f"name\n{rows}".encode())
    assert response.status_code == 413
    assert response.json() == {"error": ROWS}


async def test_non_ascii_domains_import_within_the_check_budget(client, ws):
    # Many addresses, few distinct unusual domains: one full check per domain.
    rows = "".join(f"p{i}@dö{i % 50}.de\n" for i in range(3000))
    response = await _import(client, ws.headers, f"email\n{rows}".encode())
    assert response.status_code == 200, response.text
    assert response.json()["imported"] == 3000
    found = await client.get("/api/v1/contacts", params={"q": "p7@dö7.de"}, headers=ws.headers)
    assert [c["email"] for c in found.json()["contacts"]] == ["p7@dö7.de"]


async def test_too_many_unusual_addresses_is_400_and_keeps_nothing(client, factory):
    ws = await factory.workspace("business")
    rows = "".join(f"p{i}@dö{i}.de\n" for i in range(1001))
    response = await _import(client, ws.headers, f"email\nok@plain.io\n{rows}".encode())
    assert response.status_code == 400
    assert response.json() == {"error": unusual("file")}
    assert await _total(client, ws.headers) == 0


async def test_unusual_addresses_are_judged_as_one_at_a_time(client, ws):
    rows = [
        "jörg@gmail.com",  # non-ASCII local part: valid
        "ann@münchen.de",  # non-ASCII domain: valid
        '"quoted"@acme.io',  # quoted local part: refused
        "a..b@acme.io",  # two dots
        "x@dö_.de",  # underscore in a domain
        "y@" + ".".join(["ü" * 20] * 11),  # too long once IDNA-encoded
    ]
    text = io.StringIO()
    csv.writer(text).writerows([["email"], *([r] for r in rows)])
    content = text.getvalue().encode()
    response = await _import(client, ws.headers, content)
    assert response.status_code == 200, response.text
    assert response.json()["imported"] == 2
    assert response.json()["invalid"] == 4
    for email in rows[:2]:
        checked = await client.post("/api/v1/contacts", json={"email": email}, headers=ws.headers)
        assert checked.status_code == 409  # the API judges them the same: already there


@pytest.mark.parametrize("field", ["mapping", "new_fields"])
@pytest.mark.parametrize("depth", [100_000, 2_000])
async def test_deeply_nested_json_option_is_400(client, ws, field, depth):
    nested = "[" * depth + "]" * depth
    response = await _import(client, ws.headers, b"email\na@b.io\n", **{field: nested})
    assert response.status_code == 400
    assert response.json() == {"error": f"{field} is nested too deeply"}
    assert await _total(client, ws.headers) == 0


async def test_suppression_json_checks_are_bounded(client, ws):
    entries = [f"p{i}@dö{i}.de" for i in range(1001)]
    response = await client.post(
        "/api/v1/suppressions", json={"entries": entries}, headers=ws.headers
    )
    assert response.status_code == 400
    assert response.json() == {"error": unusual("request")}
    summary = await client.get("/api/v1/suppressions", headers=ws.headers)
    assert summary.json()["count"] == 0


async def test_suppression_csv_over_50000_rows_is_413(client, ws):
    rows = "".join(f"{i}@b.io\n" for i in range(50_001))
    response = await client.post(
        "/api/v1/suppressions",
        files={"file": ("s.csv", f"email\n{rows}".encode(), "text/csv")},
        headers=ws.headers,
    )
    assert response.status_code == 413
    assert response.json() == {"error": ROWS}
    summary = await client.get("/api/v1/suppressions", headers=ws.headers)
    assert summary.json()["count"] == 0
