"""POST /api/v1/imports with each platform's export file, run by the worker's job; what the
workspace holds afterwards is read back through the API."""

from __future__ import annotations

from typing import Any

import pytest

from tests.platform_imports.helpers import FIXTURES, mailchimp_zip, run_import, start, work

BAD_PLATFORM = "platform must be one of mailchimp, listmonk, brevo, kit, mautic"
UNSUBSCRIBED_CSV = "unsubscribed_members_export_5f3e2a1b9c.csv"


async def contact(client: Any, ws: Any, email: str) -> dict[str, Any]:
    answer = await client.get(f"/api/v1/contacts?q={email}", headers=ws.headers)
    found = [c for c in answer.json()["contacts"] if c["email"] == email]
    if not found:  # archived contacts are listed only when asked for
        answer = await client.get(f"/api/v1/contacts?q={email}&status=archived", headers=ws.headers)
        found = [c for c in answer.json()["contacts"] if c["email"] == email]
    assert len(found) == 1, (email, answer.json())
    full = await client.get(f"/api/v1/contacts/{found[0]['id']}", headers=ws.headers)
    result: dict[str, Any] = full.json()["contact"]
    return result


async def suppression(client: Any, ws: Any, email: str) -> str | None:
    answer = await client.get(f"/api/v1/suppressions?email={email}", headers=ws.headers)
    reason: str | None = answer.json()["reason"]
    return reason


async def fields(client: Any, ws: Any) -> dict[str, str]:
    answer = await client.get("/api/v1/custom-fields", headers=ws.headers)
    return {f["key"]: f["type"] for f in answer.json()["fields"]}


async def contact_total(client: Any, ws: Any) -> int:
    answer = await client.get("/api/v1/contacts?limit=1", headers=ws.headers)
    total: int = answer.json()["pagination"]["total"]
    return total


async def test_mailchimp_archive(client: Any, db: Any, settings: Any, ws: Any) -> None:
    started = await start(client, ws, "mailchimp", "members_export.zip", mailchimp_zip())
    assert started.status_code == 202
    queued = started.json()["import"]
    assert (queued["platform"], queued["status"], queued["result"]) == ("mailchimp", "queued", None)
    assert queued["progress"] == {"done": 0, "total": 9}
    assert await work(db, settings) == 1
    answer = await client.get(f"/api/v1/imports/{queued['id']}", headers=ws.headers)
    job = answer.json()["import"]
    assert (job["status"], job["progress"], job["error"]) == ("done", {"done": 9, "total": 9}, None)
    result = job["result"]
    assert (result["created"], result["updated"], result["unchanged"]) == (9, 0, 0)
    assert result["suppressed"] == {"unsubscribed": 3, "bounced": 2, "complained": 0}
    assert result["fields_created"] == [
        {"key": "company", "type": "text"},
        {"key": "phone", "type": "text"},
        {"key": "birthday", "type": "text"},
        {"key": "signup_date", "type": "date"},
        {"key": "loyalty_points", "type": "number"},
        {"key": "vip_member", "type": "boolean"},
    ]
    assert result["lists_created"] == 0
    assert result["skipped"] == [
        {
            "row": 4,
            "source": "subscribed_members_export_5f3e2a1b9c.csv",
            "reason": "no email address",
        },
        {
            "row": 1,
            "source": "nonsubscribed_members_export_5f3e2a1b9c.csv",
            "email": "shopper@store-buyer.shop",
            "reason": "never subscribed (Mailchimp non-subscribed contact)",
        },
    ]
    assert any("names no lists" in w for w in result["warnings"])

    ada = await contact(client, ws, "ada@analytical-engine.co")
    assert (ada["status"], ada["first_name"], ada["last_name"], ada["source"]) == (
        "subscribed",
        "Ada",
        "Lovelace",
        "mailchimp",
    )
    assert ada["custom_fields"]["company"] == "Analytical Engines Ltd"
    assert ada["custom_fields"]["loyalty_points"] == 120
    assert ada["custom_fields"]["vip_member"] is True
    assert ada["custom_fields"]["signup_date"] == "2023-01-15"
    # Consent: the confirmation (double opt-in) when present, else the opt-in.
    assert ada["custom_fields"]["consent_confirmed_at"] == "2023-01-15T09:14:02Z"
    assert ada["custom_fields"]["consent_ip"] == "81.2.69.160"
    assert ada["custom_fields"]["consent_source"] == "mailchimp"
    assert sorted(t["name"] for t in ada["tags"]) == ["Customer", "VIP"]
    grace = await contact(client, ws, "grace@hopper.dev")
    assert grace["custom_fields"]["consent_confirmed_at"] == "2023-02-20T14:00:00Z"
    assert grace["custom_fields"]["consent_ip"] == "198.51.100.7"

    alan = await contact(client, ws, "alan@bletchley.uk")
    assert alan["status"] == "unsubscribed"
    assert await suppression(client, ws, "alan@bletchley.uk") == "unsubscribed"
    katherine = await contact(client, ws, "katherine@langley.aero")
    assert katherine["status"] == "bounced"
    assert await suppression(client, ws, "katherine@langley.aero") == "bounced"
    assert await suppression(client, ws, "ada@analytical-engine.co") is None

    registry = await fields(client, ws)
    assert registry["loyalty_points"] == "number" and registry["signup_date"] == "date"
    assert registry["consent_confirmed_at"] == "text"
    tags = (await client.get("/api/v1/tags", headers=ws.headers)).json()["tags"]
    assert {"Customer", "VIP", "Newsletter", "Former customer"} <= {t["name"] for t in tags}


