"""Spec, Suppressions: POST /api/v1/suppressions with a JSON body `{reason?, entries}`."""

from __future__ import annotations

import pytest

from tests.suppressions.helpers import (
    API,
    add,
    add_ok,
    address_of_length,
    contact_total,
    counts_add_up,
    create_contact,
    get_contact,
    lookup,
    only_row,
    rows,
    summary,
)

RESULT_KEYS = {
    "received",
    "added",
    "upgraded",
    "unchanged",
    "invalid",
    "contacts_updated",
    "by_reason",
}


async def test_plain_strings_default_to_unsubscribed(client, ws):
    result = await add_ok(client, ws.headers, ["one@shop.io", "two@shop.io"])
    assert set(result) == RESULT_KEYS
    assert result["received"] == 2
    assert result["added"] == 2
    assert result["upgraded"] == 0
    assert result["unchanged"] == 0
    assert result["invalid"] == 0
    assert result["contacts_updated"] == 0
    assert result["by_reason"] == {"unsubscribed": 2, "bounced": 0, "complained": 0}
    assert counts_add_up(result)
    found = await rows(client, ws.headers)
    assert sorted(row["reason"] for row in found) == ["unsubscribed", "unsubscribed"]
    assert (await summary(client, ws.headers))["count"] == 2


async def test_top_level_reason_applies_to_string_entries(client, ws):
    result = await add_ok(client, ws.headers, ["x@shop.io"], reason="bounced")
    assert result["by_reason"] == {"unsubscribed": 0, "bounced": 1, "complained": 0}
    assert (await lookup(client, ws.headers, "x@shop.io"))["reason"] == "bounced"


async def test_object_entries_carry_their_own_reason(client, ws):
    result = await add_ok(
        client,
        ws.headers,
        [
            {"email": "a@shop.io", "reason": "complained"},
            {"email": "b@shop.io", "reason": "bounced"},
            {"email": "c@shop.io"},
            "d@shop.io",
        ],
        reason="unsubscribed",
    )
    assert result["added"] == 4
    assert result["by_reason"] == {"unsubscribed": 2, "bounced": 1, "complained": 1}
    reasons = {
        email: (await lookup(client, ws.headers, email))["reason"]
        for email in ("a@shop.io", "b@shop.io", "c@shop.io", "d@shop.io")
    }
    assert reasons == {
        "a@shop.io": "complained",
        "b@shop.io": "bounced",
        "c@shop.io": "unsubscribed",
        "d@shop.io": "unsubscribed",
    }


ALIASES = [
    ("cleaned", "bounced"),
    ("hard bounce", "bounced"),
    ("invalid", "bounced"),
    ("cancelled", "unsubscribed"),
    ("canceled", "unsubscribed"),
    ("opted out", "unsubscribed"),
    ("junk", "complained"),
    ("spam", "complained"),
    ("abuse", "complained"),
    ("complaint", "complained"),
    ("unsubscribed", "unsubscribed"),
    ("bounced", "bounced"),
    ("complained", "complained"),
]


@pytest.mark.parametrize(("alias", "reason"), ALIASES)
async def test_reason_alias_per_entry(client, ws, alias, reason):
    result = await add_ok(client, ws.headers, [{"email": "alias@shop.io", "reason": alias}])
    assert result["added"] == 1
    assert result["invalid"] == 0
    assert result["by_reason"][reason] == 1
    row = await only_row(client, ws.headers)
    assert row["reason"] == reason


@pytest.mark.parametrize(("alias", "reason"), ALIASES)
async def test_reason_alias_as_request_reason(client, ws, alias, reason):
    result = await add_ok(client, ws.headers, ["alias@shop.io"], reason=alias)
    assert result["added"] == 1
    assert result["by_reason"][reason] == 1
    assert (await lookup(client, ws.headers, "alias@shop.io"))["reason"] == reason


