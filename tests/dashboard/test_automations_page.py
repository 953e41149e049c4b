"""`/app/automations`: an automation written on the page (trigger, steps added, moved and
removed, each step keeping its id), saved through the API's checks (a refusal shows its
message and saves nothing), activated and paused, with the runs and where contacts are."""

from __future__ import annotations

import re
from contextlib import aclosing

from tests.dashboard.helpers import csrf_of, form_values, signed_in


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


async def test_conditions_with_branches_edited_on_the_page(app, client, db, settings, ws):
    """A condition made through the API opens with its rule and both branches and saves back
    unchanged; on the page a step goes into its "if yes" branch, a second condition is added
    with its own rule, and removing a condition removes its branches."""
    vip = (await client.post("/api/v1/tags", json={"name": "VIP"}, headers=ws.headers)).json()
    tag_id = vip["tag"]["id"]
    steps = [
        {"id": "w1", "type": "wait", "seconds": 3600},
        {
            "id": "c1",
            "type": "condition",
            "rules": {
                "match": "any",
                "conditions": [{"field": "tags", "op": "has_any", "value": [tag_id]}],
            },
            "yes": [{"id": "y1", "type": "remove_tag", "tag_id": tag_id}],
            "no": [{"id": "n1", "type": "update_field", "field": "language", "value": "fr"}],
        },
        {"id": "e1", "type": "exit"},
    ]
    made = await client.post(
        "/api/v1/automations",
        json={"name": "Branches", "trigger": {"type": "manual"}, "steps": steps},
        headers=ws.headers,
    )
    assert made.status_code == 201, made.text
    automation_id = made.json()["automation"]["id"]
    stored_steps = made.json()["automation"]["steps"]
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get(f"/app/automations/{automation_id}")
        assert "If yes (2 yes 1)" in page.text and "If not (2 no 1)" in page.text
        assert 'value="VIP"' in page.text  # the rule's tag by name
        form = form_values(page.text, "automation-editor")
        assert form["place_2"] == "c1:yes" and form["place_3"] == "c1:no"
        saved = await member.post("/app/automations/save", data=form)
        assert saved.status_code == 303, saved.text
        again = await client.get(f"/api/v1/automations/{automation_id}", headers=ws.headers)
        assert again.json()["automation"]["steps"] == stored_steps

        # A new step into "if yes", then a condition on the main path with its own rule.
        grown = await member.post(
            "/app/automations/save",
            data={**form, "add": "1", "add_type": "add_tag", "add_place": "c1:yes"},
        )
        assert "2 yes 2" in grown.text
        form = form_values(grown.text, "automation-editor")
        assert form["type_3"] == "add_tag" and form["place_3"] == "c1:yes"
        form["tag_id_3"] = tag_id
        grown = await member.post(
            "/app/automations/save", data={**form, "add": "1", "add_type": "condition"}
        )
        form = form_values(grown.text, "automation-editor")
        assert form["type_6"] == "condition" and form["place_6"] == ""
        form.update({"c6_field_0": "first_name", "c6_op_0": "eq", "c6_value_0": "Ann"})
        more = await member.post("/app/automations/save", data={**form, "addrule": "6"})
        form = form_values(more.text, "automation-editor")
        assert "c6_field_1" in form
        form.update({"c6_match_top": "any", "c6_field_1": "last_name", "c6_op_1": "is_set"})
        saved = await member.post("/app/automations/save", data=form)
        assert saved.status_code == 303, saved.text
        stored = (
            await client.get(f"/api/v1/automations/{automation_id}", headers=ws.headers)
        ).json()["automation"]["steps"]
        assert [s["type"] for s in stored[1]["yes"]] == ["remove_tag", "add_tag"]
        assert stored[3]["type"] == "condition"
        assert stored[3]["rules"] == {
            "match": "any",
            "conditions": [
                {"field": "first_name", "op": "eq", "value": "Ann"},
                {"field": "last_name", "op": "is_set"},
            ],
        }
        assert stored[3]["yes"] == [] and stored[3]["no"] == []

        # A rule naming a tag that does not exist is refused with the builder's message.
        page = await member.get(f"/app/automations/{automation_id}")
        form = form_values(page.text, "automation-editor")
        refused = await member.post("/app/automations/save", data={**form, "c1_value_0": "Nope"})
        assert refused.status_code == 400 and "No tag is named Nope" in refused.text

        # Removing the first condition takes its branches with it.
        form["remove_1"] = "on"
        saved = await member.post("/app/automations/save", data=form)
        assert saved.status_code == 303, saved.text
        stored = (
            await client.get(f"/api/v1/automations/{automation_id}", headers=ws.headers)
        ).json()["automation"]["steps"]
        assert [s["id"] for s in stored][:1] == ["w1"]
        assert [s["type"] for s in stored] == ["wait", "exit", "condition"]


async def test_the_trigger_shows_its_own_settings(app, client, db, settings, ws):
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/app/automations/new")
        form = form_values(page.text, "automation-editor")
        assert "trigger_tag_id" not in form and "trigger_form_id" not in form
        shown = await member.post(
            "/app/automations/save",
            data={**form, "trigger_type": "tag_added", "layout": "1"},
            headers={"HX-Request": "true"},
        )
        assert shown.status_code == 200
        form = form_values(shown.text, "automation-editor")
        assert "trigger_tag_id" in form and "trigger_form_id" not in form
        assert "A contact enters when this tag is added to it." in shown.text
        anniversary = await member.post(
            "/app/automations/save",
            data={**form, "trigger_type": "date_anniversary", "layout": "1"},
        )
        form = form_values(anniversary.text, "automation-editor")
        assert {"trigger_field", "trigger_days", "trigger_time"} <= set(form)
        assert "trigger_tag_id" not in form
        # Nothing was saved by laying the form out.
        listed = await client.get("/api/v1/automations", headers=ws.headers)
        assert listed.json()["pagination"]["total"] == 0
