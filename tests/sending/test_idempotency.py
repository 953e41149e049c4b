"""`Idempotency-Key` on POSTs under /api/v1: a replay within 24 hours answers the first status
and the identical body without doing the work again; the same key with another body is 409;
keys are per workspace; a refused first try leaves no key (nothing was done, as Stripe keeps
nothing for a request that never began its work); identical requests at once do the work once
(in one process the second waits and replays; across processes the key's row decides)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import func, select, update

from mailroom.app import create_app
from mailroom.core.clock import utcnow
from mailroom.models import Contact, IdempotencyKey, SendLog
from tests.sending.helpers import make_campaign, make_contacts, make_list, ok, recipients

REUSED = {"error": "Idempotency-Key reused with a different request"}
IN_PROGRESS = (
    "A request with this Idempotency-Key is still being processed or its answer was lost; "
    "its work was done once"
)
SEND = {"to": "jane@mailtest.io", "subject": "Receipt", "text_content": "Thanks"}


def keyed(ws, key: str) -> dict[str, str]:
    return {**ws.headers, "Idempotency-Key": key}


async def count(db, model, **where) -> int:
    async with db.session() as session:
        query = select(func.count()).select_from(model)
        for name, value in where.items():
            query = query.where(getattr(model, name) == value)
        return int(await session.scalar(query) or 0)


async def listed(client, ws, path: str) -> int:
    """`pagination.total` of a list endpoint, as the client sees it."""
    return int((await ok(await client.get(path, headers=ws.headers)))["pagination"]["total"])


async def ready_to_send(client, ws) -> None:
    await ok(
        await client.patch(
            "/api/v1/sending", json={"from_email": "news@shop.example"}, headers=ws.headers
        )
    )
    await make_contacts(client, ws, ["jane@mailtest.io"])


async def test_a_replay_answers_the_first_response_and_does_nothing(client, db, ws):
    first = await client.post(
        "/api/v1/contacts", json={"email": "jane@mailtest.io"}, headers=keyed(ws, "k-1")
    )
    assert first.status_code == 201
    assert "idempotent-replayed" not in first.headers
    again = await client.post(
        "/api/v1/contacts", json={"email": "jane@mailtest.io"}, headers=keyed(ws, "k-1")
    )
    assert again.status_code == 201
    assert again.content == first.content  # the identical body, ids and timestamps included
    assert again.headers["idempotent-replayed"] == "true"
    assert again.headers["content-type"] == first.headers["content-type"]
    assert await listed(client, ws, "/api/v1/contacts") == 1
    assert await count(db, Contact) == 1

    other = await client.post(
        "/api/v1/contacts", json={"email": "tom@mailtest.io"}, headers=keyed(ws, "k-1")
    )
    assert (other.status_code, other.json()) == (409, REUSED)
    assert await listed(client, ws, "/api/v1/contacts") == 1
    elsewhere = await client.post("/api/v1/tags", json={"name": "x"}, headers=keyed(ws, "k-1"))
    assert (elsewhere.status_code, elsewhere.json()) == (409, REUSED)  # another route, same key
    query = await client.post(
        "/api/v1/contacts?x=1", json={"email": "jane@mailtest.io"}, headers=keyed(ws, "k-1")
    )
    assert (query.status_code, query.json()) == (409, REUSED)  # the query is part of it


async def test_a_tag_is_made_once(client, ws):
    first = await client.post("/api/v1/tags", json={"name": "VIP"}, headers=keyed(ws, "t"))
    again = await client.post("/api/v1/tags", json={"name": "VIP"}, headers=keyed(ws, "t"))
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.content == first.content
    unkeyed = await client.post("/api/v1/tags", json={"name": "VIP"}, headers=ws.headers)
    assert unkeyed.status_code == 409  # without the key it is a second create
    tags = (await ok(await client.get("/api/v1/tags", headers=ws.headers)))["tags"]
    assert [t["name"] for t in tags] == ["VIP"]


async def test_keys_are_per_workspace(client, db, factory, ws):
    other = await factory.workspace("pro")
    answers = []
    for workspace in (ws, other):
        made = await client.post(
            "/api/v1/contacts", json={"email": "jane@mailtest.io"}, headers=keyed(workspace, "same")
        )
        assert made.status_code == 201
        assert "idempotent-replayed" not in made.headers
        answers.append(made.json()["contact"]["id"])
        assert await listed(client, workspace, "/api/v1/contacts") == 1
    assert answers[0] != answers[1]
    assert await count(db, Contact) == 2
    # ...and a different body under the same key in the other workspace is its own request
    tom = await client.post(
        "/api/v1/tags", json={"name": "x"}, headers=keyed(await factory.workspace("pro"), "same")
    )
    assert tom.status_code == 201


async def test_a_refused_request_leaves_no_key(client, db, ws):
    refused = await client.post("/api/v1/contacts", json={"email": "nope"}, headers=keyed(ws, "r"))
    assert refused.status_code == 400
    again = await client.post("/api/v1/contacts", json={"email": "nope"}, headers=keyed(ws, "r"))
    assert again.status_code == 400 and "idempotent-replayed" not in again.headers  # judged anew
    fixed = await client.post(
        "/api/v1/contacts", json={"email": "jane@mailtest.io"}, headers=keyed(ws, "r")
    )
    assert fixed.status_code == 201
    assert await listed(client, ws, "/api/v1/contacts") == 1
    assert await count(db, IdempotencyKey) == 1


async def test_a_send_refused_while_paused_goes_through_with_the_same_key_once_resumed(
    client, db, ws
):
    """A refusal changes nothing, so nothing is replayed: the same request with the same key
    is judged again once the reason is gone (Stripe replays a declined charge because the
    decline left a charge object; a refusal here leaves nothing)."""
    await ready_to_send(client, ws)
    await ok(await client.post("/api/v1/sending/pause", headers=ws.headers))
    refused = await client.post("/api/v1/send", json=SEND, headers=keyed(ws, "s"))
    assert refused.status_code == 403
    assert refused.json()["error"].startswith("Sending is paused for this account")
    await ok(await client.post("/api/v1/sending/resume", headers=ws.headers))
    sent = await client.post("/api/v1/send", json=SEND, headers=keyed(ws, "s"))
    assert sent.status_code == 202
    again = await client.post("/api/v1/send", json=SEND, headers=keyed(ws, "s"))
    assert (again.status_code, again.content) == (202, sent.content)
    assert await count(db, SendLog, kind="transactional") == 1


async def test_a_send_and_a_campaign_start_happen_once(client, db, ws):
    await ok(
        await client.patch(
            "/api/v1/sending", json={"from_email": "news@shop.example"}, headers=ws.headers
        )
    )
    news = await make_list(client, ws)
    await make_contacts(client, ws, ["jane@mailtest.io", "tom@mailtest.io"], news)
    first = await client.post("/api/v1/send", json=SEND, headers=keyed(ws, "send-1"))
    again = await client.post("/api/v1/send", json=SEND, headers=keyed(ws, "send-1"))
    assert (first.status_code, again.status_code) == (202, 202)
    assert again.content == first.content
    message = first.json()["message"]["id"]
    assert (await ok(await client.get(f"/api/v1/send/{message}", headers=ws.headers)))["message"]
    assert await count(db, SendLog, kind="transactional") == 1

    campaign = await make_campaign(client, ws, news)
    url = f"/api/v1/campaigns/{campaign['id']}/send"
    started = await client.post(url, headers=keyed(ws, "start-1"))
    replay = await client.post(url, headers=keyed(ws, "start-1"))
    assert (started.status_code, replay.status_code) == (202, 202)
    assert replay.content == started.content
    assert len(await recipients(client, ws, campaign["id"])) == 2
    assert await count(db, SendLog, kind="campaign") == 2
    unkeyed = await client.post(url, headers=ws.headers)
    assert unkeyed.status_code == 409  # without the key it is a second start, refused


@pytest.mark.parametrize("attempts", [2, 6])
async def test_identical_requests_at_once_do_the_work_once(client, db, ws, attempts):
    """In one process the copies wait for the first and answer its response again."""
    answers = await asyncio.gather(
        *(
            client.post(
                "/api/v1/contacts", json={"email": "race@mailtest.io"}, headers=keyed(ws, "race")
            )
            for _ in range(attempts)
        )
    )
    assert [a.status_code for a in answers] == [201] * attempts
    assert {a.content for a in answers} == {answers[0].content}
    assert sum(a.headers.get("idempotent-replayed") == "true" for a in answers) == attempts - 1
    assert await listed(client, ws, "/api/v1/contacts") == 1


async def test_identical_sends_at_once_queue_one_message(client, db, ws):
    await ready_to_send(client, ws)
    answers = await asyncio.gather(
        *(client.post("/api/v1/send", json=SEND, headers=keyed(ws, "once")) for _ in range(5))
    )
    assert [a.status_code for a in answers] == [202] * 5
    assert {a.json()["message"]["id"] for a in answers} == {answers[0].json()["message"]["id"]}
    assert await count(db, SendLog, kind="transactional") == 1


async def test_two_server_processes_do_the_work_once(client, db, settings, ws):
    """Another process (its own app, the same database) cannot wait on this one's queue: the
    key's row, committed with the work, decides. The loser's work is taken back (409) and a
    later retry replays the winner's answer."""
    await ready_to_send(client, ws)
    other = create_app(settings)
    try:
        transport = httpx.ASGITransport(app=other)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as peer:
            answers = await asyncio.gather(
                client.post("/api/v1/send", json=SEND, headers=keyed(ws, "two")),
                peer.post("/api/v1/send", json=SEND, headers=keyed(ws, "two")),
            )
            statuses = sorted(a.status_code for a in answers)
            assert statuses in ([202, 202], [202, 409]), [a.text for a in answers]
            for answer in answers:
                if answer.status_code == 409:
                    assert answer.json() == {"error": IN_PROGRESS}
            winner = next(a for a in answers if a.status_code == 202)
            retry = await peer.post("/api/v1/send", json=SEND, headers=keyed(ws, "two"))
            assert (retry.status_code, retry.content) == (202, winner.content)
    finally:
        await other.state.db.dispose()
    assert await count(db, SendLog, kind="transactional") == 1