async def test_importing_the_same_archive_again_changes_nothing(
    client: Any, db: Any, settings: Any, ws: Any
) -> None:
    archive = mailchimp_zip()
    await run_import(client, db, settings, ws, "mailchimp", "export.zip", archive)
    again = await run_import(client, db, settings, ws, "mailchimp", "export.zip", archive)
    result = again["result"]
    assert (result["created"], result["updated"], result["unchanged"]) == (0, 0, 9)
    assert result["suppressed"] == {"unsubscribed": 0, "bounced": 0, "complained": 0}
    assert (result["tags_created"], result["fields_created"]) == (0, [])
    assert await contact_total(client, ws) == 9


async def test_into_a_named_list_with_confirmed_membership(
    client: Any, db: Any, settings: Any, ws: Any
) -> None:
    made = await client.post(
        "/api/v1/lists", headers=ws.headers, json={"name": "Newsletter", "double_opt_in": True}
    )
    list_id = made.json()["list"]["id"]
    job = await run_import(
        client, db, settings, ws, "mailchimp", "export.zip", mailchimp_zip(), list_id=list_id
    )
    assert job["list_id"] == list_id
    assert job["result"]["memberships"] == {"confirmed": 4, "unconfirmed": 0}
    members = await client.get(f"/api/v1/lists/{list_id}/contacts?limit=100", headers=ws.headers)
    emails = {c["email"] for c in members.json()["contacts"]}
    # Only the subscribed joined: who left (unsubscribed, cleaned) is on no list.
    assert "ada@analytical-engine.co" in emails and len(emails) == 4
    assert "alan@bletchley.uk" not in emails and "katherine@langley.aero" not in emails


async def test_one_unsubscribed_file_alone(client: Any, db: Any, settings: Any, ws: Any) -> None:
    content = (FIXTURES / "mailchimp" / UNSUBSCRIBED_CSV).read_bytes()
    job = await run_import(client, db, settings, ws, "mailchimp", UNSUBSCRIBED_CSV, content)
    assert job["result"]["suppressed"] == {"unsubscribed": 3, "bounced": 0, "complained": 0}
    for email in ("alan@bletchley.uk", "edsger@dijkstra.nl", "barbara@clu-lang.org"):
        assert (await contact(client, ws, email))["status"] == "unsubscribed"
        assert await suppression(client, ws, email) == "unsubscribed"


async def test_who_left_is_never_made_subscribed_and_suppressions_never_weaken(
    client: Any, db: Any, settings: Any, ws: Any
) -> None:
    # Here already: Alan subscribed (the platform says he left: he leaves here too), Ada
    # suppressed as bounced (the platform says subscribed: she stays unmailed), Edsger
    # suppressed as complained (the platform says unsubscribed: the complaint stays).
    made = await client.post(
        "/api/v1/contacts", headers=ws.headers, json={"email": "alan@bletchley.uk"}
    )
    assert made.status_code == 201
    blocked = await client.post(
        "/api/v1/suppressions",
        headers=ws.headers,
        json={
            "entries": [
                {"email": "ada@analytical-engine.co", "reason": "bounced"},
                {"email": "edsger@dijkstra.nl", "reason": "complained"},
            ]
        },
    )
    assert blocked.status_code == 200
    job = await run_import(client, db, settings, ws, "mailchimp", "export.zip", mailchimp_zip())
    result = job["result"]
    assert (result["created"], result["updated"]) == (8, 1)
    # Alan and Barbara are new entries; Edsger's complaint is not weakened to unsubscribed.
    assert result["suppressed"] == {"unsubscribed": 2, "bounced": 2, "complained": 0}
    assert (await contact(client, ws, "alan@bletchley.uk"))["status"] == "unsubscribed"
    ada = await contact(client, ws, "ada@analytical-engine.co")
    assert ada["status"] == "unsubscribed"
    assert await suppression(client, ws, "ada@analytical-engine.co") == "bounced"
    assert await suppression(client, ws, "edsger@dijkstra.nl") == "complained"


