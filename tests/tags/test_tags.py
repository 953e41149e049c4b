"""Tags (project design; the spec shows only a tag's shape on a contact): create, read, rename,
recolour, delete, listing, validation and permissions."""

from __future__ import annotations

import re

import httpx
import pytest

HEX = re.compile(r"^#[0-9a-fA-F]{6}$")
TAG_KEYS = {"id", "name", "color", "contact_count", "created_at", "updated_at"}


@pytest.fixture
async def raw_client(app):
    """Like `client`, but an unhandled error comes back as the 500 a user would get."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


async def create_tag(client, headers, name, **extra):
    response = await client.post("/api/v1/tags", json={"name": name, **extra}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["tag"]


async def create_contact(client, headers, email):
    response = await client.post("/api/v1/contacts", json={"email": email}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["contact"]


async def all_tags(client, headers, **params):
    response = await client.get("/api/v1/tags", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


# ---------------------------------------------------------------- create and read


async def test_create_returns_tag_and_get_reads_it_back(client, ws):
    response = await client.post(
        "/api/v1/tags", json={"name": "VIP", "color": "#2563EB"}, headers=ws.headers
    )
    assert response.status_code == 201
    tag = response.json()["tag"]
    assert set(tag) == TAG_KEYS
    assert tag["name"] == "VIP"
    assert tag["color"].lower() == "#2563eb"
    assert tag["contact_count"] == 0

    again = await client.get(f"/api/v1/tags/{tag['id']}", headers=ws.headers)
    assert again.status_code == 200
    assert again.json() == {"tag": tag}


async def test_colour_is_picked_when_absent(client, ws):
    first = await create_tag(client, ws.headers, "one")
    second = await create_tag(client, ws.headers, "two", color=None)
    assert HEX.match(first["color"]) and HEX.match(second["color"])


async def test_name_is_trimmed_and_inner_whitespace_collapsed(client, ws):
    tag = await create_tag(client, ws.headers, "  Summer   Sale  ")
    assert tag["name"] == "Summer Sale"


async def test_name_of_exactly_60_characters_is_accepted(client, ws):
    tag = await create_tag(client, ws.headers, "n" * 60)
    assert tag["name"] == "n" * 60


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({}, "name is required"),
        ({"name": None}, "name is required"),
        ({"name": ""}, "name is required"),
        ({"name": "   "}, "name is required"),
        ({"name": 5}, "name must be a string"),
        ({"name": "x" * 61}, "name must be 60 characters or fewer"),
        ({"name": "ok", "color": "red"}, "color must be a hex colour like #2563eb"),
        ({"name": "ok", "color": "#12345"}, "color must be a hex colour like #2563eb"),
        ({"name": "ok", "color": "#1234567"}, "color must be a hex colour like #2563eb"),
        ({"name": "ok", "color": "123456"}, "color must be a hex colour like #2563eb"),
        ({"name": "ok", "color": "#ggg000"}, "color must be a hex colour like #2563eb"),
        ({"name": "ok", "color": ""}, "color must be a hex colour like #2563eb"),
        ({"name": "ok", "color": 123}, "color must be a string"),
    ],
)
async def test_invalid_create_is_400_and_stores_nothing(client, ws, payload, message):
    response = await client.post("/api/v1/tags", json=payload, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert (await all_tags(client, ws.headers))["tags"] == []


@pytest.mark.parametrize("duplicate", ["VIP", "vip", "Vip", "  vIP  "])
async def test_duplicate_name_ignoring_case_is_409(client, ws, duplicate):
    original = await create_tag(client, ws.headers, "VIP")
    response = await client.post("/api/v1/tags", json={"name": duplicate}, headers=ws.headers)
    assert response.status_code == 409
    assert response.json()["error"] == "A tag with this name already exists"
    listed = await all_tags(client, ws.headers)
    assert [t["id"] for t in listed["tags"]] == [original["id"]]
    assert listed["tags"][0]["name"] == "VIP"


async def test_unknown_tag_is_404(client, ws):
    for method in ("GET", "DELETE"):
        response = await client.request(method, "/api/v1/tags/no-such-tag", headers=ws.headers)
        assert response.status_code == 404
        assert response.json() == {"error": "Tag not found"}
    response = await client.patch(
        "/api/v1/tags/no-such-tag", json={"name": "x"}, headers=ws.headers
    )
    assert response.status_code == 404
    assert response.json() == {"error": "Tag not found"}


async def test_over_long_id_is_404_not_500(client, ws):
    long_id = "f" * 200
    response = await client.get(f"/api/v1/tags/{long_id}", headers=ws.headers)
    assert response.status_code == 404
    assert response.json() == {"error": "Tag not found"}


async def test_name_whose_lowercase_is_longer_still_fits(raw_client, ws):
    # "İ" lowercases to two characters; a 60-character name is still within the limit.
    name = "İstanbul " + "x" * 51
    assert len(name) == 60
    response = await raw_client.post("/api/v1/tags", json={"name": name}, headers=ws.headers)
    assert response.status_code == 201, response.text
    tag = response.json()["tag"]
    stored = await raw_client.get(f"/api/v1/tags/{tag['id']}", headers=ws.headers)
    assert stored.json()["tag"]["name"] == name


async def test_nul_character_in_name_is_refused_or_kept_never_500(raw_client, ws):
    response = await raw_client.post("/api/v1/tags", json={"name": "a\x00b"}, headers=ws.headers)
    assert response.status_code in (201, 400), response.text
    if response.status_code == 201:
        tag_id = response.json()["tag"]["id"]
        stored = await raw_client.get(f"/api/v1/tags/{tag_id}", headers=ws.headers)
        assert stored.json()["tag"]["name"] == "a\x00b"


async def test_id_with_nul_character_is_404(raw_client, ws):
    response = await raw_client.get("/api/v1/tags/a%00b", headers=ws.headers)
    assert response.status_code == 404, response.text
    assert response.json()["error"] in {"Tag not found", "Not Found"}


# ---------------------------------------------------------------- update


async def test_rename_and_recolour_are_stored(client, ws):
    tag = await create_tag(client, ws.headers, "old", color="#000000")
    response = await client.patch(
        f"/api/v1/tags/{tag['id']}",
        json={"name": "New Name", "color": "#ABCDEF"},
        headers=ws.headers,
    )
    assert response.status_code == 200
    updated = response.json()["tag"]
    assert updated["id"] == tag["id"]
    assert updated["name"] == "New Name"
    assert updated["color"].lower() == "#abcdef"

    stored = (await client.get(f"/api/v1/tags/{tag['id']}", headers=ws.headers)).json()["tag"]
    assert stored["name"] == "New Name"
    assert stored["color"].lower() == "#abcdef"
    assert stored["created_at"] == tag["created_at"]


async def test_colour_only_keeps_name(client, ws):
    tag = await create_tag(client, ws.headers, "keep")
    response = await client.patch(
        f"/api/v1/tags/{tag['id']}", json={"color": "#111111"}, headers=ws.headers
    )
    assert response.status_code == 200
    assert response.json()["tag"]["name"] == "keep"


async def test_changing_only_the_case_of_own_name_is_allowed(client, ws):
    tag = await create_tag(client, ws.headers, "vip")
    response = await client.patch(
        f"/api/v1/tags/{tag['id']}", json={"name": "VIP"}, headers=ws.headers
    )
    assert response.status_code == 200
    assert response.json()["tag"]["name"] == "VIP"


async def test_rename_to_another_tags_name_is_409_and_changes_nothing(client, ws):
    await create_tag(client, ws.headers, "Customers")
    other = await create_tag(client, ws.headers, "Leads")
    response = await client.patch(
        f"/api/v1/tags/{other['id']}", json={"name": "CUSTOMERS"}, headers=ws.headers
    )
    assert response.status_code == 409
    assert response.json()["error"] == "A tag with this name already exists"
    stored = (await client.get(f"/api/v1/tags/{other['id']}", headers=ws.headers)).json()["tag"]
    assert stored["name"] == "Leads"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({}, "No updatable fields provided"),
        ({"name": None}, "name is required"),
        ({"name": " "}, "name is required"),
        ({"name": "x" * 61}, "name must be 60 characters or fewer"),
        ({"color": "blue"}, "color must be a hex colour like #2563eb"),
        ({"color": None}, "color must be a hex colour like #2563eb"),
        ({"bogus": 1}, "Unknown field(s): bogus"),
    ],
)
async def test_invalid_update_is_400_and_changes_nothing(client, ws, payload, message):
    tag = await create_tag(client, ws.headers, "stay", color="#222222")
    response = await client.patch(f"/api/v1/tags/{tag['id']}", json=payload, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": message}
    stored = (await client.get(f"/api/v1/tags/{tag['id']}", headers=ws.headers)).json()["tag"]
    assert stored["name"] == "stay" and stored["color"] == "#222222"


# ---------------------------------------------------------------- delete


async def test_delete_untags_contacts_then_tag_is_gone(client, ws):
    tag = await create_tag(client, ws.headers, "doomed")
    keep = await create_tag(client, ws.headers, "kept")
    contacts = [await create_contact(client, ws.headers, f"d{i}@mailtest.io") for i in range(2)]
    for contact in contacts:
        for t in (tag, keep):
            attached = await client.post(
                f"/api/v1/contacts/{contact['id']}/tags",
                json={"tag_id": t["id"]},
                headers=ws.headers,
            )
            assert attached.status_code == 201

    response = await client.delete(f"/api/v1/tags/{tag['id']}", headers=ws.headers)
    assert response.status_code == 200
    assert response.json() == {"success": True, "id": tag["id"], "contacts_untagged": 2}

    gone = await client.get(f"/api/v1/tags/{tag['id']}", headers=ws.headers)
    assert gone.status_code == 404
    assert gone.json() == {"error": "Tag not found"}
    again = await client.delete(f"/api/v1/tags/{tag['id']}", headers=ws.headers)
    assert again.status_code == 404
    for contact in contacts:
        tags = (
            await client.get(f"/api/v1/contacts/{contact['id']}/tags", headers=ws.headers)
        ).json()["tags"]
        assert [t["id"] for t in tags] == [keep["id"]]
    # The contacts themselves stay.
    listed = await client.get("/api/v1/contacts", headers=ws.headers)
    assert listed.json()["pagination"]["total"] == 2
    assert [t["id"] for t in (await all_tags(client, ws.headers))["tags"]] == [keep["id"]]
    # The name is free again.
    await create_tag(client, ws.headers, "DOOMED")


# ---------------------------------------------------------------- listing


async def test_list_is_by_name_ignoring_case_with_counts(client, ws):
    b = await create_tag(client, ws.headers, "beta")
    a = await create_tag(client, ws.headers, "Alpha")
    c = await create_tag(client, ws.headers, "Gamma")
    contact = await create_contact(client, ws.headers, "count@mailtest.io")
    other = await create_contact(client, ws.headers, "count2@mailtest.io")
    for cid in (contact["id"], other["id"]):
        await client.post(
            f"/api/v1/contacts/{cid}/tags", json={"tag_id": b["id"]}, headers=ws.headers
        )
    await client.post(
        f"/api/v1/contacts/{contact['id']}/tags", json={"tag_id": c["id"]}, headers=ws.headers
    )

    body = await all_tags(client, ws.headers)
    assert [t["id"] for t in body["tags"]] == [a["id"], b["id"], c["id"]]
    assert [t["contact_count"] for t in body["tags"]] == [0, 2, 1]
    assert body["pagination"] == {"page": 1, "limit": 50, "total": 3, "total_pages": 1}
    single = (await client.get(f"/api/v1/tags/{b['id']}", headers=ws.headers)).json()["tag"]
    assert single["contact_count"] == 2


async def test_list_pages(client, ws):
    for i in range(5):
        await create_tag(client, ws.headers, f"tag-{i}")
    first = await all_tags(client, ws.headers, limit=2)
    third = await all_tags(client, ws.headers, limit=2, page=3)
    assert [t["name"] for t in first["tags"]] == ["tag-0", "tag-1"]
    assert [t["name"] for t in third["tags"]] == ["tag-4"]
    assert first["pagination"] == {"page": 1, "limit": 2, "total": 5, "total_pages": 3}
    beyond = await all_tags(client, ws.headers, limit=2, page=9)
    assert beyond["tags"] == [] and beyond["pagination"]["total"] == 5


@pytest.mark.parametrize(
    ("params", "message"),
    [({"limit": 0}, "limit must be at least 1"), ({"limit": 101}, "limit must be at most 100")],
)
async def test_list_bad_paging_is_400(client, ws, params, message):
    response = await client.get("/api/v1/tags", params=params, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": message}


async def test_list_page_far_beyond_the_end_is_not_500(raw_client, ws):
    await create_tag(raw_client, ws.headers, "only")
    response = await raw_client.get("/api/v1/tags", params={"page": 10**23}, headers=ws.headers)
    assert response.status_code in (200, 400), response.text
    if response.status_code == 200:
        assert response.json()["tags"] == []


async def test_list_q_is_case_insensitive_substring_and_literal(client, ws):
    await create_tag(client, ws.headers, "Newsletter")
    await create_tag(client, ws.headers, "news_2024")
    await create_tag(client, ws.headers, "50% off")
    await create_tag(client, ws.headers, "Other")
    names = lambda body: [t["name"] for t in body["tags"]]  # noqa: E731
    assert names(await all_tags(client, ws.headers, q="NEWS")) == ["news_2024", "Newsletter"]
    assert names(await all_tags(client, ws.headers, q="%")) == ["50% off"]
    assert names(await all_tags(client, ws.headers, q="s_")) == ["news_2024"]
    assert (await all_tags(client, ws.headers, q="zzz"))["pagination"]["total"] == 0


# ---------------------------------------------------------------- auth and permissions


async def test_no_key_is_401(client, ws):
    response = await client.get("/api/v1/tags")
    assert response.status_code == 401
    assert response.json() == {"error": "Unauthorized"}


async def test_read_key_can_read_but_not_write(client, ws, factory):
    tag = await create_tag(client, ws.headers, "readable")
    reader = await factory.key(ws, "tags:read")
    assert (await client.get("/api/v1/tags", headers=reader)).status_code == 200
    assert (await client.get(f"/api/v1/tags/{tag['id']}", headers=reader)).status_code == 200
    refused = [
        await client.post("/api/v1/tags", json={"name": "nope"}, headers=reader),
        await client.patch(f"/api/v1/tags/{tag['id']}", json={"name": "nope"}, headers=reader),
        await client.delete(f"/api/v1/tags/{tag['id']}", headers=reader),
    ]
    for response in refused:
        assert response.status_code == 403
        assert response.json() == {"error": "Forbidden: tags:write permission required"}
    stored = await all_tags(client, ws.headers)
    assert [t["name"] for t in stored["tags"]] == ["readable"]


async def test_key_without_tags_read_is_403(client, ws, factory):
    tag = await create_tag(client, ws.headers, "hidden")
    other = await factory.key(ws, ["contacts:read", "lists:read"])
    for path in ("/api/v1/tags", f"/api/v1/tags/{tag['id']}"):
        response = await client.get(path, headers=other)
        assert response.status_code == 403
        assert response.json() == {"error": "Forbidden: tags:read permission required"}
