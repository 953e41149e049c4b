"""Automations end to end through the API and the worker's loop: triggers enrol once, steps
take effect, waits survive as due times, conditions branch, and runs end as they should."""

from __future__ import annotations

from tests.automations.helpers import (
    activate,
    create_contact,
    get_automation,
    make_automation,
    make_tag,
    run_due,
    runs_of,
    skip_waits,
    tags_of,
)


async def test_a_new_contact_goes_through_a_wait_and_gets_tagged(client, db, ws, settings):
    welcomed = await make_tag(client, ws, "Welcomed")
    automation = await make_automation(
        client,
        ws,
        trigger={"type": "contact_created"},
        steps=[
            {"id": "pause", "type": "wait", "seconds": 3600, "label": "An hour"},
            {"id": "tag", "type": "add_tag", "tag_id": welcomed},
        ],
    )
    assert automation["status"] == "draft"
    await activate(client, ws, automation["id"])
    jane = await create_contact(client, ws, "jane@mail.example")

    assert await run_due(db, settings) == 1
    [run] = await runs_of(client, ws, automation["id"])
    assert (run["contact_id"], run["status"], run["step_id"]) == (jane, "waiting", "pause")
    assert run["next_run_at"] is not None
    assert await tags_of(client, ws, jane) == []

    await skip_waits(db)
    await run_due(db, settings)
    [run] = await runs_of(client, ws, automation["id"])
    assert run["status"] == "completed" and run["next_run_at"] is None
    assert [h["step_id"] for h in run["history"]] == ["pause", "pause", "tag", None]
    assert await tags_of(client, ws, jane) == ["Welcomed"]
    stats = (await get_automation(client, ws, automation["id"]))["stats"]
    assert stats == {"enrolled": 1, "active": 0, "completed": 1, "exited": 0, "failed": 0}
