"""An assistant whose audience sends need approval asks; nothing is mailed: its send or
schedule answers 202 with the campaign `awaiting_approval` and the request on it, every check
of a real send made first; while it waits nobody changes, sends or schedules it; cancelling
withdraws it. Keys, people and assistants connected without approval are never held."""

from __future__ import annotations

from datetime import timedelta

from mailroom.core.clock import utcnow
from tests.assistants.connect import connect_assistant
from tests.sending.helpers import (
    get_campaign,
    make_campaign,
    make_contacts,
    make_list,
    ok,
    recipients,
)

BASE = "/api/v1/campaigns"


def future(**delta) -> str:
    return (utcnow() + timedelta(**delta)).isoformat().replace("+00:00", "Z")


async def audience_of_three(client, ws) -> str:
    news = await make_list(client, ws)
    await make_contacts(client, ws, [f"r{n}@mail.example" for n in range(3)], news)
    return news


async def test_an_assistant_send_is_held_and_nothing_is_queued(client, ws):
    news = await audience_of_three(client, ws)
    campaign = await make_campaign(client, ws, news)
    agent, assistant_id = await connect_assistant(client, ws)

    asked = await client.post(f"{BASE}/{campaign['id']}/send", headers=agent)
    held = (await ok(asked, 202))["campaign"]
    assert held["status"] == "awaiting_approval"
    assert held["scheduled_at"] is None and held["started_at"] is None
    approval = held["approval"]
    assert approval["requested_at"]
    assert {k: v for k, v in approval.items() if k != "requested_at"} == {
        "status": "pending",
        "requested_action": "send",
        "send_at": None,
        "requested_by_assistant_id": assistant_id,
        "decided_at": None,
        "decided_by": None,
        "rejected_reason": None,
    }
    # The key sees the same, and nobody was queued.
    seen = await get_campaign(client, ws, campaign["id"])
    assert (seen["status"], seen["approval"]) == ("awaiting_approval", approval)
    assert seen["stats"]["recipients"] == 0
    assert await recipients(client, ws, campaign["id"]) == []
    listed = await ok(
        await client.get(BASE, params={"status": "awaiting_approval"}, headers=ws.headers)
    )
    assert [c["id"] for c in listed["campaigns"]] == [campaign["id"]]

    # The audit log names the assistant and what it asked.
    log = await ok(await client.get("/api/v1/account/audit-log", headers=ws.headers))
    [entry] = [e for e in log["entries"] if e["operation"] == "send_campaign"]
    assert (entry["assistant_id"], entry["target_id"], entry["status"]) == (
        assistant_id,
        campaign["id"],
        202,
    )


async def test_nobody_changes_sends_or_schedules_a_held_campaign(client, ws):
    news = await audience_of_three(client, ws)
    campaign = await make_campaign(client, ws, news)
    agent, _ = await connect_assistant(client, ws)
    await ok(await client.post(f"{BASE}/{campaign['id']}/send", headers=agent), 202)
    url = f"{BASE}/{campaign['id']}"
    for headers in (ws.headers, agent):
        edited = await client.patch(url, json={"subject": "Changed"}, headers=headers)
        assert (edited.status_code, edited.json()) == (
            409,
            {
                "error": "Campaign is awaiting_approval: it can only be changed while it is a "
                "draft or scheduled"
            },
        )
        sent = await client.post(f"{url}/send", headers=headers)
        assert (sent.status_code, sent.json()) == (
            409,
            {
                "error": "Campaign is awaiting_approval: only a draft or scheduled campaign can be sent"
            },
        )
        scheduled = await client.post(
            f"{url}/schedule", json={"send_at": future(days=1)}, headers=headers
        )
        assert (scheduled.status_code, scheduled.json()) == (
            409,
            {
                "error": "Campaign is awaiting_approval: only a draft or scheduled campaign can "
                "be scheduled"
            },
        )
        deleted = await client.delete(url, headers=headers)
        assert (deleted.status_code, deleted.json()) == (
            409,
            {"error": "Campaign is awaiting_approval: cancel it before deleting it"},
        )
    # There is no way to approve through the API, for a key or an assistant.
    for headers in (ws.headers, agent):
        approving = await client.post(f"{url}/approve", headers=headers)
        assert approving.status_code in (404, 405)
    after = await get_campaign(client, ws, campaign["id"])
    assert (after["status"], after["subject"]) == ("awaiting_approval", campaign["subject"])
    assert await recipients(client, ws, campaign["id"]) == []


async def test_cancelling_withdraws_the_request(client, ws):
    news = await audience_of_three(client, ws)
    campaign = await make_campaign(client, ws, news)
    agent, _ = await connect_assistant(client, ws)
    await ok(await client.post(f"{BASE}/{campaign['id']}/send", headers=agent), 202)
    withdrawn = (await ok(await client.post(f"{BASE}/{campaign['id']}/cancel", headers=agent)))[
        "campaign"
    ]
    assert (withdrawn["status"], withdrawn["approval"]) == ("draft", None)
    # A draft again: editable, and the key can send it itself (never held).
    await ok(
        await client.patch(
            f"{BASE}/{campaign['id']}", json={"subject": "Fixed"}, headers=ws.headers
        )
    )
    sent = (await ok(await client.post(f"{BASE}/{campaign['id']}/send", headers=ws.headers), 202))[
        "campaign"
    ]
    assert (sent["status"], sent["approval"], sent["stats"]["recipients"]) == ("sending", None, 3)


