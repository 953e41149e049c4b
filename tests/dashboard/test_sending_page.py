"""`/settings/sending` (admins): the sender identity, pause and resume (audited under the
person), and a sending domain added and verified against the test DNS server, each record's
state shown."""

from __future__ import annotations

import re
from contextlib import aclosing

from tests.dashboard.helpers import csrf_of, signed_in
from tests.domains.conftest import domain_settings, publish, zone  # noqa: F401
from tests.sending.helpers import ok


async def test_identity_pause_resume_and_a_verified_domain(app, client, db, settings, ws, zone):  # noqa: F811
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        page = await admin.get("/settings/sending")
        assert page.status_code == 200 and "Sending is on." in page.text
        token = csrf_of(page.text)
        saved = await admin.post(
            "/settings/sending/identity",
            data={
                "csrf": token,
                "from_name": "Shop",
                "from_email": "news@shop.example",
                "reply_to": "",
            },
        )
        assert saved.status_code == 303
        sending = await ok(await client.get("/api/v1/sending", headers=ws.headers))
        assert (sending["sending"]["from_email"], sending["sending"]["from_name"]) == (
            "news@shop.example",
            "Shop",
        )
        bad = await admin.post(
            "/settings/sending/identity",
            data={
                "csrf": token,
                "from_name": "Shop",
                "from_email": "not an address",
                "reply_to": "",
            },
        )
        assert bad.status_code == 400 and "from_email must be a valid email address" in bad.text

        paused = await admin.post(
            "/settings/sending/pause", data={"csrf": token, "note": "Black Friday check"}
        )
        assert paused.status_code == 303
        shown = await admin.get("/settings/sending")
        assert "Sending is paused." in shown.text and "Black Friday check" in shown.text
        refused = await client.post(
            "/api/v1/send",
            json={"to": "a@b.example", "subject": "x", "text_content": "x"},
            headers=ws.headers,
        )
        assert refused.status_code in (403, 404, 422)
        resumed = await admin.post("/settings/sending/resume", data={"csrf": token})
        assert resumed.status_code == 303
        assert "Sending is on again." in (await admin.get("/settings/sending")).text

        added = await admin.post(
            "/settings/sending/domains", data={"csrf": token, "domain": "shop.example"}
        )
        assert added.status_code == 303
        listed = await admin.get("/settings/sending")
        assert "shop.example is added" not in listed.text and "shop.example added." in listed.text
        domain_id = re.search(r"/settings/sending/domains/([0-9a-f-]+)/verify", listed.text).group(
            1
        )
        domain = await ok(await client.get(f"/api/v1/domains/{domain_id}", headers=ws.headers))
        failed = await admin.post(
            f"/settings/sending/domains/{domain_id}/verify", data={"csrf": token}
        )
        assert failed.status_code == 303
        assert "shop.example is not verified yet" in (await admin.get("/settings/sending")).text
        publish(zone, domain["domain"])
        await admin.post(f"/settings/sending/domains/{domain_id}/verify", data={"csrf": token})
        done = await admin.get("/settings/sending")
        assert "shop.example is verified." in done.text
        assert '<span class="badge">verified</span>' in done.text