async def test_a_key_is_forgotten_after_24_hours(client, db, ws):
    first = await client.post(
        "/api/v1/contacts", json={"email": "jane@mailtest.io"}, headers=keyed(ws, "old")
    )
    assert first.status_code == 201
    async with db.transaction() as session:
        await session.execute(
            update(IdempotencyKey).values(created_at=utcnow() - timedelta(hours=23, minutes=59))
        )
    within = await client.post(
        "/api/v1/contacts", json={"email": "tom@mailtest.io"}, headers=keyed(ws, "old")
    )
    assert (within.status_code, within.json()) == (409, REUSED)
    async with db.transaction() as session:
        await session.execute(
            update(IdempotencyKey).values(created_at=utcnow() - timedelta(hours=24, minutes=1))
        )
    later = await client.post(
        "/api/v1/contacts", json={"email": "tom@mailtest.io"}, headers=keyed(ws, "old")
    )
    assert later.status_code == 201, later.text  # a new request, not the old one's replay
    assert "idempotent-replayed" not in later.headers
    assert await listed(client, ws, "/api/v1/contacts") == 2


async def test_a_read_only_preview_keeps_no_key(client, db, ws):
    body = {"rules": {"match": "all", "conditions": []}}
    for _ in range(2):
        preview = await client.post(
            "/api/v1/segments/preview", json=body, headers=keyed(ws, "peek")
        )
        assert preview.status_code < 500
    assert await count(db, IdempotencyKey) == 0