async def test_listmonk_export(client: Any, db: Any, settings: Any, ws: Any) -> None:
    content = (FIXTURES / "listmonk_subscribers.csv").read_bytes()
    job = await run_import(client, db, settings, ws, "listmonk", "subscribers.csv", content)
    result = job["result"]
    assert result["created"] == 6
    assert result["suppressed"] == {"unsubscribed": 1, "bounced": 0, "complained": 0}
    kailash = await contact(client, ws, "kailash@zerodha.example.in")
    assert (kailash["first_name"], kailash["last_name"], kailash["status"]) == (
        "Kailash",
        "Nadh",
        "subscribed",
    )
    assert kailash["custom_fields"]["city"] == "Bengaluru"
    spam = await contact(client, ws, "reported.spam@mailinator-like.net")
    assert spam["status"] == "unsubscribed"
    assert await suppression(client, ws, "reported.spam@mailinator-like.net") == "unsubscribed"
    disabled = await contact(client, ws, "old.member@chennai-club.in")
    assert disabled["status"] == "archived"


async def test_brevo_export_makes_its_lists(client: Any, db: Any, settings: Any, ws: Any) -> None:
    content = (FIXTURES / "brevo_contacts_export.csv").read_bytes()
    job = await run_import(client, db, settings, ws, "brevo", "contacts_export.csv", content)
    result = job["result"]
    assert result["created"] == 5 and result["lists_created"] == 2
    assert result["suppressed"] == {"unsubscribed": 2, "bounced": 0, "complained": 0}
    assert {"key": "birthday", "type": "date"} in result["fields_created"]
    lists = (await client.get("/api/v1/lists", headers=ws.headers)).json()["lists"]
    by_name = {row["name"]: row["id"] for row in lists}
    assert set(by_name) == {"Brevo list 2", "Brevo list 7"}
    members = await client.get(
        f"/api/v1/lists/{by_name['Brevo list 2']}/contacts", headers=ws.headers
    )
    # Marco is on list 2 but blacklisted: who left joins no list.
    emails = {c["email"] for c in members.json()["contacts"]}
    assert emails == {"camille@atelier-lumiere.fr", "jonas@fjord-design.no"}
    assert await suppression(client, ws, "marco@trattoria-roma.it") == "unsubscribed"


async def test_kit_export(client: Any, db: Any, settings: Any, ws: Any) -> None:
    content = (FIXTURES / "kit_subscribers_export.csv").read_bytes()
    job = await run_import(client, db, settings, ws, "kit", "subscribers.csv", content)
    result = job["result"]
    assert result["suppressed"] == {"unsubscribed": 1, "bounced": 1, "complained": 1}
    assert (await contact(client, ws, "cal@angry-reader.org"))["status"] == "complained"
    assert (await contact(client, ws, "bo@gone-domain.biz"))["status"] == "bounced"
    assert any(s.get("email") == "dee@never-confirmed.net" for s in result["skipped"])
    finn = await contact(client, ws, "finn@makers-guild.ie")
    assert sorted(t["name"] for t in finn["tags"]) == ["Creator", "Maker"]
    assert finn["custom_fields"]["score"] == 47.5


async def test_mautic_export(client: Any, db: Any, settings: Any, ws: Any) -> None:
    content = (FIXTURES / "mautic_contacts_export.csv").read_bytes()
    job = await run_import(client, db, settings, ws, "mautic", "contacts.csv", content)
    assert job["result"]["created"] == 4
    jean = await contact(client, ws, "jean.dupont@acme-sarl.fr")
    assert (jean["first_name"], jean["last_name"]) == ("Jean", "Dupont")
    assert jean["custom_fields"]["company"] == "Acme SARL"