@pytest.mark.parametrize("bad", ["deleted", "erased", "whatever", "soft bounce"])
async def test_unknown_or_deleted_request_reason_is_400(client, ws, bad):
    response = await add(client, ws.headers, ["x@shop.io"], reason=bad)
    assert response.status_code == 400
    assert response.json() == {"error": "reason must be unsubscribed, bounced or complained"}
    assert (await summary(client, ws.headers))["count"] == 0


@pytest.mark.parametrize("bad", ["deleted", "whatever", "soft bounce"])
async def test_unknown_or_deleted_entry_reason_counts_invalid(client, ws, bad):
    result = await add_ok(client, ws.headers, [{"email": "x@shop.io", "reason": bad}, "ok@shop.io"])
    assert result["received"] == 2
    assert result["invalid"] == 1
    assert result["added"] == 1
    assert counts_add_up(result)
    assert (await lookup(client, ws.headers, "x@shop.io"))["suppressed"] is False
    found = await rows(client, ws.headers)
    assert [row["reason"] for row in found] == ["unsubscribed"]
    assert (await summary(client, ws.headers))["by_reason"]["deleted"] == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "entries array is required"),
        ({"reason": "bounced"}, "entries array is required"),
        ({"entries": "a@shop.io"}, "entries array is required"),
        ({"entries": {"email": "a@shop.io"}}, "entries array is required"),
        ({"entries": None}, "entries array is required"),
        ({"entries": []}, "entries must not be empty"),
    ],
)
async def test_entries_validation(client, ws, body, message):
    response = await client.post(API, json=body, headers=ws.headers)
    assert response.status_code == 400
    assert response.json() == {"error": message}


async def test_malformed_json_is_400(client, ws):
    response = await client.post(
        API,
        content=b'{"entries": [',
        headers={**ws.headers, "content-type": "application/json"},
    )
    assert response.status_code == 400
    assert isinstance(response.json()["error"], str)


async def test_five_thousand_entries_accepted(client, ws):
    entries = [f"user{i}@bulk.io" for i in range(5000)]
    result = await add_ok(client, ws.headers, entries, reason="bounced")
    assert result["received"] == 5000
    assert result["added"] == 5000
    assert result["invalid"] == 0
    assert result["by_reason"]["bounced"] == 5000
    assert (await summary(client, ws.headers))["count"] == 5000
    # the last batch (beyond 200 x 24) was written too
    assert (await lookup(client, ws.headers, "user4999@bulk.io"))["reason"] == "bounced"


async def test_five_thousand_and_one_entries_refused(client, ws):
    entries = [f"user{i}@bulk.io" for i in range(5001)]
    response = await add(client, ws.headers, entries)
    assert response.status_code == 400
    assert isinstance(response.json()["error"], str)
    assert (await summary(client, ws.headers))["count"] == 0


async def test_stronger_reason_upgrades_weaker(client, ws):
    await add_ok(client, ws.headers, ["up@shop.io"])  # unsubscribed
    result = await add_ok(client, ws.headers, ["up@shop.io"], reason="bounced")
    assert (result["added"], result["upgraded"], result["unchanged"]) == (0, 1, 0)
    assert result["by_reason"]["bounced"] == 1
    assert counts_add_up(result)
    assert (await lookup(client, ws.headers, "up@shop.io"))["reason"] == "bounced"
    result = await add_ok(client, ws.headers, ["up@shop.io"], reason="spam")
    assert (result["added"], result["upgraded"], result["unchanged"]) == (0, 1, 0)
    assert (await lookup(client, ws.headers, "up@shop.io"))["reason"] == "complained"
    summary_now = await summary(client, ws.headers)
    assert summary_now["count"] == 1
    assert summary_now["by_reason"] == {
        "unsubscribed": 0,
        "bounced": 0,
        "complained": 1,
        "deleted": 0,
    }


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("complained", "bounced"),
        ("complained", "unsubscribed"),
        ("bounced", "unsubscribed"),
        ("bounced", "bounced"),
    ],
)
async def test_weaker_or_equal_reason_never_replaces(client, ws, first, second):
    await add_ok(client, ws.headers, ["keep@shop.io"], reason=first)
    result = await add_ok(client, ws.headers, ["keep@shop.io"], reason=second)
    assert (result["added"], result["upgraded"], result["unchanged"]) == (0, 0, 1)
    assert counts_add_up(result)
    assert (await lookup(client, ws.headers, "keep@shop.io"))["reason"] == first
    assert (await only_row(client, ws.headers))["reason"] == first