async def test_the_checks_of_a_real_send_refuse_at_request_time(client, ws):
    news = await audience_of_three(client, ws)
    empty = await make_list(client, ws, "Empty")
    agent, _ = await connect_assistant(client, ws)

    subjectless = await make_campaign(client, ws, news, name="No subject", subject="")
    refused = await client.post(f"{BASE}/{subjectless['id']}/send", headers=agent)
    assert (refused.status_code, refused.json()) == (
        422,
        {"error": "Campaign is not ready to send: subject is empty"},
    )
    nobody = await make_campaign(client, ws, empty, name="Nobody")
    for path, body in (("send", None), ("schedule", {"send_at": future(hours=2)})):
        refused = await client.post(f"{BASE}/{nobody['id']}/{path}", json=body, headers=agent)
        assert (refused.status_code, refused.json()) == (
            422,
            {"error": "The audience has no subscribed contact: nothing would be sent"},
        )
    campaign = await make_campaign(client, ws, news)
    past = await client.post(
        f"{BASE}/{campaign['id']}/schedule", json={"send_at": future(hours=-1)}, headers=agent
    )
    assert (past.status_code, past.json()) == (400, {"error": "send_at must be in the future"})
    await ok(await client.post("/api/v1/sending/pause", headers=ws.headers))
    paused = await client.post(f"{BASE}/{campaign['id']}/send", headers=agent)
    assert paused.status_code == 403
    assert paused.json()["error"].startswith("Sending is paused for this account")
    for refused_one in (subjectless, nobody, campaign):
        after = await get_campaign(client, ws, refused_one["id"])
        assert (after["status"], after["approval"]) == ("draft", None)


async def test_a_held_schedule_keeps_the_time_asked(client, ws):
    news = await audience_of_three(client, ws)
    campaign = await make_campaign(client, ws, news)
    agent, assistant_id = await connect_assistant(client, ws)
    when = (utcnow() + timedelta(days=2)).replace(microsecond=0)
    asked = await client.post(
        f"{BASE}/{campaign['id']}/schedule",
        json={"send_at": when.isoformat().replace("+00:00", "Z")},
        headers=agent,
    )
    held = (await ok(asked, 202))["campaign"]
    assert (held["status"], held["scheduled_at"]) == ("awaiting_approval", None)
    assert held["approval"]["requested_action"] == "schedule"
    assert held["approval"]["send_at"] == when.isoformat().replace("+00:00", "Z")
    assert held["approval"]["requested_by_assistant_id"] == assistant_id
    # Audited as answered (202), not as the route's usual 200.
    log = await ok(await client.get("/api/v1/account/audit-log", headers=ws.headers))
    [entry] = [e for e in log["entries"] if e["operation"] == "schedule_campaign"]
    assert (entry["assistant_id"], entry["status"]) == (assistant_id, 202)


async def test_keys_and_assistants_without_approval_are_never_held(client, ws):
    news = await audience_of_three(client, ws)
    by_key = await make_campaign(client, ws, news, name="By key")
    sent = (await ok(await client.post(f"{BASE}/{by_key['id']}/send", headers=ws.headers), 202))[
        "campaign"
    ]
    assert (sent["status"], sent["approval"], sent["stats"]["recipients"]) == ("sending", None, 3)
    scheduled_by_key = await make_campaign(client, ws, news, name="Scheduled by key")
    answer = await client.post(
        f"{BASE}/{scheduled_by_key['id']}/schedule",
        json={"send_at": future(days=1)},
        headers=ws.headers,
    )
    assert answer.status_code == 200
    assert answer.json()["campaign"]["status"] == "scheduled"

    trusted, _ = await connect_assistant(client, ws, requires_approval=False)
    free = await make_campaign(client, ws, news, name="Trusted")
    started = (await ok(await client.post(f"{BASE}/{free['id']}/send", headers=trusted), 202))[
        "campaign"
    ]
    assert (started["status"], started["approval"]) == ("sending", None)
    assert len(await recipients(client, ws, free["id"])) == 3


async def test_an_assistant_changing_a_scheduled_campaign_waits_for_approval_again(client, ws):
    news = await audience_of_three(client, ws)
    campaign = await make_campaign(client, ws, news)
    moment = future(days=3)
    scheduled = await ok(
        await client.post(
            f"{BASE}/{campaign['id']}/schedule", json={"send_at": moment}, headers=ws.headers
        )
    )
    at = scheduled["campaign"]["scheduled_at"]
    agent, assistant_id = await connect_assistant(client, ws)
    changed = (
        await ok(
            await client.patch(
                f"{BASE}/{campaign['id']}", json={"subject": "Rewritten"}, headers=agent
            )
        )
    )["campaign"]
    assert (changed["status"], changed["subject"], changed["scheduled_at"]) == (
        "awaiting_approval",
        "Rewritten",
        None,
    )
    assert changed["approval"]["requested_action"] == "schedule"
    assert changed["approval"]["send_at"] == at
    assert changed["approval"]["requested_by_assistant_id"] == assistant_id
    # A key's change of a scheduled campaign keeps it scheduled, as before.
    other = await make_campaign(client, ws, news, name="Other")
    await ok(
        await client.post(
            f"{BASE}/{other['id']}/schedule", json={"send_at": moment}, headers=ws.headers
        )
    )
    kept = await ok(
        await client.patch(f"{BASE}/{other['id']}", json={"subject": "Mine"}, headers=ws.headers)
    )
    assert kept["campaign"]["status"] == "scheduled"