async def test_dry_run_counts_and_writes_nothing(
    client: Any, db: Any, settings: Any, ws: Any
) -> None:
    dry = await run_import(
        client, db, settings, ws, "mailchimp", "export.zip", mailchimp_zip(), dry_run="true"
    )
    assert dry["dry_run"] is True and dry["status"] == "done"
    assert await contact_total(client, ws) == 0
    assert await fields(client, ws) == {}
    assert (await client.get("/api/v1/tags", headers=ws.headers)).json()["tags"] == []
    assert await suppression(client, ws, "alan@bletchley.uk") is None
    real = await run_import(client, db, settings, ws, "mailchimp", "export.zip", mailchimp_zip())
    same = ("created", "updated", "unchanged", "suppressed", "tags_created", "fields_created")
    assert {k: dry["result"][k] for k in same} == {k: real["result"][k] for k in same}


@pytest.mark.parametrize(
    ("platform", "message"),
    [
        ("mailchimp", 'Not a Mailchimp audience export: expected an "Email Address" column'),
        ("listmonk", 'Not a listmonk subscribers export: expected an "email" column'),
        ("kit", 'Not a Kit subscribers export: expected an "email_address" column'),
    ],
)
async def test_not_the_platforms_export_is_422(
    client: Any, ws: Any, platform: str, message: str
) -> None:
    answer = await start(client, ws, platform, "people.csv", b"name,phone\nAda,123\n")
    assert answer.status_code == 422
    assert answer.json() == {"error": message}


async def test_refusals_before_any_job(client: Any, ws: Any) -> None:
    archive = mailchimp_zip()
    bad = await start(client, ws, "constantcontact", "export.zip", archive)
    assert (bad.status_code, bad.json()) == (400, {"error": BAD_PLATFORM})
    escape = mailchimp_zip({"../evil.csv": "Email Address\nx@y.dev\n"})
    outside = await start(client, ws, "mailchimp", "export.zip", escape)
    assert (outside.status_code, outside.json()) == (
        400,
        {"error": "Archive entry outside the archive: ../evil.csv"},
    )
    big = await start(client, ws, "listmonk", "s.csv", b"email\n" + b"a" * (5 * 1024 * 1024))
    assert big.status_code == 413
    unknown_list = await start(client, ws, "mailchimp", "e.zip", archive, list_id="nope")
    assert (unknown_list.status_code, unknown_list.json()) == (404, {"error": "List not found"})
    not_bool = await start(client, ws, "mailchimp", "e.zip", archive, dry_run="maybe")
    assert (not_bool.status_code, not_bool.json()) == (
        400,
        {"error": "dry_run must be true or false"},
    )
    listed = await client.get("/api/v1/imports", headers=ws.headers)
    assert listed.json()["imports"] == [] and listed.json()["pagination"]["total"] == 0


async def test_zip_bomb_is_413(client: Any, ws: Any) -> None:
    bomb = mailchimp_zip({"subscribed_members_export_1.csv": "Email Address\n" + "a" * 60_000_000})
    answer = await start(client, ws, "mailchimp", "export.zip", bomb)
    assert answer.status_code == 413


async def test_needs_contacts_lists_and_tags_write(client: Any, factory: Any, ws: Any) -> None:
    for missing in ("lists:write", "tags:write"):
        granted = [p for p in ("contacts:write", "lists:write", "tags:write") if p != missing]
        headers = await factory.key(ws, [*granted, "contacts:read"])
        answer = await client.post(
            "/api/v1/imports",
            headers=headers,
            data={"platform": "mailchimp"},
            files={"file": ("e.zip", mailchimp_zip(), "application/zip")},
        )
        assert answer.status_code == 403, answer.text
        assert missing in answer.json()["error"]


async def test_pages_and_isolation(
    client: Any, db: Any, settings: Any, factory: Any, ws: Any
) -> None:
    content = (FIXTURES / "listmonk_subscribers.csv").read_bytes()
    first = await start(client, ws, "listmonk", "a.csv", content)
    second = await start(client, ws, "listmonk", "b.csv", content)
    listed = await client.get("/api/v1/imports?limit=1", headers=ws.headers)
    body = listed.json()
    assert body["pagination"]["total"] == 2
    assert [i["id"] for i in body["imports"]] == [second.json()["import"]["id"]]
    other = await factory.workspace()
    foreign = await client.get(
        f"/api/v1/imports/{first.json()['import']['id']}", headers=other.headers
    )
    assert (foreign.status_code, foreign.json()) == (404, {"error": "Import not found"})
    assert (await client.get("/api/v1/imports", headers=other.headers)).json()["imports"] == []
    await work(db, settings)
    assert await contact_total(client, other) == 0


