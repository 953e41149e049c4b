"""An A/B test decided by clicks when the clock reaches its time: people's clicks through the
real tracking links count (a scanner's does not), the winner goes to the rest, and the report
shows each variant's clicks and the revenue of orders its recipients placed after a click."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from mailroom.campaigns import ab_test as ab_tests
from mailroom.campaigns import actions
from mailroom.core.clock import utcnow
from tests.ab_tests.test_ab_tests import _started
from tests.ecommerce.store_helpers import make_store, put_order
from tests.sending.helpers import ok
from tests.tracking.helpers import CHROME, HTML, SCANNER, hrefs, html_of, path_of


async def _click(client, app, data: bytes, agent: str = CHROME) -> None:
    link = next(h for h in hrefs(html_of(data)) if "/l/" in h)
    assert (await client.get(path_of(link), headers={"user-agent": agent})).status_code == 302
    await app.state.hits.flush()


async def test_clicks_decide_when_the_time_comes_and_revenue_is_per_variant(
    app, client, db, ws, sink, driver, settings, monkeypatch
):
    # The campaign started 31 minutes ago (the clock is moved for its start only).
    started = utcnow() - timedelta(minutes=31)
    monkeypatch.setattr(actions, "utcnow", lambda: started)
    campaign = await _started(
        client,
        db,
        ws,
        20,
        test_share=50,
        winner_by="clicks",
        decide_after_minutes=30,
        content={"html_content": HTML},
    )
    monkeypatch.undo()
    await driver.drain()
    got: dict[str, list[tuple[str, bytes]]] = defaultdict(list)
    for message in sink.received:
        got[str(message.parsed()["Subject"])].append((message.recipients[0], message.data))
    a, b = got["Subject A"], got["Subject B"]
    assert (len(a), len(b)) == (5, 5)

    store = await make_store(client, ws.headers, attribution_days=5)
    await _click(client, app, a[0][1])
    await _click(client, app, a[1][1], SCANNER)  # stored, never a person's click
    await _click(client, app, b[0][1])
    await _click(client, app, b[1][1])
    await _click(client, app, b[1][1])  # twice: one recipient who clicked
    await put_order(client, ws.headers, store["id"], "1", email=a[0][0], total="12.00")
    await put_order(client, ws.headers, store["id"], "2", email=b[0][0], total="30.00")
    await put_order(client, ws.headers, store["id"], "3", email=b[1][0], total="5.50")

    from mailroom.worker import WorkerContext, _contexts

    contexts = _contexts(WorkerContext(db, settings, "test-worker"))
    # At 29 minutes nothing is decided; at 31 (now) the test is.
    monkeypatch.setattr(ab_tests, "utcnow", lambda: started + timedelta(minutes=29))
    assert await ab_tests.decide_due(contexts, db) == 0
    monkeypatch.undo()
    assert await ab_tests.decide_due(contexts, db) == 1

    path = f"/api/v1/campaigns/{campaign['id']}"
    test = (await ok(await client.get(path, headers=ws.headers)))["campaign"]["ab_test"]
    assert (test["status"], test["winner_variant_id"], test["decided_by"]) == (
        "decided",
        "b",
        "clicks",
    )
    found = (await ok(await client.get(f"{path}/report", headers=ws.headers)))["report"]
    assert found["winner"]["reason"] == "best unique click rate: 40.0% of 5 sent"
    shown = {v["id"]: v for v in found["variants"]}
    assert (shown["a"]["clicks"], shown["b"]["clicks"]) == (1, 2)
    assert (shown["a"]["rates"]["click"], shown["b"]["rates"]["click"]) == (0.2, 0.4)
    assert {k: v["revenue"] for k, v in shown.items()} == {
        "a": {"orders": 1, "total": "12.00", "currency": "EUR", "by_currency": None},
        "b": {"orders": 2, "total": "35.50", "currency": "EUR", "by_currency": None},
    }
    assert found["revenue"]["total"] == "47.50"  # the campaign's own figure, all variants

    await driver.drain()
    everyone = [m.recipients[0] for m in sink.received]
    assert len(everyone) == len(set(everyone)) == 20
    tested = {email for email, _ in a + b}
    rest = [m for m in sink.received if m.recipients[0] not in tested]
    assert len(rest) == 10 and {str(m.parsed()["Subject"]) for m in rest} == {"Subject B"}
    done = (await ok(await client.get(path, headers=ws.headers)))["campaign"]
    assert done["status"] == "sent"


async def test_a_winner_picked_early_ends_a_timed_test(
    client, db, ws, sink, driver, settings, monkeypatch
):
    campaign = await _started(client, db, ws, 20, test_share=50, winner_by="opens")
    await driver.drain()
    path = f"/api/v1/campaigns/{campaign['id']}"
    picked = await client.post(
        f"{path}/ab-test/winner", json={"variant_id": "a"}, headers=ws.headers
    )
    test = (await ok(picked))["campaign"]["ab_test"]
    assert (test["status"], test["winner_variant_id"], test["decided_by"]) == (
        "decided",
        "a",
        "manual",
    )
    from mailroom.worker import WorkerContext, _contexts

    # The time the rule would have decided comes: nothing is decided again.
    later = utcnow() + timedelta(hours=5)
    contexts = _contexts(WorkerContext(db, settings, "test-worker"))
    monkeypatch.setattr(ab_tests, "utcnow", lambda: later)
    assert await ab_tests.decide_due(contexts, db) == 0
    monkeypatch.undo()
    await driver.drain()
    everyone = [m.recipients[0] for m in sink.received]
    assert len(everyone) == len(set(everyone)) == 20
    found = (await ok(await client.get(f"{path}/report", headers=ws.headers)))["report"]
    assert found["winner"] == {
        "variant_id": "a",
        "decided_by": "manual",
        "decided_at": found["winner"]["decided_at"],
        "reason": "picked by hand",
    }
