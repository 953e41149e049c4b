"""Spec, Authentication 1-9, checked through the HTTP API and the `mailroom` CLI only."""

from __future__ import annotations

import csv
import io

import pytest
from sqlalchemy import func, select

from mailroom.models import ApiKey
from tests.conftest import run_cli
from tests.spec_foundation.helpers import (
    KEY_SHAPE,
    PERMISSIONS,
    ROUTES,
    UNAUTHORIZED,
    ZERO_ID,
    call,
    cli_json,
    error_of,
    route_id,
)

ROUTE_IDS = [route_id(r) for r in ROUTES]


async def _key_count(db) -> int:
    async with db.session() as session:
        return int(await session.scalar(select(func.count()).select_from(ApiKey)) or 0)


# ---------------------------------------------------------------- 1-2: key shape, one workspace


async def test_cli_keys_have_the_spec_shape_and_work(cli_env, client):
    created = cli_json(run_cli("admin", "create-workspace", "--plan", "pro", "--json", env=cli_env))
    assert KEY_SHAPE.match(created["api_key"]), created["api_key"]
    assert created["api_key"].startswith("mr_live_")
    second = cli_json(
        run_cli(
            "admin", "create-key", "--workspace", created["workspace_id"], "--json", env=cli_env
        )
    )
    assert KEY_SHAPE.match(second["api_key"]), second["api_key"]
    assert second["api_key"] != created["api_key"]
    for key in (created["api_key"], second["api_key"]):
        response = await client.get("/api/v1/contacts", headers={"x-api-key": key})
        assert response.status_code == 200, response.text


async def test_key_is_shown_once_and_not_echoed_by_the_api(cli_env, client):
    created = cli_json(run_cli("admin", "create-workspace", "--plan", "pro", "--json", env=cli_env))
    headers = {"x-api-key": created["api_key"]}
    account = await client.get("/api/v1/account", headers=headers)
    assert account.status_code == 200
    assert created["api_key"] not in account.text
    secret_part = created["api_key"].rsplit("_", 1)[1]
    assert secret_part not in account.text


# ---------------------------------------------------------------- 5: permission strings (CLI)


async def test_cli_create_key_accepts_all_24_permission_strings(cli_env, client, ws):
    listed = ",".join(reversed(PERMISSIONS))
    created = cli_json(
        run_cli(
            "admin",
            "create-key",
            "--workspace",
            ws.workspace_id,
            "--permissions",
            listed,
            "--json",
            env=cli_env,
        )
    )
    body = (await client.get("/api/v1/account", headers={"x-api-key": created["api_key"]})).json()
    assert sorted(body["permissions"]) == sorted(PERMISSIONS)
    assert len(body["permissions"]) == 24


@pytest.mark.parametrize(
    "permissions",
    [
        "contacts:delete",
        "contacts:read,contacts:erase",
        "audit:write",
        "forms:send",
        "admin",
    ],
)
async def test_cli_create_key_refuses_unknown_permission_and_creates_nothing(
    cli_env, db, ws, permissions
):
    before = await _key_count(db)
    result = run_cli(
        "admin",
        "create-key",
        "--workspace",
        ws.workspace_id,
        "--permissions",
        permissions,
        "--json",
        env=cli_env,
    )
    assert result.returncode != 0
    assert result.stdout.strip() == ""
    unknown = [p for p in permissions.split(",") if p not in PERMISSIONS]
    message = " ".join(result.stderr.split())
    assert "Unknown permission" in message
    for name in unknown:
        assert name in message
    assert await _key_count(db) == before


async def test_single_permission_keys_from_the_cli_carry_only_that_permission(cli_env, client, ws):
    created = cli_json(
        run_cli(
            "admin",
            "create-key",
            "--workspace",
            ws.workspace_id,
            "--permissions",
            "contacts:export",
            "--json",
            env=cli_env,
        )
    )
    headers = {"x-api-key": created["api_key"]}
    body = (await client.get("/api/v1/account", headers=headers)).json()
    assert body["permissions"] == ["contacts:export"]
    assert (await client.get("/api/v1/contacts/export", headers=headers)).status_code == 200
    refused = await client.get("/api/v1/contacts", headers=headers)
    assert refused.status_code == 403
    assert refused.json() == {"error": "Forbidden: contacts:read permission required"}


# ---------------------------------------------------------------- 3: 401


@pytest.mark.parametrize("route", ROUTES, ids=ROUTE_IDS)
async def test_every_route_without_a_key_is_401(client, ws, route):
    method, path, _ = route
    response = await call(client, method, path, {})
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED


@pytest.mark.parametrize("route", ROUTES, ids=ROUTE_IDS)
async def test_every_route_with_right_shape_wrong_secret_is_401(client, ws, route):
    method, path, _ = route
    lookup = KEY_SHAPE.match(ws.api_key).group(1)  # type: ignore[union-attr]
    forged = {"x-api-key": f"mr_live_{lookup}_{'Q' * 32}"}
    response = await call(client, method, path, forged)
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED


