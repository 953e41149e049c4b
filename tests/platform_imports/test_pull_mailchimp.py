"""pull_mailchimp against the Mailchimp stand-in (tests/platform_imports/standins.py): two
audiences, 2,540 members paged as Mailchimp pages them, merge fields of every type, every
member status, tags, consent; one audience by id; Mailchimp's refusals; the key's data centre;
the URL guard; retries, redirects and the size limit.

Only 127.0.0.0/8 is exempt from the URL guard here, as the webhook allow-list setting makes it
in the API tests.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from mailroom.core import urlguard
from mailroom.platform_imports import pull_http
from mailroom.platform_imports.pull_http import PullFailed, PullRefused
from mailroom.platform_imports.pull_mailchimp import mailchimp_base_url, pull_mailchimp
from mailroom.platform_imports.records import PlatformContact, PlatformExport
from mailroom.webhooks import client as webhook_client
from tests.platform_imports.standins import (
    CUSTOMERS,
    MAILCHIMP_KEY,
    NEWSLETTER,
    MailchimpStandIn,
    client,
    mailchimp_audiences,
    reader,
)

ALLOWED = urlguard.parse_networks(["127.0.0.0/8"])
SIGNUP = datetime(2021, 1, 2, 3, 4, 5, tzinfo=UTC)
OPTIN = datetime(2021, 1, 3, 8, 0, tzinfo=UTC)
KEY_INVALID = (
    "Mailchimp: API Key Invalid: Your API key may be invalid, or you've attempted to access "
    "the wrong datacenter."
)


@pytest.fixture
async def mailchimp() -> AsyncIterator[MailchimpStandIn]:
    async with MailchimpStandIn(MAILCHIMP_KEY, mailchimp_audiences()) as served:
        yield served


@pytest.fixture
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pull_http, "RETRY_DELAYS", (0.0, 0.0))


async def pull(served: MailchimpStandIn, list_id: str | None = None, **kwargs: Any) -> Any:
    kwargs.setdefault("base_url", served.base_url)
    kwargs.setdefault("allowed", ALLOWED)
    return await pull_mailchimp(kwargs.pop("key", MAILCHIMP_KEY), list_id, **kwargs)


async def failure(served: MailchimpStandIn, list_id: str | None = None, **kwargs: Any) -> str:
    with pytest.raises(PullFailed) as caught:
        await pull(served, list_id, **kwargs)
    return str(caught.value)


def by_email(export: PlatformExport) -> dict[str, PlatformContact]:
    return {c.email: c for c in export.contacts}


@pytest.fixture
async def account(mailchimp: MailchimpStandIn) -> tuple[PlatformExport, list[tuple[int, int]]]:
    calls: list[tuple[int, int]] = []
    export = await pull(mailchimp, progress=lambda done, total: calls.append((done, total)))
    return export, calls


# --- every audience -----------------------------------------------------------------------


async def test_every_audience_is_read_page_by_page(mailchimp, account):
    pages = [(s.path, s.param("count"), s.param("offset")) for s in mailchimp.requests]
    assert pages == [
        ("/3.0/lists", "1000", "0"),
        (f"/3.0/lists/{NEWSLETTER}/merge-fields", "1000", "0"),
        (f"/3.0/lists/{NEWSLETTER}/members", "1000", "0"),
        (f"/3.0/lists/{NEWSLETTER}/members", "1000", "1000"),
        (f"/3.0/lists/{NEWSLETTER}/members", "1000", "2000"),
        (f"/3.0/lists/{CUSTOMERS}/merge-fields", "1000", "0"),
        (f"/3.0/lists/{CUSTOMERS}/members", "1000", "0"),
    ]
    # HTTP Basic with the key as the password, on every request.
    assert {s.auth[1] for s in mailchimp.requests if s.auth} == {MAILCHIMP_KEY}
    assert all(s.auth for s in mailchimp.requests)
    # Links and statistics are left out of member pages.
    assert "members._links" in (mailchimp.requests[2].param("exclude_fields") or "")


async def test_statuses_suppressions_and_skips(account):
    export, _ = account
    assert export.platform == "mailchimp"
    assert len(export.contacts) == 2435
    assert Counter((c.status, c.suppress) for c in export.contacts) == {
        ("subscribed", None): 2284,
        ("unsubscribed", "unsubscribed"): 51,
        ("bounced", "bounced"): 51,
        ("archived", None): 49,
    }
    reasons = Counter(s["reason"] for s in export.skipped)
    assert reasons == {
        "pending in Mailchimp: the double opt-in was never confirmed": 51,
        "transactional in Mailchimp: never subscribed to marketing email": 50,
    }
    first = export.skipped[0]
    assert first == {
        "row": 4,
        "source": "audience Newsletter",
        "email": reader(3),
        "reason": "pending in Mailchimp: the double opt-in was never confirmed",
    }
    assert {"row": 40, "source": "audience Customers", "email": client(35)} == {
        k: v for k, v in export.skipped[-1].items() if k != "reason"
    }
    pulled = by_email(export)
    assert reader(3) not in pulled and reader(4) not in pulled and client(35) not in pulled
    assert pulled[reader(51)].status == "unsubscribed"
    assert pulled[reader(52)].suppress == "bounced"
    assert (pulled[reader(55)].status, pulled[reader(55)].lists) == ("archived", [])


async def test_a_subscribed_member(account):
    export, _ = account
    ada = by_email(export)[reader(0)]
    assert (ada.first_name, ada.last_name) == ("Ada", "Lovelace")
    assert (ada.row, ada.source) == (1, "audience Newsletter")
    assert ada.fields == {
        "address": "1 Main St, Springfield, IL, 62701, US",
        "phone": "+44 20 7946 0000",
        "birthday": "03/15",
        "company": "Acme Ltd",
        "score": "0",
        "joined": "2023-04-01",
        "website": "https://acme.example/~0",
        "plan": "Silver",
        "size": "M",
        "avatar": "https://cdn.example/a/0.png",
        "postcode": "02134",
    }
    assert ada.tags == ["Customer", "VIP"]
    assert ada.lists == [("Newsletter", "confirmed")]
    assert (ada.consent_at, ada.consent_ip) == (OPTIN, "203.0.113.9")
    assert ada.language == "en"
    pulled = by_email(export)
    assert pulled[reader(13)].language == "fr"
    assert pulled[reader(14)].language == "pt"
    assert "score" not in pulled[reader(6)].fields  # "" is no value
    assert pulled[reader(10)].fields["score"] == "3"


async def test_consent_falls_back_to_the_signup(account):
    export, _ = account
    left = by_email(export)[reader(1)]  # unsubscribed, never confirmed an opt-in
    assert (left.status, left.suppress, left.lists) == ("unsubscribed", "unsubscribed", [])
    assert (left.consent_at, left.consent_ip) == (SIGNUP, "198.51.100.7")
    assert (left.first_name, left.last_name) == ("Grace", "Hopper")


async def test_merge_fields_become_typed_fields(account):
    export, _ = account
    assert [(f.key, f.label, f.type) for f in export.fields] == [
        ("address", "Address", "text"),
        ("phone", "Phone Number", "text"),
        ("birthday", "Birthday", "text"),  # 03/15: no year
        ("company", "Company", "text"),  # the first audience's name for the tag
        ("score", "Score", "number"),
        ("joined", "Joined", "date"),
        ("website", "Website", "text"),
        ("plan", "Plan", "text"),
        ("size", "Shirt size", "text"),
        ("avatar", "Avatar", "text"),
        ("postcode", "Post code", "text"),  # a zip keeps its leading zero
        ("renewal", "Renewal date", "date"),
        ("notes", "Notes", "text"),
    ]
    pulled = by_email(export)
    # Written MM/DD/YYYY as the field's date_format says; kept as YYYY-MM-DD.
    assert pulled[client(0)].fields == {"renewal": "2024-12-01", "notes": "prefers post"}
    assert pulled[client(3)].fields == {"company": "Globex", "renewal": "2024-12-04"}


async def test_each_audience_is_a_list_and_an_address_in_both_is_one_contact(account):
    export, _ = account
    assert export.lists == ["Newsletter", "Customers"]
    pulled = by_email(export)
    # Archived in the newsletter, subscribed in the customers' audience.
    back = pulled[reader(5)]
    assert (back.status, back.suppress, back.lists) == (
        "subscribed",
        None,
        [("Customers", "confirmed")],
    )
    # Subscribed in the newsletter, unsubscribed from the customers' audience.
    left = pulled[reader(7)]
    assert (left.status, left.suppress) == ("unsubscribed", "unsubscribed")
    # Subscribed in the newsletter, archived in the customers' audience.
    kept = pulled[reader(8)]
    assert (kept.status, kept.lists) == ("subscribed", [("Newsletter", "confirmed")])
    both = pulled[reader(9)]
    assert sorted(both.lists) == [("Customers", "confirmed"), ("Newsletter", "confirmed")]
    assert both.tags == ["Customer", "Wholesale"]
    assert both.fields["company"] == "Acme Ltd"
    assert export.warnings == [
        "4 repeated address(es) merged into one contact each (the strongest status wins)",
        "1 address(es) subscribed in one audience but unsubscribed or cleaned in another: "
        "imported unsubscribed or bounced, and suppressed",
    ]


async def test_progress_counts_members_page_by_page(account):
    _, calls = account
    # First from the audiences' statistics (subscribed + unsubscribed + cleaned), then each
    # audience's total_items as its first page says it.
    assert calls == [
        (0, 2350 + 38),
        (1000, 2500 + 38),
        (2000, 2500 + 38),
        (2500, 2500 + 38),
        (2540, 2540),
    ]


# --- one audience -------------------------------------------------------------------------


async def test_one_audience_by_its_id(mailchimp):
    export = await pull(mailchimp, CUSTOMERS)
    assert mailchimp.paths() == [
        f"/3.0/lists/{CUSTOMERS}",
        f"/3.0/lists/{CUSTOMERS}/merge-fields",
        f"/3.0/lists/{CUSTOMERS}/members",
    ]
    assert export.lists == ["Customers"]
    assert len(export.contacts) == 39
    pulled = by_email(export)
    assert pulled[reader(8)].status == "archived" and pulled[reader(8)].lists == []
    assert pulled[reader(7)].suppress == "unsubscribed"
    assert pulled[client(34)].status == "bounced"
    assert (pulled[client(1)].consent_at, pulled[client(1)].consent_ip) == (
        datetime(2022, 7, 8, 9, 10, 11, tzinfo=UTC),
        "192.0.2.44",
    )
    assert [(f.key, f.label, f.type) for f in export.fields] == [
        ("company", "Organisation", "text"),
        ("renewal", "Renewal date", "date"),
        ("notes", "Notes", "text"),
    ]
    assert export.warnings == []


async def test_an_unknown_audience_fails_the_pull(mailchimp):
    assert await failure(mailchimp, "0000000000") == (
        "Mailchimp: no audience with the id 0000000000 "
        "(Resource Not Found: The requested resource could not be found.)"
    )


# --- credentials and the API's address ----------------------------------------------------


async def test_a_wrong_key_fails_with_mailchimps_reason(mailchimp):
    assert await failure(mailchimp, key="0cc175b9c0f1b6a831c399e269772661-us21") == KEY_INVALID
    assert len(mailchimp.requests) == 1  # a refusal is not retried
    assert await failure(mailchimp, CUSTOMERS, key="nope-us21") == KEY_INVALID


@pytest.mark.parametrize(
    ("key", "base"),
    [
        ("abc-us21", "https://us21.api.mailchimp.com/3.0"),
        ("8f14e45fceea167a5a36dedd4bea2543-US6", "https://us6.api.mailchimp.com/3.0"),
        (" with-dashes-in-it-us1 ", "https://us1.api.mailchimp.com/3.0"),
    ],
)
def test_the_api_host_comes_from_the_keys_data_centre(key, base):
    assert mailchimp_base_url(key, None) == base
    assert mailchimp_base_url(key, "") == base


def test_the_setting_replaces_the_host():
    assert mailchimp_base_url("abc-us21", "http://127.0.0.1:8080/3.0/") == (
        "http://127.0.0.1:8080/3.0"
    )


@pytest.mark.parametrize(
    "key", ["abc123", "abc-", "-us21", "abc-us21.evil.example", "abc-us21/lists", "abc-21"]
)
def test_a_key_without_its_data_centre_is_refused(key):
    with pytest.raises(PullRefused) as caught:
        mailchimp_base_url(key, None)
    assert (caught.value.status, caught.value.message) == (
        400,
        "api.key must end with its data centre, like -us21",
    )
    with pytest.raises(PullRefused):  # the setting does not excuse it
        mailchimp_base_url(key, "http://127.0.0.1:8080/3.0")


def test_no_key_is_refused():
    with pytest.raises(PullRefused) as caught:
        mailchimp_base_url("  ", None)
    assert (caught.value.status, caught.value.message) == (400, "api.key is required")


async def test_a_key_without_its_data_centre_is_refused_before_any_request(mailchimp):
    with pytest.raises(PullRefused) as caught:
        await pull(mailchimp, key="8f14e45fceea167a5a36dedd4bea2543")
    assert caught.value.status == 400
    assert mailchimp.requests == []


async def test_the_keys_host_goes_through_the_url_guard(monkeypatch):
    looked_up: list[str] = []

    async def resolve(host: str, port: int) -> list[Any]:
        looked_up.append(host)
        return [ipaddress.ip_address("10.0.0.5")]

    monkeypatch.setattr(webhook_client, "resolve_host", resolve)
    with pytest.raises(PullFailed) as caught:
        await pull_mailchimp("abc-us19", None, base_url=None, allowed=[])
    assert str(caught.value) == "Mailchimp: us19.api.mailchimp.com resolves to a non-public address"
    assert looked_up == ["us19.api.mailchimp.com"]


async def test_the_setting_goes_through_the_url_guard(mailchimp):
    assert await failure(mailchimp, allowed=[]) == (
        "MAILROOM_MAILCHIMP_API_URL is not allowed: 127.0.0.1 is not a public address"
    )
    assert mailchimp.requests == []


# --- transport ----------------------------------------------------------------------------


def problem(status: int, title: str) -> tuple[int, dict[str, str], bytes]:
    body = f'{{"title": "{title}", "status": {status}, "detail": "Try again later."}}'
    return status, {"Content-Type": "application/problem+json"}, body.encode()


async def test_transient_failures_are_tried_again(mailchimp, no_waiting):
    mailchimp.queue += [problem(503, "Service Unavailable"), problem(429, "Too Many Requests")]
    export = await pull(mailchimp, CUSTOMERS)
    assert len(export.contacts) == 39
    assert mailchimp.paths()[:3] == [f"/3.0/lists/{CUSTOMERS}"] * 3


async def test_a_failure_that_persists_fails_the_pull(mailchimp, no_waiting):
    mailchimp.queue += [problem(503, "Service Unavailable")] * 3
    assert await failure(mailchimp, CUSTOMERS) == (
        "Mailchimp: Service Unavailable: Try again later."
    )
    assert len(mailchimp.requests) == 3


async def test_redirects_are_not_followed(mailchimp):
    mailchimp.queue.append((301, {"Location": "http://127.0.0.1:1/3.0/lists"}, b""))
    reason = await failure(mailchimp)
    assert reason.startswith("Mailchimp: HTTP 301, a redirect (redirects are not followed")
    assert len(mailchimp.requests) == 1


async def test_an_answer_over_the_limit_fails_the_pull(mailchimp, monkeypatch):
    monkeypatch.setattr(pull_http, "MAX_RESPONSE_BYTES", 64 * 1024)
    assert await failure(mailchimp) == "Mailchimp: an answer was larger than 64 KB"
    # The audiences and merge fields fit; the first page of 1,000 members does not.
    assert mailchimp.paths()[-1] == f"/3.0/lists/{NEWSLETTER}/members"


async def test_an_answer_that_is_not_the_api_fails_the_pull(mailchimp):
    mailchimp.queue.append((200, {"Content-Type": "text/html"}, b"<html>Sign in</html>"))
    assert await failure(mailchimp) == "Mailchimp: an unexpected answer from /lists"
