"""Spec, Suppressions: GET /api/v1/suppressions/list and the suppression list row."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime

import pytest

from tests.suppressions.helpers import API, add_ok, create_contact, listing, rows

ROW_KEYS = {
    "email_hash",
    "reason",
    "source",
    "created_at",
    "email_masked",
    "email_domain",
    "contact",
    "liftable",
}


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def test_empty_list(client, ws):
    page = await listing(client, ws.headers)
    assert page["suppressions"] == []
    assert page["details_available"] is True
    assert page["pagination"]["total"] == 0
    assert page["pagination"]["page"] == 1
    assert set(page["pagination"]) == {"page", "limit", "total", "total_pages"}


async def test_row_fields_for_an_imported_address(client, ws):
    await add_ok(client, ws.headers, ["jane.doe@Example.org"], reason="bounced")
    page = await listing(client, ws.headers)
    assert set(page) == {"suppressions", "pagination", "details_available"}
    assert page["details_available"] is True
    [row] = page["suppressions"]
    assert set(row) == ROW_KEYS
    assert isinstance(row["email_hash"], str) and row["email_hash"]
    assert "jane" not in row["email_hash"]
    assert row["reason"] == "bounced"
    assert isinstance(row["source"], str) and row["source"]
    parse_time(row["created_at"])
    assert isinstance(row["email_masked"], str)
    assert row["email_masked"] != "jane.doe@example.org"
    assert "jane.doe" not in row["email_masked"]
    assert row["email_domain"] == "example.org"
    assert row["contact"] is None
    assert row["liftable"] is False


async def test_row_names_the_existing_contact(client, ws):
    contact = await create_contact(client, ws.headers, "member@shop.io")
    await add_ok(client, ws.headers, ["member@shop.io"], reason="complained")
    [row] = await rows(client, ws.headers)
    assert row["contact"] == {
        "id": contact["id"],
        "email": "member@shop.io",
        "status": "complained",
    }
    assert row["email_domain"] == "shop.io"


async def test_hash_is_stable_per_address(client, ws):
    await add_ok(client, ws.headers, ["stable@shop.io"])
    [first] = await rows(client, ws.headers)
    await add_ok(client, ws.headers, ["STABLE@shop.io"], reason="bounced")
    [second] = await rows(client, ws.headers)
    assert first["email_hash"] == second["email_hash"]
    assert second["reason"] == "bounced"


async def test_newest_first(client, ws):
    for email in ("x@first.io", "x@second.io", "x@third.io"):
        await add_ok(client, ws.headers, [email])
        await asyncio.sleep(0.01)
    found = await rows(client, ws.headers)
    domains_in_order = [row["email_domain"] for row in found]
    assert domains_in_order == ["third.io", "second.io", "first.io"]
    times = [parse_time(row["created_at"]) for row in found]
    assert times == sorted(times, reverse=True)


async def test_reason_filter(client, ws):
    await add_ok(client, ws.headers, ["u@shop.io"])
    await add_ok(client, ws.headers, ["b@shop.io", "b2@shop.io"], reason="bounced")
    await add_ok(client, ws.headers, ["c@shop.io"], reason="complained")
    contact = await create_contact(client, ws.headers, "d@shop.io")
    await client.delete(f"/api/v1/contacts/{contact['id']}", headers=ws.headers)
    expected = {"unsubscribed": 1, "bounced": 2, "complained": 1, "deleted": 1}
    for reason, count in expected.items():
        page = await listing(client, ws.headers, reason=reason)
        assert page["pagination"]["total"] == count
        assert {row["reason"] for row in page["suppressions"]} == {reason}
    assert (await listing(client, ws.headers))["pagination"]["total"] == 5


@pytest.mark.parametrize("bad", ["spam", "Bounced", "erased", "all"])
async def test_bad_reason_filter_is_400(client, ws, bad):
    response = await client.get(f"{API}/list", params={"reason": bad}, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {
        "error": "reason must be one of unsubscribed, bounced, complained, deleted"
    }


async def test_domain_filter_is_case_insensitive_substring(client, ws):
    await add_ok(client, ws.headers, ["a@Mail.Example.org", "b@other.net", "c@example.org"])
    for needle in ("example", "EXAMPLE.ORG", "ample.o", "Mail"):
        found = await rows(client, ws.headers, domain=needle)
        assert sorted(row["email_domain"] for row in found) == sorted(
            d for d in ("mail.example.org", "example.org") if needle.lower() in d
        ), needle
    assert [r["email_domain"] for r in await rows(client, ws.headers, domain="other")] == [
        "other.net"
    ]
    assert await rows(client, ws.headers, domain="nowhere") == []


@pytest.mark.parametrize("needle", ["%", "_", "o_her"])
async def test_domain_filter_treats_wildcards_literally(client, ws, needle):
    await add_ok(client, ws.headers, ["a@shop.io", "b@other.net"])
    assert await rows(client, ws.headers, domain=needle) == []


async def test_domain_and_reason_filters_combine(client, ws):
    await add_ok(client, ws.headers, ["a@shop.io", "b@mall.io"])
    await add_ok(client, ws.headers, ["c@shop.io"], reason="bounced")
    found = await rows(client, ws.headers, domain="shop", reason="bounced")
    assert [(r["email_domain"], r["reason"]) for r in found] == [("shop.io", "bounced")]


async def test_pagination(client, ws):
    for i in range(5):
        await add_ok(client, ws.headers, [f"p{i}@shop.io"])
        await asyncio.sleep(0.005)
    page1 = await listing(client, ws.headers, limit=2)
    assert page1["pagination"] == {"page": 1, "limit": 2, "total": 5, "total_pages": 3}
    page2 = await listing(client, ws.headers, limit=2, page=2)
    assert page2["pagination"] == {"page": 2, "limit": 2, "total": 5, "total_pages": 3}
    page3 = await listing(client, ws.headers, limit=2, page=3)
    assert len(page3["suppressions"]) == 1
    hashes = [row["email_hash"] for page in (page1, page2, page3) for row in page["suppressions"]]
    assert len(hashes) == 5 == len(set(hashes))
    whole = [row["email_hash"] for row in await rows(client, ws.headers)]
    assert hashes == whole


async def test_default_limit_is_50(client, ws):
    await add_ok(client, ws.headers, [f"n{i}@shop.io" for i in range(60)])
    page = await listing(client, ws.headers)
    assert page["pagination"]["limit"] == 50
    assert page["pagination"]["total"] == 60
    assert page["pagination"]["total_pages"] == 2
    assert len(page["suppressions"]) == 50


async def test_deleted_and_erased_rows(client, ws):
    kept = await create_contact(client, ws.headers, "kept.person@shop.io")
    gone = await create_contact(client, ws.headers, "gone.person@erase.io")
    await client.delete(f"/api/v1/contacts/{kept['id']}", headers=ws.headers)
    await client.delete(
        f"/api/v1/contacts/{gone['id']}", params={"mode": "erase"}, headers=ws.headers
    )
    by_domain = {}
    for row in await rows(client, ws.headers, reason="deleted"):
        by_domain[row["email_domain"]] = row
    deleted = by_domain["shop.io"]
    assert deleted["reason"] == "deleted"
    assert deleted["liftable"] is True
    assert deleted["contact"] is None
    assert isinstance(deleted["email_masked"], str)
    assert "kept.person" not in deleted["email_masked"]
    erased = by_domain[None]
    assert erased["reason"] == "deleted"
    assert erased["email_masked"] is None
    assert erased["email_domain"] is None
    assert erased["contact"] is None
    assert erased["liftable"] is False
    assert re.fullmatch(r"\S+", erased["email_hash"])


async def test_list_needs_contacts_read(client, ws, factory):
    reader = await factory.key(ws, "contacts:read")
    assert (await client.get(f"{API}/list", headers=reader)).status_code == 200
    other = await factory.key(ws, "contacts:write")
    response = await client.get(f"{API}/list", headers=other)
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: contacts:read permission required"}