async def test_import_upgrades_a_deleted_row(client, ws):
    contact = await create_contact(client, ws.headers, "gone@shop.io")
    assert (await client.delete(f"/api/v1/contacts/{contact['id']}", headers=ws.headers)).is_success
    result = await add_ok(client, ws.headers, ["gone@shop.io"])
    assert (result["added"], result["upgraded"], result["unchanged"]) == (0, 1, 0)
    row = await only_row(client, ws.headers)
    assert row["reason"] == "unsubscribed"
    assert row["liftable"] is False


async def test_duplicates_in_one_request_fold_as_unchanged(client, ws):
    result = await add_ok(
        client, ws.headers, ["dup@shop.io", " DUP@Shop.io ", "dup@shop.io", "other@shop.io"]
    )
    assert result["received"] == 4
    assert result["added"] == 2
    assert result["unchanged"] == 2
    assert result["upgraded"] == 0
    assert result["invalid"] == 0
    assert counts_add_up(result)
    assert (await summary(client, ws.headers))["count"] == 2


async def test_duplicates_with_different_reasons_keep_the_strongest(client, ws):
    result = await add_ok(
        client,
        ws.headers,
        [
            {"email": "mix@shop.io", "reason": "unsubscribed"},
            {"email": "mix@shop.io", "reason": "complained"},
            {"email": "mix@shop.io", "reason": "bounced"},
        ],
    )
    assert result["received"] == 3
    assert result["added"] == 1
    assert result["unchanged"] == 2
    assert counts_add_up(result)
    assert (await lookup(client, ws.headers, "mix@shop.io"))["reason"] == "complained"


async def test_addresses_are_trimmed_and_lowercased(client, ws):
    await add_ok(client, ws.headers, ["  Mixed.Case@Shop.IO  "])
    check = await lookup(client, ws.headers, "mixed.case@shop.io")
    assert check["suppressed"] is True
    row = await only_row(client, ws.headers)
    assert row["email_domain"] == "shop.io"


async def test_invalid_addresses_count_invalid(client, ws):
    entries = [
        "not-an-email",
        "",
        "   ",
        "missing@",
        "@nolocal.io",
        "two@@ats.io",
        "spaces in@shop.io",
        123,
        None,
        True,
        ["a@shop.io"],
        {"reason": "bounced"},
        {"email": 5},
        address_of_length(255),
        "fine@shop.io",
    ]
    result = await add_ok(client, ws.headers, entries)
    assert result["received"] == len(entries)
    assert result["invalid"] == len(entries) - 1
    assert result["added"] == 1
    assert counts_add_up(result)
    assert (await summary(client, ws.headers))["count"] == 1


async def test_address_of_254_characters_is_accepted(client, ws):
    address = address_of_length(254)
    result = await add_ok(client, ws.headers, [address])
    assert result["added"] == 1
    assert result["invalid"] == 0
    assert (await lookup(client, ws.headers, address))["suppressed"] is True


async def test_mixed_request_counts_add_up(client, ws):
    await add_ok(client, ws.headers, ["old@shop.io", "weak@shop.io"])
    result = await add_ok(
        client,
        ws.headers,
        [
            "new@shop.io",
            {"email": "weak@shop.io", "reason": "bounced"},
            "old@shop.io",
            "new@shop.io",
            "broken",
            {"email": "x@shop.io", "reason": "deleted"},
        ],
    )
    assert result["received"] == 6
    assert result["added"] == 1
    assert result["upgraded"] == 1
    assert result["unchanged"] == 2
    assert result["invalid"] == 2
    assert counts_add_up(result)


async def test_all_invalid_entries_still_answer_counts(client, ws):
    result = await add_ok(client, ws.headers, ["nope", "also nope"])
    assert result["received"] == 2
    assert result["invalid"] == 2
    assert result["added"] == 0
    assert counts_add_up(result)


