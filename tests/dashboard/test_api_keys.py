"""`/settings/api-keys`: admins list, create (presets or chosen permissions; the key shown
once) and revoke keys, each audited under the person; members get a 403 page; the frame's
static files are cached for a year under content-hashed names."""

from __future__ import annotations

import re
from contextlib import aclosing

from sqlalchemy import select

from mailroom.models import AuditEntry, Person
from tests.dashboard.helpers import csrf_of, signed_in


async def test_an_admin_creates_uses_and_revokes_a_key(app, client, db, settings, ws):
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        page = await admin.get("/settings/api-keys")
        assert page.status_code == 200
        assert f"mr_live_{ws.api_key.split('_')[2]}_…" in page.text
        assert '<span class="badge">full access</span>' in page.text

        made = await admin.post(
            "/settings/api-keys",
            data={"csrf": csrf_of(page.text), "name": " Shop   sync ", "preset": "read"},
        )
        assert made.status_code == 201 and "Key “Shop sync” created" in made.text
        secret = re.search(
            r'aria-label="The new API key">(mr_live_[A-Za-z0-9]+_[A-Za-z0-9]+)</textarea>',
            made.text,
        ).group(1)
        headers = {"x-api-key": secret}
        assert (await client.get("/api/v1/contacts", headers=headers)).status_code == 200
        write = await client.post(
            "/api/v1/contacts", json={"email": "x@shop.example"}, headers=headers
        )
        assert write.json() == {"error": "Forbidden: contacts:write permission required"}
        listed = await admin.get("/settings/api-keys")
        assert secret not in listed.text  # shown once

        chosen = await admin.post(
            "/settings/api-keys",
            data={
                "csrf": csrf_of(listed.text),
                "preset": "chosen",
                "permission": ["tags:read", "lists:read"],
            },
        )
        assert chosen.status_code == 201
        nothing = await admin.post(
            "/settings/api-keys", data={"csrf": csrf_of(listed.text), "preset": "chosen"}
        )
        assert nothing.status_code == 400 and "Choose at least one permission" in nothing.text

        key_id = re.search(
            r'/settings/api-keys/([0-9a-f-]+)/revoke" aria-label="Revoke Shop sync">Revoke',
            listed.text,
        ).group(1)
        confirm = await admin.get(f"/settings/api-keys/{key_id}/revoke")
        assert confirm.status_code == 200 and "Revoke “Shop sync”?" in confirm.text
        done = await admin.post(
            f"/settings/api-keys/{key_id}/revoke", data={"csrf": csrf_of(confirm.text)}
        )
        assert (done.status_code, done.headers["location"]) == (303, "/settings/api-keys")
        assert (await client.get("/api/v1/contacts", headers=headers)).status_code == 401
        after = await admin.get("/settings/api-keys")
        assert "Key “Shop sync” is revoked." in after.text and "revoked 20" in after.text

    async with db.session() as session:
        person_id = await session.scalar(
            select(Person.id).where(Person.email == "ada@shop.example")
        )
        entries = (
            await session.execute(
                select(AuditEntry.operation, AuditEntry.person_id, AuditEntry.key_id).where(
                    AuditEntry.workspace_id == ws.workspace_id,
                    AuditEntry.operation.in_(("create_api_key", "revoke_api_key")),
                )
            )
        ).all()
    assert sorted(op for op, _, _ in entries) == [
        "create_api_key",
        "create_api_key",
        "revoke_api_key",
    ]
    assert {(p, k) for _, p, k in entries} == {(person_id, None)}


async def test_members_get_a_403_page_and_no_keys(app, db, settings, ws):
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        home = await member.get("/app")
        assert 'href="/settings/api-keys"' not in home.text
        refused = await member.get("/settings/api-keys")
        assert refused.status_code == 403 and "Admins only" in refused.text
        assert ws.api_key.split("_")[2] not in refused.text
        posted = await member.post("/settings/api-keys", data={"csrf": csrf_of(home.text)})
        assert posted.status_code == 403


async def test_static_files_are_cached_for_a_year(app, client, db, settings, ws):
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        html = (await admin.get("/app")).text
    css = re.search(r'href="(/static/app\.[0-9a-f]{10}\.css)"', html).group(1)
    answer = await client.get(css)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/css")
    assert answer.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert (await client.get("/static/app.0000000000.css")).status_code == 404