@pytest.mark.parametrize(
    "mangle",
    [
        lambda k: k + "x",  # one character too many
        lambda k: k[:-1],  # one too few
        lambda k: k.replace("live_", "test_", 1),  # not a live key
        lambda k: k.replace("_", "-"),  # separators changed
        lambda k: k.upper(),
        lambda k: "Bearer " + k,
        lambda k: k.rsplit("_", 1)[0],  # lookup only
    ],
    ids=["extra-char", "short", "test-prefix", "dashes", "upper", "bearer", "no-secret"],
)
async def test_malformed_variants_of_a_real_key_are_401(client, ws, mangle):
    response = await client.post(
        "/api/v1/contacts", json={"email": "m@shop.io"}, headers={"x-api-key": mangle(ws.api_key)}
    )
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED
    listing = await client.get("/api/v1/contacts", headers=ws.headers)
    assert listing.json()["pagination"]["total"] == 0


async def test_bad_key_is_401_whatever_the_body(client, ws):
    response = await client.post(
        "/api/v1/contacts",
        content=b"{not json",
        headers={"x-api-key": "nonsense", "content-type": "application/json"},
    )
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED


async def test_key_in_query_string_or_other_header_is_not_accepted(client, ws):
    by_query = await client.get("/api/v1/contacts", params={"x-api-key": ws.api_key})
    assert by_query.status_code == 401
    assert by_query.json() == UNAUTHORIZED
    by_bearer = await client.get(
        "/api/v1/contacts", headers={"authorization": f"Bearer {ws.api_key}"}
    )
    assert by_bearer.status_code == 401
    assert by_bearer.json() == UNAUTHORIZED


async def test_key_revoked_with_the_cli_is_401_on_reads_and_writes(cli_env, client, ws):
    created = cli_json(
        run_cli("admin", "create-key", "--workspace", ws.workspace_id, "--json", env=cli_env)
    )
    headers = {"x-api-key": created["api_key"]}
    assert (await client.get("/api/v1/contacts", headers=headers)).status_code == 200
    revoked = run_cli("admin", "revoke-key", created["key_id"], "--json", env=cli_env)
    assert revoked.returncode == 0, revoked.stderr
    read = await client.get("/api/v1/contacts", headers=headers)
    assert read.status_code == 401
    assert read.json() == UNAUTHORIZED
    write = await client.post("/api/v1/contacts", json={"email": "r@shop.io"}, headers=headers)
    assert write.status_code == 401
    assert write.json() == UNAUTHORIZED
    suppress = await client.post(
        "/api/v1/suppressions", json={"entries": ["r@shop.io"]}, headers=headers
    )
    assert suppress.status_code == 401
    # Nothing was written; the workspace's other key still works.
    listing = await client.get("/api/v1/contacts", headers=ws.headers)
    assert listing.status_code == 200
    assert listing.json()["pagination"]["total"] == 0
    summary = await client.get("/api/v1/suppressions", headers=ws.headers)
    assert summary.json()["count"] == 0
    # Revoking twice is fine, and the key stays revoked.
    again = run_cli("admin", "revoke-key", created["key_id"], "--json", env=cli_env)
    assert again.returncode == 0, again.stderr
    assert (await client.get("/api/v1/contacts", headers=headers)).status_code == 401


# ---------------------------------------------------------------- 4: 403 text per route


@pytest.mark.parametrize("route", ROUTES, ids=ROUTE_IDS)
async def test_every_route_missing_its_permission_is_403_with_spec_text(client, ws, factory, route):
    method, path, permission = route
    others = [p for p in PERMISSIONS if p != permission]
    headers = await factory.key(ws, others)
    response = await call(client, method, path, headers)
    assert response.status_code == 403, response.text
    assert response.json() == {"error": f"Forbidden: {permission} permission required"}


@pytest.mark.parametrize("route", ROUTES, ids=ROUTE_IDS)
async def test_the_listed_permission_alone_is_enough(client, ws, factory, route):
    method, path, permission = route
    headers = await factory.key(ws, [permission])
    response = await call(client, method, path, headers)
    assert response.status_code not in (401, 403), response.text


# ---------------------------------------------------------------- 7: read / export split


async def test_contacts_read_pages_and_looks_up_but_cannot_export(client, ws, factory):
    created = await client.post("/api/v1/contacts", json={"email": "r@shop.io"}, headers=ws.headers)
    assert created.status_code == 201
    reader = await factory.key(ws, ["contacts:read"])
    assert (await client.get("/api/v1/contacts", headers=reader)).status_code == 200
    contact_id = created.json()["contact"]["id"]
    assert (await client.get(f"/api/v1/contacts/{contact_id}", headers=reader)).status_code == 200
    assert (await client.get("/api/v1/suppressions", headers=reader)).status_code == 200
    assert (await client.get("/api/v1/suppressions/list", headers=reader)).status_code == 200
    for path in ("/api/v1/contacts/export", "/api/v1/suppressions/export"):
        response = await client.get(path, headers=reader)
        assert response.status_code == 403
        assert response.json() == {"error": "Forbidden: contacts:export permission required"}
        assert "r@shop.io" not in response.text