async def test_subscribed_contacts_take_the_imported_status(client, ws):
    bounce = await create_contact(client, ws.headers, "bounce@shop.io")
    spam = await create_contact(client, ws.headers, "spam@shop.io")
    plain = await create_contact(client, ws.headers, "plain@shop.io")
    assert bounce["unsubscribed_at"] is None
    before = await contact_total(client, ws.headers)
    result = await add_ok(
        client,
        ws.headers,
        [
            "bounce@shop.io",
            {"email": "SPAM@shop.io", "reason": "junk"},
            "nobody@shop.io",
        ],
        reason="cleaned",
    )
    assert result["contacts_updated"] == 2
    assert result["added"] == 3
    bounced = await get_contact(client, ws.headers, bounce["id"])
    assert bounced["status"] == "bounced"
    assert bounced["unsubscribed_at"] is not None
    complained = await get_contact(client, ws.headers, spam["id"])
    assert complained["status"] == "complained"
    assert complained["unsubscribed_at"] is not None
    untouched = await get_contact(client, ws.headers, plain["id"])
    assert untouched["status"] == "subscribed"
    assert untouched["unsubscribed_at"] is None
    # no contact is created for an address without one
    assert await contact_total(client, ws.headers) == before


async def test_default_reason_switches_subscribed_contact_to_unsubscribed(client, ws):
    contact = await create_contact(client, ws.headers, "quiet@shop.io")
    result = await add_ok(client, ws.headers, ["quiet@shop.io"])
    assert result["contacts_updated"] == 1
    updated = await get_contact(client, ws.headers, contact["id"])
    assert updated["status"] == "unsubscribed"
    assert updated["unsubscribed_at"] is not None


async def test_only_subscribed_contacts_are_switched(client, ws):
    contact = await create_contact(client, ws.headers, "left@shop.io")
    response = await client.patch(
        f"/api/v1/contacts/{contact['id']}", json={"status": "unsubscribed"}, headers=ws.headers
    )
    assert response.status_code == 200
    unsubscribed_at = response.json()["contact"]["unsubscribed_at"]
    result = await add_ok(client, ws.headers, ["left@shop.io"], reason="bounced")
    assert result["contacts_updated"] == 0
    assert result["added"] == 1
    after = await get_contact(client, ws.headers, contact["id"])
    assert after["status"] == "unsubscribed"
    assert after["unsubscribed_at"] == unsubscribed_at


async def test_import_creates_no_contacts(client, ws):
    await add_ok(client, ws.headers, [f"p{i}@shop.io" for i in range(5)])
    assert await contact_total(client, ws.headers) == 0


async def test_import_needs_contacts_write(client, ws, factory):
    headers = await factory.key(ws, "contacts:read")
    response = await add(client, headers, ["x@shop.io"])
    assert response.status_code == 403
    assert response.json() == {"error": "Forbidden: contacts:write permission required"}
    assert (await summary(client, ws.headers))["count"] == 0


async def test_five_thousand_long_addresses_accepted(client, ws):
    tail = address_of_length(254).split("@", 1)[1]
    entries = [f"{i:064d}@{tail}" for i in range(5000)]
    assert all(len(entry) == 254 for entry in entries)
    result = await add_ok(client, ws.headers, entries)
    assert result["received"] == 5000
    assert result["added"] == 5000
    assert result["invalid"] == 0


async def test_erased_row_upgraded_by_import_is_not_back_filled(client, ws):
    contact = await create_contact(client, ws.headers, "erased.person@shop.io")
    response = await client.delete(
        f"/api/v1/contacts/{contact['id']}", params={"mode": "erase"}, headers=ws.headers
    )
    assert response.status_code == 200
    result = await add_ok(client, ws.headers, ["erased.person@shop.io"], reason="bounced")
    assert (result["added"], result["upgraded"]) == (0, 1)
    row = await only_row(client, ws.headers)
    assert row["reason"] == "bounced"
    assert row["email_masked"] is None
    assert row["email_domain"] is None
    assert row["liftable"] is False
