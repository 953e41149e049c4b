"""pull_listmonk against the listmonk stand-in (tests/platform_imports/standins.py): 1,200
subscribers paged as listmonk pages them, every subscriber and subscription status, names,
attributes of each JSON type, consent; `list_ids` (listmonk's join repeats a subscriber on two of
the lists); listmonk's refusals; the URL guard.

Only 127.0.0.0/8 is exempt from the URL guard here, as the webhook allow-list setting makes it
in the API tests.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from mailroom.core import urlguard
from mailroom.platform_imports.pull_http import PullFailed, PullRefused
from mailroom.platform_imports.pull_listmonk import check_listmonk_url, pull_listmonk
from mailroom.platform_imports.records import PlatformContact, PlatformExport
from tests.platform_imports.standins import (
    LISTMONK_TOKEN,
    LISTMONK_USER,
    ListmonkStandIn,
    listmonk_install,
)

ALLOWED = urlguard.parse_networks(["127.0.0.0/8"])
CREATED = datetime(2023, 2, 1, 9, 0, 0, 500000, tzinfo=UTC)
CONFIRMED = datetime(2023, 2, 3, 17, 30, 0, 250000, tzinfo=UTC)


@pytest.fixture
async def listmonk() -> AsyncIterator[ListmonkStandIn]:
    lists, subscribers = listmonk_install()
    async with ListmonkStandIn(LISTMONK_USER, LISTMONK_TOKEN, lists, subscribers) as served:
        yield served


async def pull(served: ListmonkStandIn, list_ids: list[int] | None = None, **kwargs: Any) -> Any:
    kwargs.setdefault("allowed", ALLOWED)
    url = kwargs.pop("url", served.url)
    token = kwargs.pop("token", LISTMONK_TOKEN)
    return await pull_listmonk(url, LISTMONK_USER, token, list_ids, **kwargs)


def sub(i: int) -> str:
    return f"sub{i:04d}@lists.mailroom.dev"


def by_email(export: PlatformExport) -> dict[str, PlatformContact]:
    return {c.email: c for c in export.contacts}


@pytest.fixture
async def install(listmonk: ListmonkStandIn) -> tuple[PlatformExport, list[tuple[int, int]]]:
    calls: list[tuple[int, int]] = []
    export = await pull(listmonk, progress=lambda done, total: calls.append((done, total)))
    return export, calls


# --- every subscriber ---------------------------------------------------------------------


async def test_every_subscriber_is_read_page_by_page(listmonk, install):
    _, calls = install
    assert [(s.path, s.param("page"), s.param("per_page")) for s in listmonk.requests] == [
        ("/api/lists", "1", "1000"),
        ("/api/subscribers", "1", "1000"),
        ("/api/subscribers", "2", "1000"),
    ]
    assert listmonk.requests[1].param("order") == "asc"
    assert listmonk.requests[1].params("list_id") == []
    assert {s.auth for s in listmonk.requests} == {(LISTMONK_USER, LISTMONK_TOKEN)}
    assert calls == [(1000, 1200), (1200, 1200)]


async def test_statuses_and_suppressions(install):
    export, _ = install
    assert export.platform == "listmonk"
    assert len(export.contacts) == 1200
    assert Counter((c.status, c.suppress) for c in export.contacts) == {
        ("subscribed", None): 1140,
        ("unsubscribed", "unsubscribed"): 30,  # blocklisted
        ("archived", None): 30,  # disabled
    }
    assert export.skipped == []
    pulled = by_email(export)
    blocked = pulled[sub(81)]  # its confirmed subscription became unsubscribed when blocked
    assert (blocked.status, blocked.suppress, blocked.lists) == ("unsubscribed", "unsubscribed", [])
    assert (blocked.consent_at, blocked.consent_ip) == (CREATED, None)
    disabled = pulled[sub(42)]
    assert (disabled.status, disabled.suppress) == ("archived", None)
    assert disabled.lists == [("Newsletter", "confirmed"), ("Product updates", "unconfirmed")]


async def test_subscriptions_become_memberships(install):
    export, _ = install
    assert export.lists == ["Newsletter", "Product updates", "Beta testers", "newsletter (4)"]
    pulled = by_email(export)
    assert pulled[sub(3)].lists == [("Newsletter", "confirmed")]
    assert pulled[sub(4)].lists == [
        ("Newsletter", "unconfirmed"),
        ("Product updates", "unconfirmed"),
    ]
    # Unsubscribed from "Product updates": no membership there.
    assert pulled[sub(10)].lists == [("Newsletter", "unconfirmed"), ("Beta testers", "confirmed")]
    assert pulled[sub(77)].lists == [("newsletter (4)", "confirmed")]
    left = pulled[sub(35)]  # enabled, unsubscribed from its only list
    assert (left.status, left.suppress, left.lists) == ("subscribed", None, [])
    assert export.warnings[0] == (
        'Two listmonk lists are named "newsletter": list 4 is imported as "newsletter (4)"'
    )
    assert export.warnings[-1] == (
        "40 enabled subscriber(s) had unsubscribed from every list they were on: imported "
        "subscribed, on no list"
    )


async def test_names_split_at_the_first_space(install):
    export, _ = install
    pulled = by_email(export)
    assert [(pulled[sub(i)].first_name, pulled[sub(i)].last_name) for i in range(5, 10)] == [
        ("Ada", "Lovelace"),
        ("Ada", "King Lovelace"),
        ("Cher", None),
        ("Grace", "Hopper"),
        (None, None),
    ]


async def test_attributes_are_fields_typed_by_their_json(install):
    export, _ = install
    assert [(f.key, f.label, f.type) for f in export.fields] == [
        ("city", "city", "text"),
        ("projects", "projects", "number"),
        ("good", "good", "boolean"),
        ("since", "since", "date"),
        ("zip", "zip", "text"),
    ]
    pulled = by_email(export)
    assert pulled[sub(84)].fields == {
        "city": "Leeds",
        "projects": "3",
        "good": "false",
        "since": "2021-03-01",
        "zip": "02134",
    }
    assert pulled[sub(50)].fields == {"city": "Leeds", "projects": "5"}
    assert 'listmonk attribute "prefs" holds an object or a list: not imported' in export.warnings
    assert (
        'Field "bad key" was not imported: its key "bad key" is not letters, digits and _'
        in export.warnings
    )


async def test_consent_is_the_confirmed_opt_in_else_the_signup(install):
    export, _ = install
    pulled = by_email(export)
    confirmed = pulled[sub(3)]
    assert (confirmed.consent_at, confirmed.consent_ip) == (CONFIRMED, "203.0.113.3")
    unconfirmed = pulled[sub(4)]
    assert (unconfirmed.consent_at, unconfirmed.consent_ip) == (CREATED, None)


# --- list_ids -----------------------------------------------------------------------------


async def test_list_ids_limit_the_pull_to_those_lists(listmonk):
    calls: list[tuple[int, int]] = []
    export = await pull(listmonk, [1, 2], progress=lambda d, t: calls.append((d, t)))
    subscribers = [s for s in listmonk.requests if s.path == "/api/subscribers"]
    assert [s.param("page") for s in subscribers] == ["1", "2"]
    assert all(s.params("list_id") == ["1", "2"] for s in subscribers)
    # 1,520 rows (a subscriber on both lists comes twice), 1,040 subscribers.
    assert calls == [(1000, 1520), (1520, 1520)]
    assert len(export.contacts) == 1040
    assert len({c.email.lower() for c in export.contacts}) == 1040
    assert not any("merged" in w for w in export.warnings)
    pulled = by_email(export)
    assert sub(11) not in pulled and sub(17) not in pulled  # on neither list
    # Only memberships of the chosen lists are kept.
    assert pulled[sub(10)].lists == [("Newsletter", "unconfirmed")]
    assert export.lists == ["Newsletter", "Product updates"]
    assert export.warnings[-1] == (
        "80 enabled subscriber(s) had unsubscribed from every list they were on: imported "
        "subscribed, on no list"
    )


async def test_an_unknown_list_id_fails_the_pull(listmonk):
    with pytest.raises(PullFailed) as caught:
        await pull(listmonk, [1, 99, 98])
    assert str(caught.value) == (
        "listmonk: no list with the id 99, 98 (or this API user may not read it)"
    )
    assert listmonk.paths() == ["/api/lists"]


# --- credentials and the URL --------------------------------------------------------------


async def test_wrong_credentials_fail_with_listmonks_reason(listmonk):
    with pytest.raises(PullFailed) as caught:
        await pull(listmonk, token="not-the-token")
    assert str(caught.value) == "listmonk: invalid API credentials"
    assert len(listmonk.requests) == 1


async def test_the_api_path_may_be_part_of_the_url(listmonk):
    export = await pull(listmonk, [3], url=f"{listmonk.url}/api/")
    assert export.lists == ["Beta testers"]
    assert len(export.contacts) == 120
    assert listmonk.paths() == ["/api/lists", "/api/subscribers"]


async def test_an_address_the_url_guard_refuses_is_a_400_naming_api_url(listmonk):
    with pytest.raises(PullRefused) as caught:
        await pull(listmonk, url="http://10.0.0.1:9000", allowed=[])
    assert (caught.value.status, caught.value.message) == (
        400,
        "api.url is not allowed: 10.0.0.1 is not a public address",
    )
    with pytest.raises(PullRefused) as caught:
        await pull(listmonk, allowed=[])
    assert caught.value.message == "api.url is not allowed: 127.0.0.1 is not a public address"
    assert listmonk.requests == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://10.0.0.1:9000", "api.url is not allowed: 10.0.0.1 is not a public address"),
        ("ftp://listmonk.example.org", "api.url is not allowed: not a valid https URL"),
        ("http://localhost:9000", "api.url is not allowed: localhost is not a public host name"),
        ("  ", "api.url is required"),
    ],
)
async def test_check_listmonk_url(url, message):
    with pytest.raises(PullRefused) as caught:
        await check_listmonk_url(url, [])
    assert (caught.value.status, caught.value.message) == (400, message)


async def test_check_listmonk_url_gives_the_base():
    assert await check_listmonk_url(" http://127.0.0.1:9000/api/ ", ALLOWED) == (
        "http://127.0.0.1:9000"
    )
