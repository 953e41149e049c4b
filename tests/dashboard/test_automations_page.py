"""`/app/automations`: an automation written on the page (trigger, steps added, moved and
removed, each step keeping its id), saved through the API's checks (a refusal shows its
message and saves nothing), activated and paused, with the runs and where contacts are."""

from __future__ import annotations

import re
from contextlib import aclosing

from tests.dashboard.helpers import csrf_of, signed_in


async def test_write_reorder_activate_and_watch(app, client, db, settings, ws):
    vip = (await client.post("/api/v1/tags", json={"name": "VIP"}, headers=ws.headers)).json()
    tag_id = vip["tag"]["id"]
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/app/automations/new")
        assert page.status_code == 200
        token = csrf_of(page.text)
        base = {
            "csrf": token,
            "name": "Welcome",
            "trigger_type": "manual",
            "time_zone": "UTC",
            "type_0": "wait",
            "amount_0": "2",
            "unit_0": "days",
        }
        grown = await member.post(
            "/app/automations/save", data={**base, "add": "1", "add_type": "add_tag"}
        )
        assert grown.status_code == 200 and 'name="type_1"' in grown.text
        assert 'id="tag-1"' in grown.text  # the new step's own settings
        moved = await member.post(
            "/app/automations/save",
            data={**base, "type_1": "add_tag", "tag_id_1": tag_id, "move": "up_1"},
        )
        kinds = re.findall(r'<option value="(\w+)" selected>', moved.text)
        assert kinds[:2] == ["manual", "add_tag"]  # the tag step is first now

        missing = await member.post(
            "/app/automations/save",
            data={**base, "type_1": "add_tag", "tag_id_1": ""},
        )
        assert missing.status_code == 400 and "steps[1].tag_id" in missing.text
        assert (await client.get("/api/v1/automations", headers=ws.headers)).json()[
            "automations"
        ] == []

        saved = await member.post(
            "/app/automations/save", data={**base, "type_1": "add_tag", "tag_id_1": tag_id}
        )
        assert saved.status_code == 303
        automation_id = saved.headers["location"].rsplit("/", 1)[1]
        stored = (
            await client.get(f"/api/v1/automations/{automation_id}", headers=ws.headers)
        ).json()
        steps = stored["automation"]["steps"]
        assert [s["type"] for s in steps] == ["wait", "add_tag"] and steps[0]["seconds"] == 172800
        first_id = steps[0]["id"]
        # Saved again with the steps swapped: each keeps its id.
        page = await member.get(f"/app/automations/{automation_id}")
        assert f'name="id_0" value="{first_id}"' in page.text
        swapped = await member.post(
            "/app/automations/save",
            data={
                **base,
                "automation_id": automation_id,
                "id_0": first_id,
                "type_1": "add_tag",
                "tag_id_1": tag_id,
                "id_1": steps[1]["id"],
                "move": "down_0",
            },
        )
        assert swapped.status_code == 200

        active = await member.post(
            f"/app/automations/{automation_id}/activate", data={"csrf": token}
        )
        assert active.status_code == 303
        contact = await client.post(
            "/api/v1/contacts", json={"email": "a@mailtest.io"}, headers=ws.headers
        )
        enrolled = await client.post(
            f"/api/v1/automations/{automation_id}/enrol",
            json={"contact_ids": [contact.json()["contact"]["id"]]},
            headers=ws.headers,
        )
        assert enrolled.status_code in (200, 202), enrolled.text
        shown = await member.get(f"/app/automations/{automation_id}")
        assert "Active: new contacts that meet the trigger enter it." in shown.text
        assert "1 entered in all" in shown.text
        paused = await member.post(f"/app/automations/{automation_id}/pause", data={"csrf": token})
        assert paused.status_code == 303
        listed = await member.get("/app/automations")
        assert (
            f'href="/app/automations/{automation_id}">Welcome</a>' in listed.text
            and "paused" in listed.text
        )
