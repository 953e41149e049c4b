"""POST /api/v1/imports with `{platform, api}`: pulls from the Mailchimp and listmonk stand-ins
(tests/platform_imports/standins.py), which page and refuse as the real APIs do."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select

from mailroom.models import PlatformImport
from tests.platform_imports.helpers import work
from tests.platform_imports.standins import (
    CUSTOMERS,
    LISTMONK_TOKEN,
    LISTMONK_USER,
    MAILCHIMP_KEY,
    ListmonkStandIn,
    MailchimpStandIn,
    listmonk_install,
    mailchimp_audiences,
)

KEY_INVALID = (
    "Mailchimp: API Key Invalid: Your API key may be invalid, or you've attempted to access "
    "the wrong datacenter."
)


@pytest.fixture
def pull_settings(settings: Any) -> Any:
    settings.webhook_allow_networks = ["127.0.0.0/8"]
    return settings


@pytest.fixture
async def mailchimp(pull_settings: Any) -> AsyncIterator[MailchimpStandIn]:
    async with MailchimpStandIn(MAILCHIMP_KEY, mailchimp_audiences()) as served:
        pull_settings.mailchimp_api_url = served.base_url
        yield served


@pytest.fixture
async def listmonk(pull_settings: Any) -> AsyncIterator[ListmonkStandIn]:
    lists, subscribers = listmonk_install()
    async with ListmonkStandIn(LISTMONK_USER, LISTMONK_TOKEN, lists, subscribers) as served:
        yield served


async def pull(
    client: Any, db: Any, settings: Any, ws: Any, body: dict[str, Any]
) -> dict[str, Any]:
    started = await client.post("/api/v1/imports", headers=ws.headers, json=body)
    assert started.status_code == 202, started.text
    queued = started.json()["import"]
    assert (queued["status"], queued["source"], queued["result"]) == ("queued", "api", None)
    await work(db, settings)
    answer = await client.get(f"/api/v1/imports/{queued['id']}", headers=ws.headers)
    job: dict[str, Any] = answer.json()["import"]
    return job


async def stored_options(db: Any, job_id: str) -> dict[str, Any]:
    async with db.session(write=False) as session:
        options: dict[str, Any] = await session.scalar(
            select(PlatformImport.options).where(PlatformImport.id == job_id)
        )
    return options


async def test_mailchimp_pull_every_audience(
    client: Any, db: Any, settings: Any, ws: Any, mailchimp: MailchimpStandIn
) -> None:
    job = await pull(
        client, db, settings, ws, {"platform": "mailchimp", "api": {"key": MAILCHIMP_KEY}}
    )
    assert job["status"] == "done", job
    result = job["result"]
    assert result["created"] == 2435
    # Four customers are also newsletter readers: one contact, a membership in each list.
    assert result["memberships"] == {"confirmed": 2285, "unconfirmed": 0}
    assert result["suppressed"]["unsubscribed"] == 51
    assert result["suppressed"]["bounced"] == 51
    assert result["lists_created"] == 2
    assert {"key": "company", "type": "text"} in result["fields_created"]
    lists = (await client.get("/api/v1/lists", headers=ws.headers)).json()["lists"]
    assert {row["name"] for row in lists} == {"Newsletter", "Customers"}
    # The key is not kept once the pull is done.
    assert "api" not in await stored_options(db, job["id"])
    assert {s.auth[1] for s in mailchimp.requests if s.auth} == {MAILCHIMP_KEY}


async def test_mailchimp_pull_one_audience(
    client: Any, db: Any, settings: Any, ws: Any, mailchimp: MailchimpStandIn
) -> None:
    body = {"platform": "mailchimp", "api": {"key": MAILCHIMP_KEY, "list_id": CUSTOMERS}}
    job = await pull(client, db, settings, ws, body)
    assert job["status"] == "done"
    assert job["result"]["lists_created"] == 1
    lists = (await client.get("/api/v1/lists", headers=ws.headers)).json()["lists"]
    assert [row["name"] for row in lists] == ["Customers"]


async def test_mailchimp_wrong_key_fails_the_job_with_mailchimps_reason(
    client: Any, db: Any, settings: Any, ws: Any, mailchimp: MailchimpStandIn
) -> None:
    body = {"platform": "mailchimp", "api": {"key": "0000-us21"}}
    job = await pull(client, db, settings, ws, body)
    assert (job["status"], job["error"], job["result"]) == ("failed", KEY_INVALID, None)
    assert "api" not in await stored_options(db, job["id"])
    total = (await client.get("/api/v1/contacts?limit=1", headers=ws.headers)).json()
    assert total["pagination"]["total"] == 0


async def test_listmonk_pull(
    client: Any, db: Any, settings: Any, ws: Any, listmonk: ListmonkStandIn
) -> None:
    api = {"url": listmonk.url, "username": LISTMONK_USER, "token": LISTMONK_TOKEN}
    job = await pull(client, db, settings, ws, {"platform": "listmonk", "api": api})
    assert job["status"] == "done", job
    result = job["result"]
    assert result["created"] == 1200
    assert result["suppressed"] == {"unsubscribed": 30, "bounced": 0, "complained": 0}
    assert result["lists_created"] == 4
    assert result["memberships"]["confirmed"] > 0 and result["memberships"]["unconfirmed"] > 0
    archived = await client.get("/api/v1/contacts?status=archived&limit=1", headers=ws.headers)
    assert archived.json()["pagination"]["total"] == 30
    lists = (await client.get("/api/v1/lists", headers=ws.headers)).json()["lists"]
    assert {row["name"] for row in lists} == {
        "Newsletter",
        "Product updates",
        "Beta testers",
        "newsletter (4)",
    }


async def test_listmonk_pull_of_some_lists(
    client: Any, db: Any, settings: Any, ws: Any, listmonk: ListmonkStandIn
) -> None:
    api = {
        "url": listmonk.url,
        "username": LISTMONK_USER,
        "token": LISTMONK_TOKEN,
        "list_ids": [3],
    }
    job = await pull(client, db, settings, ws, {"platform": "listmonk", "api": api})
    assert job["status"] == "done", job
    assert all(s.params("list_id") == ["3"] for s in listmonk.requests if "subscribers" in s.path)
    lists = (await client.get("/api/v1/lists", headers=ws.headers)).json()["lists"]
    assert [row["name"] for row in lists] == ["Beta testers"]


async def test_listmonk_wrong_token(
    client: Any, db: Any, settings: Any, ws: Any, listmonk: ListmonkStandIn
) -> None:
    api = {"url": listmonk.url, "username": LISTMONK_USER, "token": "wrong"}
    job = await pull(client, db, settings, ws, {"platform": "listmonk", "api": api})
    assert job["status"] == "failed"
    assert job["error"] == "listmonk: invalid API credentials"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"platform": "mailchimp", "api": {"key": "abc"}},
            "api.key must end with its data centre, like -us21",
        ),
        ({"platform": "mailchimp", "api": {}}, "api.key is required"),
        (
            {"platform": "brevo", "api": {"key": "x"}},
            "platform brevo has no API pull here: upload its export file instead",
        ),
        (
            {"platform": "mailchimp", "api": {"key": "a-us1", "token": "x"}},
            "api.token is not a field of a mailchimp pull",
        ),
        (
            {"platform": "listmonk", "api": {"url": "http://127.0.0.1:9", "username": "u"}},
            "api.token is required",
        ),
        (
            {
                "platform": "listmonk",
                "api": {
                    "url": "http://127.0.0.1:9",
                    "username": "u",
                    "token": "t",
                    "list_ids": ["1"],
                },
            },
            "api.list_ids must be an array of listmonk list ids (whole numbers)",
        ),
        (
            {"platform": "mailchimp"},
            "api must be an object: {key, list_id?} for mailchimp, {url, username, token, list_ids?} for listmonk",
        ),
        (
            {"platform": "mailchimp", "api": {"key": "a-us1"}, "dry_run": "yes"},
            "dry_run must be true or false",
        ),
        (
            {"platform": "nope", "api": {}},
            "platform must be one of mailchimp, listmonk, brevo, kit, mautic",
        ),
    ],
)
async def test_pull_refusals(
    client: Any, pull_settings: Any, ws: Any, body: Any, message: str
) -> None:
    answer = await client.post("/api/v1/imports", headers=ws.headers, json=body)
    assert (answer.status_code, answer.json()) == (400, {"error": message})


async def test_listmonk_url_refused_by_the_guard(client: Any, ws: Any) -> None:
    # No allow-list here: 127.0.0.1 is a loopback address the guard refuses.
    api = {"url": "http://127.0.0.1:9000", "username": "u", "token": "t"}
    answer = await client.post(
        "/api/v1/imports", headers=ws.headers, json={"platform": "listmonk", "api": api}
    )
    assert answer.status_code == 400
    assert answer.json()["error"].startswith("api.url is not allowed: ")
    listed = await client.get("/api/v1/imports", headers=ws.headers)
    assert listed.json()["pagination"]["total"] == 0
