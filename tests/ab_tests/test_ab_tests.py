"""A/B tests on campaigns (issue 32): a draft's `ab_test` is validated and stored; sending
splits the audience at random and evenly among the variants within the test share, the rest
waits; the winner (by opens, by clicks, or picked by hand) goes to the rest; each recipient
gets one variant, never two."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from mailroom.campaigns import ab_test as ab_tests
from mailroom.core.clock import utcnow
from mailroom.models import Campaign, SendLog
from tests.sending.conftest import verified_domain
from tests.sending.helpers import campaign_body, make_contacts, make_list, ok

TWO = [{"subject": "Subject A"}, {"subject": "Subject B", "from_name": "Ann at Shop"}]


async def _draft(client, ws, list_id, content=None, **test):
    body = campaign_body(list_id, ab_test={"variants": TWO, **test}, **(content or {}))
    return (await ok(await client.post("/api/v1/campaigns", json=body, headers=ws.headers), 201))[
        "campaign"
    ]


@pytest.mark.parametrize(
    ("test", "message"),
    [
        ({"variants": TWO[:1]}, "ab_test.variants must have 2 to 5 items"),
        ({"variants": TWO * 3}, "ab_test.variants must have 2 to 5 items"),
        ({"variants": "ab"}, "ab_test.variants must have 2 to 5 items"),
        ({"variants": TWO, "test_share": 9}, "ab_test.test_share must be between 10 and 50"),
        ({"variants": TWO, "test_share": 51}, "ab_test.test_share must be between 10 and 50"),
        ({"variants": TWO, "test_share": True}, "ab_test.test_share must be between 10 and 50"),
        (
            {"variants": TWO, "winner_by": "revenue"},
            "ab_test.winner_by must be one of opens, clicks, manual",
        ),
        (
            {"variants": TWO, "decide_after_minutes": 29},
            "ab_test.decide_after_minutes must be between 30 and 10080",
        ),
        ({"variants": [TWO[0], {"name": "Same"}]}, "ab_test.variants[1] changes nothing"),
        ({"variants": [TWO[0], {"subject": None}]}, "ab_test.variants[1] changes nothing"),
        (
            {"variants": [{"id": "x", "subject": "a"}, {"id": "x", "subject": "b"}]},
            "ab_test.variants[1].id repeats 'x'",
        ),
        ({"variants": TWO, "colour": "red"}, "Unknown ab_test key(s): colour"),
    ],
)
async def test_a_test_that_cannot_run_is_refused_and_nothing_is_made(client, ws, test, message):
    list_id = await make_list(client, ws)
    body = campaign_body(list_id, ab_test=test)
    refused = await client.post("/api/v1/campaigns", json=body, headers=ws.headers)
    assert (refused.status_code, refused.json()) == (400, {"error": message})
    listed = await ok(await client.get("/api/v1/campaigns", headers=ws.headers))
    assert listed["campaigns"] == []


async def test_a_template_syntax_error_names_the_variant_and_field(client, ws):
    list_id = await make_list(client, ws)
    body = campaign_body(
        list_id, ab_test={"variants": [TWO[0], {"html_content": "<p>{% if %}</p>"}]}
    )
    refused = await client.post("/api/v1/campaigns", json=body, headers=ws.headers)
    assert refused.status_code == 400
    assert refused.json()["error"].startswith(
        "Template syntax error in ab_test.variants[1].html_content, line 1"
    )


async def test_a_draft_keeps_its_test_and_a_change_replaces_or_removes_it(client, ws):
    list_id = await make_list(client, ws)
    made = await _draft(client, ws, list_id, test_share=30, winner_by="clicks")
    test = made["ab_test"]
    assert [(v["id"], v["name"], v["subject"]) for v in test["variants"]] == [
        ("a", "Variant A", "Subject A"),
        ("b", "Variant B", "Subject B"),
    ]
    assert test["variants"][1]["from_name"] == "Ann at Shop"
    assert test["variants"][0]["from_name"] is None  # not changed by that variant
    assert (test["test_share"], test["winner_by"], test["decide_after_minutes"]) == (
        30,
        "clicks",
        240,
    )
    assert (test["status"], test["winner_variant_id"], test["decided_at"]) == (None, None, None)
    path = f"/api/v1/campaigns/{made['id']}"
    changed = await ok(
        await client.patch(
            path,
            json={"ab_test": {"variants": [*TWO, {"id": "c3", "preheader": "Hi"}]}},
            headers=ws.headers,
        )
    )
    assert [v["id"] for v in changed["campaign"]["ab_test"]["variants"]] == ["a", "b", "c3"]
    shown = await ok(await client.get(path, headers=ws.headers))
    assert shown["campaign"]["ab_test"]["test_share"] == 20  # the default, as replaced
    removed = await ok(await client.patch(path, json={"ab_test": None}, headers=ws.headers))
    assert removed["campaign"]["ab_test"] is None


async def _started(client, db, ws, recipients: int, content=None, **test):
    await verified_domain(client, db, ws)
    list_id = await make_list(client, ws)
    emails = [f"r{i:03d}@mailtest.io" for i in range(recipients)]
    await make_contacts(client, ws, emails, list_id)
    campaign = await _draft(client, ws, list_id, content, **test)
    sent = await client.post(f"/api/v1/campaigns/{campaign['id']}/send", headers=ws.headers)
    return (await ok(sent, 202))["campaign"]


async def _rows(db, campaign_id):
    async with db.session(write=False) as session:
        return (
            await session.execute(
                select(SendLog.email, SendLog.status, SendLog.variant_id).where(
                    SendLog.campaign_id == campaign_id
                )
            )
        ).all()


async def test_the_split_is_even_within_the_share_and_the_rest_waits(client, db, ws, sink, driver):
    campaign = await _started(client, db, ws, 101, test_share=30)
    assert campaign["ab_test"]["status"] == "testing"
    assert campaign["ab_test"]["decides_at"] is not None
    rows = await _rows(db, campaign["id"])
    sizes = Counter(variant for _email, status, variant in rows if status == "pending")
    assert sum(sizes.values()) == 30 and set(sizes) == {"a", "b"}
    assert max(sizes.values()) - min(sizes.values()) <= 1
    assert Counter(status for _e, status, _v in rows) == {"pending": 30, "waiting": 71}

    await driver.drain()
    subjects = Counter(str(m.parsed()["Subject"]) for m in sink.received)
    assert subjects == {"Subject A": sizes["a"], "Subject B": sizes["b"]}
    by_b = [m for m in sink.received if str(m.parsed()["Subject"]) == "Subject B"]
    assert all("Ann at Shop" in str(m.parsed()["From"]) for m in by_b)
    shown = await ok(await client.get(f"/api/v1/campaigns/{campaign['id']}", headers=ws.headers))
    assert shown["campaign"]["status"] == "sending"  # the rest waits for the winner


async def test_a_winner_picked_by_hand_goes_to_the_rest_once(client, db, ws, sink, driver):
    campaign = await _started(client, db, ws, 40, test_share=50, winner_by="manual")
    await driver.drain()
    tested = {m.recipients[0] for m in sink.received}
    assert len(tested) == 20
    path = f"/api/v1/campaigns/{campaign['id']}/ab-test/winner"
    wrong = await client.post(path, json={"variant_id": "z"}, headers=ws.headers)
    assert (wrong.status_code, wrong.json()) == (400, {"error": "variant_id must be one of a, b"})
    picked = await ok(await client.post(path, json={"variant_id": "b"}, headers=ws.headers))
    test = picked["campaign"]["ab_test"]
    assert (test["status"], test["winner_variant_id"], test["decided_by"]) == (
        "decided",
        "b",
        "manual",
    )
    again = await client.post(path, json={"variant_id": "a"}, headers=ws.headers)
    assert again.status_code == 409
    assert again.json() == {
        "error": "Campaign is not testing: a winner can only be picked while its A/B test runs"
    }
    await driver.drain()
    everyone = [m.recipients[0] for m in sink.received]
    assert len(everyone) == len(set(everyone)) == 40  # each once, one variant each
    rest = [m for m in sink.received if m.recipients[0] not in tested]
    assert {str(m.parsed()["Subject"]) for m in rest} == {"Subject B"}
    done = await ok(await client.get(f"/api/v1/campaigns/{campaign['id']}", headers=ws.headers))
    assert done["campaign"]["status"] == "sent"
    report = (
        await ok(await client.get(f"/api/v1/campaigns/{campaign['id']}/report", headers=ws.headers))
    )["report"]
    assert [v["id"] for v in report["variants"]] == ["a", "b"]
    assert sum(v["sent"] for v in report["variants"]) == 40
    assert report["winner"]["variant_id"] == "b"


async def test_the_worker_picks_the_best_open_rate_when_the_time_comes(
    client, db, ws, sink, driver, settings
):
    campaign = await _started(client, db, ws, 40, test_share=50, decide_after_minutes=30)
    await driver.drain()
    # Two of variant b's recipients open, one of a's.
    async with db.transaction() as session:
        for variant, opened in (("a", 1), ("b", 2)):
            ids = (
                await session.scalars(
                    select(SendLog.id)
                    .where(SendLog.campaign_id == campaign["id"], SendLog.variant_id == variant)
                    .limit(opened)
                )
            ).all()
            await session.execute(
                update(SendLog).where(SendLog.id.in_(ids)).values(first_opened_at=utcnow())
            )
    from mailroom.worker import WorkerContext, _contexts

    ctx = WorkerContext(db, settings, "test-worker")
    assert await ab_tests.decide_due(_contexts(ctx), db) == 0  # not yet: 30 minutes
    async with db.transaction() as session:
        row = await session.get(Campaign, campaign["id"])
        assert row is not None
        test = dict(row.ab_test or {})
        test["decides_at"] = (utcnow() - timedelta(seconds=1)).isoformat()
        row.ab_test = test
    assert await ab_tests.decide_due(_contexts(ctx), db) == 1
    shown = await ok(await client.get(f"/api/v1/campaigns/{campaign['id']}", headers=ws.headers))
    test = shown["campaign"]["ab_test"]
    assert (test["winner_variant_id"], test["decided_by"]) == ("b", "opens")
    await driver.drain()
    assert len({m.recipients[0] for m in sink.received}) == len(sink.received) == 40


async def test_too_small_a_test_audience_is_refused_and_nothing_is_queued(client, db, ws):
    await verified_domain(client, db, ws)
    list_id = await make_list(client, ws)
    await make_contacts(client, ws, [f"r{i}@mailtest.io" for i in range(5)], list_id)
    campaign = await _draft(client, ws, list_id, test_share=20)  # 1 of 5: fewer than 2
    sent = await client.post(f"/api/v1/campaigns/{campaign['id']}/send", headers=ws.headers)
    assert (sent.status_code, sent.json()) == (422, {"error": "Audience too small for 2 variants"})
    assert await _rows(db, campaign["id"]) == []
    shown = await ok(await client.get(f"/api/v1/campaigns/{campaign['id']}", headers=ws.headers))
    assert shown["campaign"]["status"] == "draft"


async def test_cancelling_a_test_skips_the_waiting_rest(client, db, ws, sink, driver):
    campaign = await _started(client, db, ws, 20, test_share=50, winner_by="manual")
    await driver.drain()
    cancelled = await client.post(f"/api/v1/campaigns/{campaign['id']}/cancel", headers=ws.headers)
    assert (await ok(cancelled))["campaign"]["status"] == "cancelled"
    statuses = Counter(status for _e, status, _v in await _rows(db, campaign["id"]))
    assert statuses == {"sent": 10, "skipped": 10}
    # A copy takes the test's variants and rules, not how this one went.
    copied = await client.post(f"/api/v1/campaigns/{campaign['id']}/duplicate", headers=ws.headers)
    test = (await ok(copied, 201))["campaign"]["ab_test"]
    assert [v["subject"] for v in test["variants"]] == ["Subject A", "Subject B"]
    assert (test["winner_by"], test["test_share"], test["status"]) == ("manual", 50, None)


async def test_a_test_too_small_cannot_be_scheduled_either(client, db, ws):
    await verified_domain(client, db, ws)
    list_id = await make_list(client, ws)
    await make_contacts(client, ws, [f"r{i}@mailtest.io" for i in range(5)], list_id)
    campaign = await _draft(client, ws, list_id, test_share=20)
    later = (utcnow() + timedelta(days=1)).isoformat().replace("+00:00", "Z")
    answer = await client.post(
        f"/api/v1/campaigns/{campaign['id']}/schedule", json={"send_at": later}, headers=ws.headers
    )
    assert (answer.status_code, answer.json()) == (
        422,
        {"error": "Audience too small for 2 variants"},
    )
    shown = await ok(await client.get(f"/api/v1/campaigns/{campaign['id']}", headers=ws.headers))
    assert (shown["campaign"]["status"], shown["campaign"]["scheduled_at"]) == ("draft", None)
