"""Spec, Resources "Suppression list row", States "Suppression reasons and lifting" and
Endpoints "Suppressions", checked as a client would through the HTTP API."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

API = "/api/v1/suppressions"
CONTACTS = "/api/v1/contacts"
REASONS = ("unsubscribed", "bounced", "complained", "deleted")


def counts_add_up(result) -> bool:
    return result["received"] == (
        result["added"] + result["upgraded"] + result["unchanged"] + result["invalid"]
    )


def parse_time(value: str) -> datetime:
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert parsed.tzinfo is not None, value
    return parsed


async def _import(client, ws, entries, reason=None):
    body = {"entries": entries}
    if reason is not None:
        body["reason"] = reason
    response = await client.post(API, json=body, headers=ws.headers)
    assert response.status_code == 200, response.text
    result = response.json()
    assert set(result) == {
        "received",
        "added",
        "upgraded",
        "unchanged",
        "invalid",
        "contacts_updated",
        "by_reason",
    }
    assert counts_add_up(result), result
    return result


async def _rows(client, ws, **params):
    params.setdefault("limit", 100)
    response = await client.get(f"{API}/list", params=params, headers=ws.headers)
    assert response.status_code == 200, response.text
    return response.json()["suppressions"]


async def _row_for(client, ws, domain):
    found = [r for r in await _rows(client, ws) if r["email_domain"] == domain]
    assert len(found) == 1, found
    return found[0]


async def _contact(client, ws, email, **extra):
    response = await client.post(CONTACTS, json={"email": email, **extra}, headers=ws.headers)
    assert response.status_code == 201, response.text
    return response.json()["contact"]


async def _get_contact(client, ws, contact_id):
    response = await client.get(f"{CONTACTS}/{contact_id}", headers=ws.headers)
    assert response.status_code == 200, response.text
    return response.json()["contact"]


async def _lookup(client, ws, email):
    response = await client.get(API, params={"email": email}, headers=ws.headers)
    assert response.status_code == 200, response.text
    return response.json()


# ---------------------------------------------------------------- the row


async def test_row_fields_and_types(client, ws):
    before = datetime.now(UTC) - timedelta(seconds=5)
    await _import(client, ws, [{"email": "Row.Person@Types.io", "reason": "bounced"}])
    [row] = await _rows(client, ws)
    assert set(row) == {
        "email_hash",
        "reason",
        "source",
        "created_at",
        "email_masked",
        "email_domain",
        "contact",
        "liftable",
    }
    assert isinstance(row["email_hash"], str) and row["email_hash"]
    assert row["reason"] in REASONS
    assert isinstance(row["source"], str) and row["source"]
    created = parse_time(row["created_at"])
    assert before <= created <= datetime.now(UTC) + timedelta(seconds=5)
    assert isinstance(row["email_masked"], str)
    assert row["email_domain"] == "types.io"
    assert row["contact"] is None
    assert row["liftable"] is False


async def test_full_address_appears_only_in_the_contact_object(client, ws):
    await _import(client, ws, ["hidden.person@secret.io"], reason="complained")
    page = await client.get(f"{API}/list", headers=ws.headers)
    assert "hidden.person@secret.io" not in page.text
    assert "hidden.person" not in page.text
    member = await _contact(client, ws, "kept.member@club.io")
    await _import(client, ws, ["kept.member@club.io"], reason="bounced")
    row = await _row_for(client, ws, "club.io")
    assert row["contact"] == {
        "id": member["id"],
        "email": "kept.member@club.io",
        "status": "bounced",
    }
    text_without_contact = str({k: v for k, v in row.items() if k != "contact"})
    assert "kept.member@club.io" not in text_without_contact


async def test_contact_object_follows_the_still_existing_contact(client, ws):
    member = await _contact(client, ws, "follow@club.io")
    patched = await client.patch(
        f"{CONTACTS}/{member['id']}",
        json={"status": "unsubscribed", "suppress": True},
        headers=ws.headers,
    )
    assert patched.status_code == 200, patched.text
    row = await _row_for(client, ws, "club.io")
    assert row["contact"] == {
        "id": member["id"],
        "email": "follow@club.io",
        "status": "unsubscribed",
    }
    assert row["reason"] == "unsubscribed"
    # The contact goes (plain delete): the row stays, stronger reason kept, contact now null.
    deleted = await client.delete(f"{CONTACTS}/{member['id']}", headers=ws.headers)
    assert deleted.status_code == 200
    row = await _row_for(client, ws, "club.io")
    assert row["contact"] is None
    assert row["reason"] == "unsubscribed"
    assert row["email_masked"] and "follow@" not in row["email_masked"]


# ---------------------------------------------------------------- lifting: `liftable` tells the truth


async def _make(client, ws, kind: str) -> str:
    """One row of each kind the lifting table names; returns the address."""
    email = f"{kind}@{kind.replace('_', '-')}.io"
    if kind in ("unsubscribed", "bounced", "complained"):
        await _import(client, ws, [email], reason=kind)
    elif kind in ("delete", "erase"):
        contact = await _contact(client, ws, email)
        params = {"mode": "erase"} if kind == "erase" else {}
        response = await client.delete(
            f"{CONTACTS}/{contact['id']}", params=params, headers=ws.headers
        )
        assert response.status_code == 200, response.text
    elif kind in ("bulk_delete", "bulk_erase"):
        contact = await _contact(client, ws, email)
        action = kind.removeprefix("bulk_")
        response = await client.post(
            f"{CONTACTS}/bulk",
            json={"action": action, "contact_ids": [contact["id"]]},
            headers=ws.headers,
        )
        assert response.status_code == 200, response.text
    elif kind == "patch_suppress":
        contact = await _contact(client, ws, email)
        response = await client.patch(
            f"{CONTACTS}/{contact['id']}",
            json={"status": "unsubscribed", "suppress": True},
            headers=ws.headers,
        )
        assert response.status_code == 200, response.text
    return email


LIFT_TABLE = [
    ("delete", 200, "deleted"),
    ("bulk_delete", 200, "deleted"),
    ("erase", 409, "deleted"),
    ("bulk_erase", 409, "deleted"),
    ("bounced", 409, "bounced"),
    ("complained", 409, "complained"),
    ("unsubscribed", 409, "unsubscribed"),
    ("patch_suppress", 409, "unsubscribed"),
]


@pytest.mark.parametrize(("kind", "status", "reason"), LIFT_TABLE)
@pytest.mark.parametrize("by", ["email", "email_hash"])
async def test_lift_table_and_liftable_flag_agree(client, ws, kind, status, reason, by):
    email = await _make(client, ws, kind)
    [row] = await _rows(client, ws)
    assert row["reason"] == reason
    assert row["liftable"] is (status == 200)
    check = await _lookup(client, ws, email)
    assert check["suppressed"] is True
    assert check["reason"] == reason
    identifier = email if by == "email" else row["email_hash"]
    response = await client.post(f"{API}/lift", json={by: identifier}, headers=ws.headers)
    assert response.status_code == status, response.text
    if status == 200:
        assert response.json() == {"lifted": True, "reason": "deleted"}
        assert (await _lookup(client, ws, email))["suppressed"] is False
        assert await _rows(client, ws) == []
    else:
        body = response.json()
        assert set(body) == {"error", "reason"}
        assert body["reason"] == reason
        assert isinstance(body["error"], str) and body["error"]
        assert (await _lookup(client, ws, email))["reason"] == reason


async def test_erased_row_stays_unliftable_after_a_later_import(client, ws):
    email = await _make(client, ws, "erase")
    result = await _import(client, ws, [email], reason="unsubscribed")
    assert (result["added"], result["upgraded"], result["unchanged"]) == (0, 1, 0)
    [row] = await _rows(client, ws)
    assert row["reason"] == "unsubscribed"
    assert row["email_masked"] is None and row["email_domain"] is None
    assert row["liftable"] is False


async def test_a_lifted_address_can_come_back_then_be_erased_for_good(client, ws):
    email = await _make(client, ws, "delete")
    lifted = await client.post(f"{API}/lift", json={"email": email}, headers=ws.headers)
    assert lifted.status_code == 200
    again = await _contact(client, ws, email)
    erased = await client.delete(
        f"{CONTACTS}/{again['id']}", params={"mode": "erase"}, headers=ws.headers
    )
    assert erased.status_code == 200
    [row] = await _rows(client, ws)
    assert row["liftable"] is False and row["email_masked"] is None
    refused = await client.post(f"{API}/lift", json={"email": email}, headers=ws.headers)
    assert refused.status_code == 409
    assert refused.json()["reason"] == "deleted"


# ---------------------------------------------------------------- import arithmetic


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_received_equals_added_upgraded_unchanged_invalid(client, ws, seed):
    rng = random.Random(seed)
    strength = {"unsubscribed": 1, "bounced": 2, "complained": 3}
    # Existing rows first.
    existing = {f"old{i}@seed.io": rng.choice(list(strength)) for i in range(30)}
    for address, reason in existing.items():
        await _import(client, ws, [address], reason=reason)
    entries = []
    for i in range(60):
        entries.append({"email": f"new{i % 40}@seed.io", "reason": rng.choice(list(strength))})
    for address in existing:
        entries.append({"email": address.upper(), "reason": rng.choice(list(strength))})
    entries += ["bad", "", None, 7, {"email": "x@seed.io", "reason": "deleted"}, {"nope": 1}]
    rng.shuffle(entries)

    expected = {"added": 0, "upgraded": 0, "unchanged": 0, "invalid": 6}
    wanted: dict[str, str] = {}
    for entry in entries:
        if not isinstance(entry, dict) or "email" not in entry or entry["reason"] == "deleted":
            continue
        address, reason = entry["email"].lower(), entry["reason"]
        if address in wanted:
            expected["unchanged"] += 1
            if strength[reason] > strength[wanted[address]]:
                wanted[address] = reason
            continue
        wanted[address] = reason
    final = dict(existing)
    for address, reason in wanted.items():
        if address not in existing:
            expected["added"] += 1
            final[address] = reason
        elif strength[reason] > strength[existing[address]]:
            expected["upgraded"] += 1
            final[address] = reason
        else:
            expected["unchanged"] += 1

    result = await _import(client, ws, entries)
    assert result["received"] == len(entries)
    assert {k: result[k] for k in expected} == expected
    summary = (await client.get(API, headers=ws.headers)).json()
    assert summary["count"] == len(final)
    for reason in strength:
        assert summary["by_reason"][reason] == sum(1 for r in final.values() if r == reason)
    for address, reason in list(final.items())[:10]:
        assert (await _lookup(client, ws, address))["reason"] == reason


async def test_repeating_a_large_import_is_safe_and_all_unchanged(client, ws):
    entries = [f"user{i}@batch.io" for i in range(450)]
    first = await _import(client, ws, entries, reason="bounced")
    assert (first["added"], first["unchanged"]) == (450, 0)
    second = await _import(client, ws, entries, reason="bounced")
    assert second["received"] == 450
    assert (second["added"], second["upgraded"], second["unchanged"]) == (0, 0, 450)
    third = await _import(client, ws, entries, reason="complained")
    assert (third["added"], third["upgraded"], third["unchanged"]) == (0, 450, 0)
    summary = (await client.get(API, headers=ws.headers)).json()
    assert summary["count"] == 450
    assert summary["by_reason"]["complained"] == 450


# ---------------------------------------------------------------- matching contacts


@pytest.mark.parametrize("reason", ["unsubscribed", "bounced", "complained"])
async def test_subscribed_contact_switched_with_unsubscribed_at_now(client, ws, reason):
    contact = await _contact(client, ws, "switch@club.io")
    assert contact["unsubscribed_at"] is None
    before_total = (await client.get(CONTACTS, headers=ws.headers)).json()["pagination"]["total"]
    result = await _import(client, ws, ["SWITCH@club.io", "nobody@club.io"], reason=reason)
    assert result["contacts_updated"] == 1
    updated = await _get_contact(client, ws, contact["id"])
    assert updated["status"] == reason
    when = parse_time(updated["unsubscribed_at"])
    assert abs(datetime.now(UTC) - when) < timedelta(minutes=1)
    after_total = (await client.get(CONTACTS, headers=ws.headers)).json()["pagination"]["total"]
    assert after_total == before_total  # no contact created for nobody@club.io


async def test_only_subscribed_contacts_are_switched(client, ws):
    gone = await _contact(client, ws, "gone@club.io")
    patched = await client.patch(
        f"{CONTACTS}/{gone['id']}", json={"status": "unsubscribed"}, headers=ws.headers
    )
    assert patched.status_code == 200
    unsubscribed_at = patched.json()["contact"]["unsubscribed_at"]
    result = await _import(client, ws, ["gone@club.io"], reason="bounced")
    assert result["contacts_updated"] == 0
    assert result["added"] == 1
    after = await _get_contact(client, ws, gone["id"])
    assert after["status"] == "unsubscribed"
    assert after["unsubscribed_at"] == unsubscribed_at


async def test_contacts_of_another_workspace_are_not_switched(client, ws, factory):
    other = await factory.workspace("pro", listen=False)
    theirs = await _contact(client, other, "shared@club.io")
    result = await _import(client, ws, ["shared@club.io"], reason="complained")
    assert result["contacts_updated"] == 0
    assert (await _get_contact(client, other, theirs["id"]))["status"] == "subscribed"


# ---------------------------------------------------------------- CSV


async def test_csv_header_is_case_insensitive_and_reason_aliases_apply(client, ws):
    content = (
        b"Email,Reason\n"
        b"a@csv.io,Hard Bounce\n"
        b"b@csv.io,SPAM\n"
        b"c@csv.io,Opted Out\n"
        b"d@csv.io,\n"
        b"e@csv.io,deleted\n"
    )
    response = await client.post(
        API, files={"file": ("s.csv", content, "text/csv")}, headers=ws.headers
    )
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["received"] == 5
    assert (result["added"], result["invalid"]) == (4, 1)
    assert counts_add_up(result)
    expected = {"a": "bounced", "b": "complained", "c": "unsubscribed", "d": "unsubscribed"}
    for local, reason in expected.items():
        assert (await _lookup(client, ws, f"{local}@csv.io"))["reason"] == reason
    assert (await _lookup(client, ws, "e@csv.io"))["suppressed"] is False


async def test_bare_address_file_counts_bad_lines_invalid(client, ws):
    content = b"one@bare.io\nnot an address\ntwo@bare.io\nONE@bare.io\n"
    response = await client.post(
        API, files={"file": ("s.csv", content, "text/csv")}, headers=ws.headers
    )
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["received"] == 4
    assert (result["added"], result["unchanged"], result["invalid"]) == (2, 1, 1)


async def test_csv_switches_contacts_and_creates_none(client, ws):
    member = await _contact(client, ws, "csv.member@club.io")
    response = await client.post(
        API,
        files={"file": ("s.csv", b"email,reason\ncsv.member@club.io,complained\n", "text/csv")},
        headers=ws.headers,
    )
    assert response.status_code == 200, response.text
    assert response.json()["contacts_updated"] == 1
    assert (await _get_contact(client, ws, member["id"]))["status"] == "complained"


async def test_csv_without_email_header_is_422_with_invalid(client, ws):
    response = await client.post(
        API,
        files={"file": ("s.csv", b"name,reason\nbob,bounced\nann,spam\n", "text/csv")},
        headers=ws.headers,
    )
    assert response.status_code == 422
    body = response.json()
    assert isinstance(body["error"], str)
    assert isinstance(body["invalid"], int)
    assert (await client.get(API, headers=ws.headers)).json()["count"] == 0


# ---------------------------------------------------------------- summary and list filters


async def test_summary_always_names_the_four_reasons(client, ws):
    await _make(client, ws, "bounced")
    await _make(client, ws, "delete")
    body = (await client.get(API, headers=ws.headers)).json()
    assert set(body) == {"count", "by_reason"}
    assert set(body["by_reason"]) == set(REASONS)
    assert body["count"] == sum(body["by_reason"].values()) == 2
    assert body["by_reason"]["bounced"] == 1
    assert body["by_reason"]["deleted"] == 1


@pytest.mark.parametrize("reason", REASONS)
async def test_reason_filter_for_each_of_the_four_reasons(client, ws, reason):
    for kind in ("unsubscribed", "bounced", "complained", "delete", "erase"):
        await _make(client, ws, kind)
    found = await _rows(client, ws, reason=reason)
    assert found and {r["reason"] for r in found} == {reason}
    assert len(found) == (2 if reason == "deleted" else 1)


@pytest.mark.parametrize("bad", ["Bounced", "spam", "erased", "all", "deleted,bounced"])
async def test_list_reason_must_be_one_of_the_four(client, ws, bad):
    response = await client.get(f"{API}/list", params={"reason": bad}, headers=ws.headers)
    assert response.status_code == 400
    assert isinstance(response.json()["error"], str)