async def test_contact_cap_fails_the_job_and_writes_nothing(
    client: Any, db: Any, settings: Any, factory: Any
) -> None:
    free = await factory.workspace("free")
    rows = "".join(
        f"{i:04d}-uuid,reader{i}@readers.dev,Reader {i},{{}},enabled,,\n" for i in range(501)
    )
    content = ("uuid,email,name,attributes,status,created_at,updated_at\n" + rows).encode()
    job = await run_import(client, db, settings, free, "listmonk", "subscribers.csv", content)
    assert job["status"] == "failed"
    assert job["error"] == "Contact limit reached (500 on the Free plan). Upgrade to add more."
    assert job["result"] is None
    assert await contact_total(client, free) == 0


MAILCHIMP_HEADER = (
    '"Email Address","First Name","Last Name",OPTIN_TIME,OPTIN_IP,CONFIRM_TIME,CONFIRM_IP,TAGS\n'
)


async def test_names_match_existing_tags_and_lists_whatever_their_spacing(
    client: Any, db: Any, settings: Any, ws: Any
) -> None:
    made = await client.post("/api/v1/tags", headers=ws.headers, json={"name": "VIP Gold"})
    tag_id = made.json()["tag"]["id"]
    rows = 'ada@lovelace.dev,Ada,,,,,,"""VIP  Gold"",""New\u00a0 One"""\n'
    content = (MAILCHIMP_HEADER + rows).encode()
    job = await run_import(client, db, settings, ws, "mailchimp", "subscribed_members.csv", content)
    assert job["status"] == "done", job
    assert job["result"]["tags_created"] == 1
    ada = await contact(client, ws, "ada@lovelace.dev")
    assert sorted(t["name"] for t in ada["tags"]) == ["New One", "VIP Gold"]
    assert tag_id in {t["id"] for t in ada["tags"]}


async def test_lists_differing_in_case_are_one_list_in_a_dry_run_too(
    client: Any, db: Any, settings: Any, ws: Any
) -> None:
    content = b"Email,First name,Lists\nann@acme.dev,Ann,Alpha\nbob@acme.dev,Bob,alpha\n"
    dry = await run_import(client, db, settings, ws, "brevo", "c.csv", content, dry_run="true")
    real = await run_import(client, db, settings, ws, "brevo", "c.csv", content)
    assert dry["result"]["lists_created"] == real["result"]["lists_created"] == 1


async def test_unreadable_cells_are_warnings_not_errors(
    client: Any, db: Any, settings: Any, ws: Any
) -> None:
    rows = (
        "far@future.dev,Far,,9999-12-31 23:59:59-10:00,,0001-01-01 00:00:00+01:00,,\n"
        "nul@bytes.dev,A\x00B,,,,,,\n"
    )
    content = (MAILCHIMP_HEADER + rows).encode()
    job = await run_import(client, db, settings, ws, "mailchimp", "subscribed_members.csv", content)
    assert job["status"] == "done", job
    assert any("could not be read" in w for w in job["result"]["warnings"])
    assert (await contact(client, ws, "nul@bytes.dev"))["first_name"] == "AB"
    deep = (
        "uuid,email,name,attributes,status\nu1,deep@json.dev,Deep,"
        + '"'
        + "[" * 50_000
        + '"'
        + ",enabled\n"
    )
    answer = await start(client, ws, "listmonk", "subscribers.csv", deep.encode())
    assert answer.status_code == 202, answer.text  # the attributes are unreadable: a warning


async def test_a_contact_keeps_room_for_its_consent_fields(
    client: Any, db: Any, settings: Any, ws: Any
) -> None:
    names = [f"Field {i}" for i in range(55)]
    header = '"Email Address",' + ",".join(f'"{n}"' for n in names) + ",OPTIN_TIME,OPTIN_IP\n"
    row = (
        "ada@lovelace.dev,"
        + ",".join(f"v{i}" for i in range(55))
        + ",2023-01-01 10:00:00,192.0.2.1\n"
    )
    job = await run_import(
        client, db, settings, ws, "mailchimp", "subscribed_members.csv", (header + row).encode()
    )
    result = job["result"]
    assert len(result["fields_created"]) == 47
    assert any(w.startswith("More than 47 fields") for w in result["warnings"])
    ada = await contact(client, ws, "ada@lovelace.dev")
    assert len(ada["custom_fields"]) == 50
    changed = await client.patch(
        f"/api/v1/contacts/{ada['id']}",
        headers=ws.headers,
        json={"custom_fields": {"field_0": "x"}},
    )
    assert changed.status_code == 200, changed.text
