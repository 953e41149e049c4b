"""Lists (paths and shapes are the project's design; the spec fixes only the Free-plan rule
that every list is double opt-in): create, read, update, delete, listing, validation and
permissions."""

from __future__ import annotations

import httpx
import pytest

LIST_KEYS = {
    "id",
    "name",
    "description",
    "double_opt_in",
    "effective_double_opt_in",
    "member_count",
    "confirmed_count",
    "unconfirmed_count",
    "created_at",
    "updated_at",
}


@pytest.fixture
async def raw_client(app):
    """Like `client`, but an unhandled error comes back as the 500 a user would get."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


async def create_list(client, headers, name, **extra):
    response = await client.post("/api/v1/lists", json={"name": name, **extra}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["list"]


async def get_list(client, headers, list_id):
    response = await client.get(f"/api/v1/lists/{list_id}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["list"]


async def all_lists(client, headers, **params):
    response = await client.get("/api/v1/lists", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


# ---------------------------------------------------------------- create and read


async def test_create_with_defaults_and_read_back(client, ws):
    response = await client.post("/api/v1/lists", json={"name": "Newsletter"}, headers=ws.headers)
    assert response.status_code == 201
    created = response.json()["list"]
    assert set(created) == LIST_KEYS
    assert created["name"] == "Newsletter"
    assert created["description"] == ""
    assert created["double_opt_in"] is False
    assert created["effective_double_opt_in"] is False
    assert (created["member_count"], created["confirmed_count"], created["unconfirmed_count"]) == (
        0,
        0,
        0,
    )
    assert await get_list(client, ws.headers, created["id"]) == created


async def test_create_with_all_fields(client, ws):
    created = await create_list(
        client, ws.headers, "  Weekly   Digest ", description=" News ", double_opt_in=True
    )
    assert created["name"] == "Weekly Digest"
    assert created["description"] == "News"
    assert created["double_opt_in"] is True
    assert created["effective_double_opt_in"] is True


async def test_every_list_of_a_free_workspace_is_double_opt_in(client, factory):
    free = await factory.workspace("free")
    created = await create_list(client, free.headers, "Free list", double_opt_in=False)
    assert created["double_opt_in"] is False
    assert created["effective_double_opt_in"] is True
    assert (await get_list(client, free.headers, created["id"]))["effective_double_opt_in"] is True


async def test_limits_are_inclusive(client, ws):
    created = await create_list(client, ws.headers, "n" * 100, description="d" * 500)
    assert created["name"] == "n" * 100 and created["description"] == "d" * 500


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({}, "name is required"),
        ({"name": None}, "name is required"),
        ({"name": "  "}, "name is required"),
        ({"name": 7}, "name must be a string"),
        ({"name": "n" * 101}, "name must be 100 characters or fewer"),
        ({"name": "ok", "description": "d" * 501}, "description must be 500 characters or fewer"),
        ({"name": "ok", "description": 5}, "description must be a string"),
        ({"name": "ok", "double_opt_in": "yes"}, "double_opt_in must be true or false"),
        ({"name": "ok", "double_opt_in": 1}, "double_opt_in must be true or false"),
    ],
)
async def test_invalid_create_is_400_and_stores_nothing(client, ws, payload, message):
    response = await client.post("/api/v1/lists", json=payload, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert (await all_lists(client, ws.headers))["lists"] == []


@pytest.mark.parametrize("duplicate", ["Customers", "customers", " CUSTOMERS "])
async def test_duplicate_name_ignoring_case_is_409(client, ws, duplicate):
    original = await create_list(client, ws.headers, "Customers")
    response = await client.post("/api/v1/lists", json={"name": duplicate}, headers=ws.headers)
    assert response.status_code == 409
    assert response.json()["error"] == "A list with this name already exists"
    assert [row["id"] for row in (await all_lists(client, ws.headers))["lists"]] == [original["id"]]


async def test_unknown_list_is_404(client, ws):
    for method, path, body in [
        ("GET", "/api/v1/lists/nope", None),
        ("PATCH", "/api/v1/lists/nope", {"name": "x"}),
        ("DELETE", "/api/v1/lists/nope", None),
        ("GET", "/api/v1/lists/nope/contacts", None),
        ("POST", "/api/v1/lists/nope/contacts", {"contact_ids": ["x"]}),
    ]:
        response = await client.request(method, path, json=body, headers=ws.headers)
        assert response.status_code == 404, (method, path)
        assert response.json() == {"error": "List not found"}, (method, path)


async def test_name_whose_lowercase_is_longer_still_fits(raw_client, ws):
    # "İ" lowercases to two characters; a 100-character name is still within the limit.
    name = "İzmir " + "x" * 94
    assert len(name) == 100
    response = await raw_client.post("/api/v1/lists", json={"name": name}, headers=ws.headers)
    assert response.status_code == 201, response.text
    stored = await raw_client.get(
        f"/api/v1/lists/{response.json()['list']['id']}", headers=ws.headers
    )
    assert stored.json()["list"]["name"] == name


async def test_nul_character_in_description_is_refused_or_kept_never_500(raw_client, ws):
    response = await raw_client.post(
        "/api/v1/lists", json={"name": "ok", "description": "a\x00b"}, headers=ws.headers
    )
    assert response.status_code in (201, 400), response.text


async def test_id_with_nul_character_is_404(raw_client, ws):
    response = await raw_client.get("/api/v1/lists/a%00b", headers=ws.headers)
    assert response.status_code == 404, response.text
    assert response.json()["error"] in {"List not found", "Not Found"}


# ---------------------------------------------------------------- update


async def test_update_is_stored(client, ws):
    created = await create_list(client, ws.headers, "Old", description="old text")
    response = await client.patch(
        f"/api/v1/lists/{created['id']}",
        json={"name": "New", "description": "new text", "double_opt_in": True},
        headers=ws.headers,
    )
    assert response.status_code == 200
    updated = response.json()["list"]
    assert (updated["name"], updated["description"], updated["double_opt_in"]) == (
        "New",
        "new text",
        True,
    )
    stored = await get_list(client, ws.headers, created["id"])
    assert (stored["name"], stored["description"], stored["double_opt_in"]) == (
        "New",
        "new text",
        True,
    )
    assert stored["effective_double_opt_in"] is True
    assert stored["created_at"] == created["created_at"]


async def test_partial_update_keeps_other_fields(client, ws):
    created = await create_list(client, ws.headers, "Keep", description="kept", double_opt_in=True)
    response = await client.patch(
        f"/api/v1/lists/{created['id']}", json={"double_opt_in": False}, headers=ws.headers
    )
    assert response.status_code == 200
    stored = await get_list(client, ws.headers, created["id"])
    assert (stored["name"], stored["description"], stored["double_opt_in"]) == (
        "Keep",
        "kept",
        False,
    )


async def test_description_null_clears_it(client, ws):
    created = await create_list(client, ws.headers, "Desc", description="something")
    response = await client.patch(
        f"/api/v1/lists/{created['id']}", json={"description": None}, headers=ws.headers
    )
    assert response.status_code == 200
    assert (await get_list(client, ws.headers, created["id"]))["description"] == ""


async def test_rename_to_another_lists_name_is_409_own_case_change_is_fine(client, ws):
    await create_list(client, ws.headers, "Taken")
    mine = await create_list(client, ws.headers, "mine")
    clash = await client.patch(
        f"/api/v1/lists/{mine['id']}", json={"name": "TAKEN"}, headers=ws.headers
    )
    assert clash.status_code == 409
    assert clash.json()["error"] == "A list with this name already exists"
    assert (await get_list(client, ws.headers, mine["id"]))["name"] == "mine"
    recased = await client.patch(
        f"/api/v1/lists/{mine['id']}", json={"name": "MINE"}, headers=ws.headers
    )
    assert recased.status_code == 200
    assert (await get_list(client, ws.headers, mine["id"]))["name"] == "MINE"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({}, "No updatable fields provided"),
        ({"name": None}, "name is required"),
        ({"name": "n" * 101}, "name must be 100 characters or fewer"),
        ({"description": "d" * 501}, "description must be 500 characters or fewer"),
        ({"double_opt_in": "no"}, "double_opt_in must be true or false"),
        ({"double_opt_in": None}, "double_opt_in must be true or false"),
        ({"bogus": True}, "Unknown field(s): bogus"),
    ],
)
async def test_invalid_update_is_400_and_changes_nothing(client, ws, payload, message):
    created = await create_list(client, ws.headers, "Stay", description="same", double_opt_in=True)
    response = await client.patch(
        f"/api/v1/lists/{created['id']}", json=payload, headers=ws.headers
    )
    assert response.status_code == 400
    assert response.json() == {"error": message}
    stored = await get_list(client, ws.headers, created["id"])
    assert (stored["name"], stored["description"], stored["double_opt_in"]) == (
        "Stay",
        "same",
        True,
    )


# ---------------------------------------------------------------- delete


async def test_delete_removes_list_and_memberships_not_contacts(client, ws):
    created = await create_list(client, ws.headers, "Doomed")
    ids = []
    for i in range(2):
        response = await client.post(
            "/api/v1/contacts", json={"email": f"m{i}@mailtest.io"}, headers=ws.headers
        )
        ids.append(response.json()["contact"]["id"])
    added = await client.post(
        f"/api/v1/lists/{created['id']}/contacts", json={"contact_ids": ids}, headers=ws.headers
    )
    assert added.status_code == 200

    response = await client.delete(f"/api/v1/lists/{created['id']}", headers=ws.headers)
    assert response.status_code == 200
    assert response.json() == {"success": True, "id": created["id"], "members_removed": 2}

    gone = await client.get(f"/api/v1/lists/{created['id']}", headers=ws.headers)
    assert gone.status_code == 404
    assert gone.json() == {"error": "List not found"}
    again = await client.delete(f"/api/v1/lists/{created['id']}", headers=ws.headers)
    assert again.status_code == 404
    contacts = (await client.get("/api/v1/contacts", headers=ws.headers)).json()
    assert contacts["pagination"]["total"] == 2
    filtered = await client.get(
        "/api/v1/contacts", params={"list": created["id"]}, headers=ws.headers
    )
    assert filtered.json()["contacts"] == []
    assert (await all_lists(client, ws.headers))["lists"] == []
    await create_list(client, ws.headers, "doomed")  # the name is free again


# ---------------------------------------------------------------- listing


async def test_listing_is_by_name_with_counts_and_pages(client, ws):
    names = ["delta", "Alpha", "charlie", "Bravo"]
    made = {n: await create_list(client, ws.headers, n) for n in names}
    contact = await client.post(
        "/api/v1/contacts", json={"email": "member@mailtest.io"}, headers=ws.headers
    )
    await client.post(
        f"/api/v1/lists/{made['charlie']['id']}/contacts",
        json={"contact_ids": [contact.json()["contact"]["id"]]},
        headers=ws.headers,
    )
    body = await all_lists(client, ws.headers)
    assert [row["name"] for row in body["lists"]] == ["Alpha", "Bravo", "charlie", "delta"]
    assert [row["member_count"] for row in body["lists"]] == [0, 0, 1, 0]
    assert body["pagination"] == {"page": 1, "limit": 50, "total": 4, "total_pages": 1}
    second = await all_lists(client, ws.headers, limit=3, page=2)
    assert [row["name"] for row in second["lists"]] == ["delta"]
    assert second["pagination"] == {"page": 2, "limit": 3, "total": 4, "total_pages": 2}


async def test_listing_bad_paging_is_400(client, ws):
    response = await client.get("/api/v1/lists", params={"page": 0}, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": "page must be at least 1"}


# ---------------------------------------------------------------- permissions


async def test_list_routes_need_list_permissions(client, ws, factory):
    created = await create_list(client, ws.headers, "Guarded")
    reader = await factory.key(ws, "lists:read")
    nobody = await factory.key(ws, ["contacts:read", "tags:read"])

    for path in (
        "/api/v1/lists",
        f"/api/v1/lists/{created['id']}",
        f"/api/v1/lists/{created['id']}/contacts",
    ):
        assert (await client.get(path, headers=reader)).status_code == 200
        refused = await client.get(path, headers=nobody)
        assert refused.status_code == 403
        assert refused.json() == {"error": "Forbidden: lists:read permission required"}

    writes = [
        ("POST", "/api/v1/lists", {"name": "x"}),
        ("PATCH", f"/api/v1/lists/{created['id']}", {"name": "x"}),
        ("DELETE", f"/api/v1/lists/{created['id']}", None),
        ("POST", f"/api/v1/lists/{created['id']}/contacts", {"contact_ids": ["a"]}),
        ("DELETE", f"/api/v1/lists/{created['id']}/contacts/a", None),
    ]
    for method, path, body in writes:
        refused = await client.request(method, path, json=body, headers=reader)
        assert refused.status_code == 403, (method, path)
        assert refused.json() == {"error": "Forbidden: lists:write permission required"}
    assert [row["name"] for row in (await all_lists(client, ws.headers))["lists"]] == ["Guarded"]
