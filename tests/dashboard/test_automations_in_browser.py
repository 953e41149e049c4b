"""An automation with a condition in Chromium: a step turned into a condition shows its rule
in place (htmx), the rule's field changes its operators, a step goes into the "if yes"
branch, and what is saved is the tree the API reads back; screenshots at both widths."""

from __future__ import annotations

from tests.dashboard.browsing import checked, choose_password, flashes, relaid, submit
from tests.dashboard.helpers import make_person

SAVE = "/app/automations/save"  # where the editor posts a change to be laid out again


async def test_a_condition_with_a_branch_built_in_a_browser(
    live_server, page, client, db, settings, ws
):
    vip = await client.post("/api/v1/tags", json={"name": "VIP"}, headers=ws.headers)
    assert vip.status_code == 201
    tag_id = vip.json()["tag"]["id"]
    await choose_password(
        page, live_server, await make_person(db, settings, ws, "ada@shop.example")
    )
    await page.goto(f"{live_server}/app/automations/new")
    await page.get_by_label("Name", exact=True).fill("Sorting")
    await relaid(page, SAVE, page.get_by_label("Trigger").select_option("tag_added"))
    await page.get_by_label("Tag", exact=True).select_option(label="VIP")
    await relaid(page, SAVE, page.get_by_label("Step 1", exact=True).select_option("condition"))
    field = page.get_by_label("Field of step 1 condition 1")
    await relaid(page, SAVE, field.select_option("first_name"))
    await page.get_by_label("Operator of step 1 condition 1").select_option("eq")
    await page.get_by_label("Value of step 1 condition 1").fill("Ann")
    await page.get_by_label("New step").select_option("add_to_list")
    await page.get_by_label("Where").select_option(label="step 1, if yes")
    await submit(page, "Add the step")
    assert "If yes (1 yes 1)" in await page.inner_text("main")
    await relaid(page, SAVE, page.get_by_label("Step 1 yes 1", exact=True).select_option("add_tag"))
    await page.get_by_label("Tag", exact=True).nth(1).select_option(label="VIP")
    await checked(page, "automation-condition")
    await submit(page, "Save automation")
    assert "Automation “Sorting” saved." in (await flashes(page))[0]

    listed = await client.get("/api/v1/automations", headers=ws.headers)
    automation = listed.json()["automations"][0]
    stored = (
        await client.get(f"/api/v1/automations/{automation['id']}", headers=ws.headers)
    ).json()["automation"]
    assert stored["trigger"] == {"type": "tag_added", "tag_id": tag_id}
    [condition] = stored["steps"]
    assert condition["rules"] == {
        "match": "all",
        "conditions": [{"field": "first_name", "op": "eq", "value": "Ann"}],
    }
    assert [(s["type"], s["tag_id"]) for s in condition["yes"]] == [("add_tag", tag_id)]
    assert condition["no"] == []
    await checked(page, "automation-condition-saved")
    assert page.errors == []
