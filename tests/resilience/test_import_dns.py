"""An import with `check_domains` waits on DNS holding no database connection: on SQLite no
write transaction (its one writer), on PostgreSQL no pooled connection. A nameserver that
never answers must not stop another tenant's writes (issue 12 item 2: 65 s of `BEGIN
IMMEDIATE` held before)."""

from __future__ import annotations

import asyncio

from mailroom.contacts import domains
from tests.dns_server import DnsServer


async def test_silent_nameserver_blocks_no_other_write(client, db, factory, settings, monkeypatch):
    monkeypatch.setattr(domains, "TIMEOUT_SECONDS", 3.0)
    importing, other = await factory.workspace("pro"), await factory.workspace("pro")
    made = await client.post("/api/v1/lists", json={"name": "News"}, headers=importing.headers)
    assert made.status_code == 201, made.text
    list_id = made.json()["list"]["id"]
    async with DnsServer({"quiet.io": {"slow": True}}) as dns:
        settings.dns_nameservers = [dns.address]
        upload = asyncio.create_task(
            client.post(
                "/api/v1/contacts/import",
                files={"file": ("c.csv", b"email,vip_level\nann@quiet.io,3\n", "text/csv")},
                # list_id and new_fields both read and write before the rows are written
                data={
                    "check_domains": "true",
                    "list_id": list_id,
                    "new_fields": '[{"key": "vip_level", "type": "number"}]',
                },
                headers=importing.headers,
            )
        )
        for _ in range(500):  # until the import is waiting on the silent nameserver
            if dns.protocol.queries or upload.done():
                break
            await asyncio.sleep(0.01)
        assert ("quiet.io", "MX") in dns.protocol.queries
        assert db.write_engine.pool.checkedout() == 0  # no connection held during DNS
        created = await asyncio.wait_for(
            client.post("/api/v1/contacts", json={"email": "bo@other.io"}, headers=other.headers),
            timeout=2.0,  # well inside the 3 s the import still waits
        )
        assert created.status_code == 201, created.text
        assert not upload.done()
        response = await upload
    assert response.status_code == 200, response.text
    # No definite answer (a timeout) keeps the rows.
    assert response.json()["imported"] == 1
    assert response.json()["skipped_undeliverable"] == 0
    members = await client.get(f"/api/v1/lists/{list_id}/contacts", headers=importing.headers)
    [member] = members.json()["contacts"]
    assert member["email"] == "ann@quiet.io"
    assert member["custom_fields"] == {"vip_level": 3}
    found = await client.get("/api/v1/contacts", headers=other.headers)
    assert [c["email"] for c in found.json()["contacts"]] == ["bo@other.io"]
