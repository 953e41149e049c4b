"""The Sending page shows each domain's warm-up (stage, today's allowance and what is left)
and lets an admin skip it, audit-logged under the person; a member cannot."""

from __future__ import annotations

from contextlib import aclosing

from tests.dashboard.helpers import csrf_of, signed_in
from tests.sending.conftest import verified_domain
from tests.sending.helpers import ok


async def test_an_admin_sees_the_stage_and_skips_warm_up(app, client, db, settings, ws):
    domain = await verified_domain(client, db, ws)
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(admin), aclosing(member):
        page = await admin.get("/settings/sending")
        assert page.status_code == 200
        assert "Stage 1: <strong>200</strong> campaign messages today (UTC), 0 sent" in page.text
        assert "<strong>200 left</strong>" in page.text
        token = csrf_of(page.text)
        action = f"/settings/sending/domains/{domain['id']}/skip-warmup"
        assert f'action="{action}"' in page.text

        own_token = csrf_of((await member.get("/app/campaigns/new")).text)
        refused = await member.post(action, data={"csrf": own_token})
        assert refused.status_code == 403 and "admin" in refused.text
        found = await ok(await client.get(f"/api/v1/domains/{domain['id']}", headers=ws.headers))
        assert found["domain"]["warmup"]["skipped"] is False

        done = await admin.post(action, data={"csrf": token})
        assert done.status_code == 303
        shown = await admin.get("/settings/sending")
        assert "Warm-up skipped for shop.example" in shown.text
        assert "Warm-up skipped: campaign mail from shop.example has no daily allowance" in (
            shown.text
        )
        assert f'action="{action}"' not in shown.text
        found = await ok(await client.get(f"/api/v1/domains/{domain['id']}", headers=ws.headers))
        assert found["domain"]["warmup"] == {
            "stage": 1,
            "daily_limit": None,
            "sent_today": 0,
            "skipped": True,
        }
        log = await ok(await client.get("/api/v1/account/audit-log", headers=ws.headers))
        entry = next(e for e in log["entries"] if e["operation"] == "skip_warmup")
        assert entry["target_id"] == domain["id"] and entry["person_id"]