async def test_bulk_export_needs_contacts_export_on_top_of_write(client, ws, factory):
    created = await client.post("/api/v1/contacts", json={"email": "b@shop.io"}, headers=ws.headers)
    contact_id = created.json()["contact"]["id"]
    writer = await factory.key(ws, ["contacts:read", "contacts:write"])
    refused = await client.post(
        "/api/v1/contacts/bulk",
        json={"action": "export", "contact_ids": [contact_id]},
        headers=writer,
    )
    assert refused.status_code == 403
    assert refused.json() == {"error": "Forbidden: contacts:export permission required"}
    assert "b@shop.io" not in refused.text
    exporter = await factory.key(ws, ["contacts:write", "contacts:export"])
    allowed = await client.post(
        "/api/v1/contacts/bulk",
        json={"action": "export", "contact_ids": [contact_id]},
        headers=exporter,
    )
    assert allowed.status_code == 200, allowed.text
    assert "contacts-export.csv" in allowed.headers.get("content-disposition", "")
    rows = list(csv.reader(io.StringIO(allowed.text)))
    assert rows[1][0] == "b@shop.io"


async def test_bulk_export_is_refused_before_the_body_is_checked(client, ws, factory):
    writer = await factory.key(ws, ["contacts:read", "contacts:write"])
    response = await client.post(
        "/api/v1/contacts/bulk",
        json={"action": "export", "contact_ids": [123, None]},
        headers=writer,
    )
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: contacts:export permission required"}


async def test_export_alone_does_not_grant_reading(client, ws, factory):
    exporter = await factory.key(ws, ["contacts:export"])
    assert (await client.get("/api/v1/contacts/export", headers=exporter)).status_code == 200
    assert (await client.get("/api/v1/suppressions/export", headers=exporter)).status_code == 200
    for path in ("/api/v1/contacts", "/api/v1/suppressions", "/api/v1/suppressions/list"):
        response = await client.get(path, headers=exporter)
        assert response.status_code == 403
        assert response.json() == {"error": "Forbidden: contacts:read permission required"}


# ---------------------------------------------------------------- a key reaches one workspace


async def test_a_key_never_reaches_another_workspace(client, ws, factory):
    other = await factory.workspace("pro", listen=False)
    created = await client.post(
        "/api/v1/contacts", json={"email": "mine@shop.io"}, headers=ws.headers
    )
    contact_id = created.json()["contact"]["id"]
    for method, body in (("GET", None), ("PATCH", {"first_name": "X"}), ("DELETE", None)):
        response = await call(client, method, f"/api/v1/contacts/{contact_id}", other.headers, body)
        assert response.status_code == 404, (method, response.text)
        assert response.json() == {"error": "Contact not found"}
    listing = await client.get("/api/v1/contacts", headers=other.headers)
    assert listing.json()["contacts"] == []
    mine = await client.get(f"/api/v1/contacts/{contact_id}", headers=ws.headers)
    assert mine.status_code == 200
    assert mine.json()["contact"]["first_name"] in ("", None)
    export = await client.get("/api/v1/contacts/export", headers=other.headers)
    assert "mine@shop.io" not in export.text


# ---------------------------------------------------------------- the permission comes first


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/v1/contacts"),
        ("PATCH", f"/api/v1/contacts/{ZERO_ID}"),
        ("POST", "/api/v1/contacts/bulk"),
        ("POST", "/api/v1/suppressions"),
        ("POST", "/api/v1/suppressions/lift"),
    ],
)
async def test_missing_permission_is_403_even_with_malformed_json(
    client, ws, factory, method, path
):
    """Spec, Authentication 4: a missing permission is 403; a read-only key learns nothing
    about the write route's body rules."""
    reader = await factory.key(ws, ["contacts:read"])
    response = await client.request(
        method,
        path,
        content=b'{"email": ',
        headers={**reader, "content-type": "application/json"},
    )
    assert response.status_code == 403, response.text
    assert response.json() == {"error": "Forbidden: contacts:write permission required"}


# ---------------------------------------------------------------- 9: public endpoints


async def test_public_endpoints_take_no_key(client):
    assert (await client.get("/healthz")).status_code == 200
    assert (await client.get("/openapi.json")).status_code == 200


async def test_error_text_uses_the_exact_permission_name(client, ws, factory):
    headers = await factory.key(ws, ["tags:read"])
    response = await client.post("/api/v1/tags", json={"name": "x"}, headers=headers)
    assert response.status_code == 403
    assert error_of(response) == "Forbidden: tags:write permission required"