@pytest.mark.parametrize("key", ["x" * 256, "caf\u00e9", "tab\there"])
async def test_a_bad_key_is_400_and_does_nothing(client, db, ws, key):
    headers = [(k, v) for k, v in ws.headers.items()]
    headers.append(("Idempotency-Key", key))
    response = await client.post(
        "/api/v1/tags", json={"name": "x"}, headers=httpx.Headers(headers, encoding="utf-8")
    )
    assert (response.status_code, response.json()) == (
        400,
        {"error": "Idempotency-Key must be 1-255 printable ASCII characters"},
    )
    assert (await ok(await client.get("/api/v1/tags", headers=ws.headers)))["tags"] == []


async def test_the_header_is_documented_on_every_post(client):
    document = (await ok(await client.get("/openapi.json")))["paths"]
    posts = {
        path: item["post"]
        for path, item in document.items()
        if path.startswith("/api/v1") and "post" in item
    }
    assert {"/api/v1/contacts", "/api/v1/tags", "/api/v1/send"} <= set(posts)
    assert "/api/v1/campaigns/{id}/send" in posts
    for path, operation in posts.items():
        names = [p["name"] for p in operation.get("parameters", []) if p["in"] == "header"]
        if operation.get("security") == []:
            # Keys are kept per workspace; the grant exchange, made with no key, has none.
            assert "Idempotency-Key" not in names, path
            continue
        assert names.count("Idempotency-Key") == 1, path
        assert "409" in operation["responses"], path
    described = next(
        p for p in posts["/api/v1/send"]["parameters"] if p["name"] == "Idempotency-Key"
    )
    assert "Idempotency-Key reused with a different request" in described["description"]
    listing = document["/api/v1/contacts"]["get"]
    assert "Idempotency-Key" not in [p["name"] for p in listing.get("parameters", [])]
