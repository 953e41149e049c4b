"""POST /contacts/import, row by row: statuses and aliases, invalid rows, tags, dates, consent
and custom-field columns, placeholder addresses, repeated addresses (rules 1-6, 10, 11)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.spec_bulk_import.helpers import (
    all_tags,
    create_tag,
    find,
    get,
    import_rows,
    make_csv,
    suppression,
    tag_names,
    total,
    upload,
    when,
)


@pytest.mark.parametrize(
    ("cell", "stored"),
    [
        ("subscribed", "subscribed"),
        ("SUBSCRIBED", "subscribed"),
        ("active", "subscribed"),
        ("Active", "subscribed"),
        ("unsubscribed", "unsubscribed"),
        ("cancelled", "unsubscribed"),
        ("canceled", "unsubscribed"),
        ("bounced", "bounced"),
        ("cleaned", "bounced"),
        ("complained", "complained"),
        ("junk", "complained"),
        ("spam", "complained"),
    ],
)
async def test_status_values_and_aliases(client, ws, cell, stored):
    body = await import_rows(client, ws.headers, [["email", "status"], ["s@acme.io", cell]])
    assert body["imported"] == 1
    contact = await get(client, ws.headers, "s@acme.io")
    assert contact["status"] == stored
    if stored == "subscribed":
        assert contact["unsubscribed_at"] is None
    else:
        assert contact["unsubscribed_at"] is not None


async def test_opted_out_rows_go_on_the_suppression_list(client, ws):
    body = await import_rows(
        client,
        ws.headers,
        [
            ["email", "status"],
            ["u@acme.io", "unsubscribed"],
            ["b@acme.io", "bounced"],
            ["c@acme.io", "complained"],
            ["ok@acme.io", "subscribed"],
        ],
    )
    assert body["imported"] == 4
    assert (await suppression(client, ws.headers, "u@acme.io"))["reason"] == "unsubscribed"
    assert (await suppression(client, ws.headers, "b@acme.io"))["reason"] == "bounced"
    assert (await suppression(client, ws.headers, "c@acme.io"))["reason"] == "complained"
    assert (await suppression(client, ws.headers, "ok@acme.io"))["suppressed"] is False


async def test_pending_and_unconfirmed_are_never_imported(client, ws):
    body = await import_rows(
        client,
        ws.headers,
        [
            ["email", "status"],
            ["p1@acme.io", "pending"],
            ["p2@acme.io", "Unconfirmed"],
            ["in@acme.io", "subscribed"],
        ],
    )
    assert body["imported"] == 1
    assert body["skipped_unconfirmed"] == 2
    assert await find(client, ws.headers, "p1@acme.io") is None
    assert await find(client, ws.headers, "p2@acme.io") is None


async def test_blank_status_uses_default_status(client, ws):
    rows = [["email", "status"], ["blank@acme.io", ""], ["set@acme.io", "subscribed"]]
    body = await import_rows(client, ws.headers, rows, default_status="unsubscribed")
    assert body["imported"] == 2
    assert (await get(client, ws.headers, "blank@acme.io"))["status"] == "unsubscribed"
    assert (await get(client, ws.headers, "set@acme.io"))["status"] == "subscribed"
    await import_rows(client, ws.headers, [["email"], ["nostatus@acme.io"]])
    assert (await get(client, ws.headers, "nostatus@acme.io"))["status"] == "subscribed"


async def test_invalid_rows_are_counted(client, ws):
    local = "a" * 64
    too_long = f"{local}@{'b' * 63}.{'c' * 63}.{'d' * 63}.io"  # 64 + 1 + 195 = 260 chars
    assert len(too_long) > 254
    rows = [
        ["email", "first_name", "last_name", "status"],
        ["", "No", "Email", ""],
        ["not-an-email", "", "", ""],
        ["two@@acme.io", "", "", ""],
        ["spaces in@acme.io", "", "", ""],
        [too_long, "", "", ""],
        ["longfirst@acme.io", "x" * 101, "", ""],
        ["longlast@acme.io", "", "y" * 101, ""],
        ["badstatus@acme.io", "", "", "vip"],
        ["okfirst@acme.io", "x" * 100, "y" * 100, ""],
    ]
    body = await import_rows(client, ws.headers, rows)
    assert body["invalid"] == 8
    assert body["imported"] == 1
    for email in ("longfirst@acme.io", "longlast@acme.io", "badstatus@acme.io"):
        assert await find(client, ws.headers, email) is None
    kept = await get(client, ws.headers, "okfirst@acme.io")
    assert len(kept["first_name"]) == 100 and len(kept["last_name"]) == 100


async def test_email_is_trimmed_and_lowercased(client, ws):
    await import_rows(client, ws.headers, [["email"], ["  MiXeD.Case@ACME.io  "]])
    assert (await get(client, ws.headers, "mixed.case@acme.io"))["email"] == "mixed.case@acme.io"


async def test_placeholder_addresses_are_skipped_and_listed(client, ws):
    placeholders = [
        "jane@example.com",
        "joe@example.net",
        "ann@example.org",
        "deep@mail.example.com",
        "t@host.test",
        "i@host.invalid",
        "l@host.localhost",
        "e@site.example",
        "abuse@acme.io",
        "postmaster@acme.io",
    ]
    kept = ["real@acme.io", "me@myexample.com", "x@example.io"]
    body = await import_rows(client, ws.headers, [["email"], *([e] for e in placeholders + kept)])
    assert body["imported"] == 3
    assert body["skipped_placeholder"] == len(placeholders)
    listed = body["placeholder_addresses"]
    assert sorted(p["email"] for p in listed) == sorted(placeholders)
    assert all(isinstance(p["reason"], str) and p["reason"] for p in listed)
    for email in placeholders:
        assert await find(client, ws.headers, email) is None
    for email in kept:
        assert await find(client, ws.headers, email) is not None


async def test_tags_split_on_semicolon_and_pipe_and_request_tags(client, ws):
    rows = [
        ["email", "tags"],
        ["t1@acme.io", "alpha; beta"],
        ["t2@acme.io", "beta|gamma"],
        ["t3@acme.io", ""],
    ]
    body = await import_rows(client, ws.headers, rows, tags="Imported|Spring")
    assert body["tags_created"] == 5
    assert body["tags_attached"] == 4 + 4 + 2
    assert tag_names(await get(client, ws.headers, "t1@acme.io")) == {
        "alpha",
        "beta",
        "Imported",
        "Spring",
    }
    assert tag_names(await get(client, ws.headers, "t2@acme.io")) == {
        "beta",
        "gamma",
        "Imported",
        "Spring",
    }
    assert tag_names(await get(client, ws.headers, "t3@acme.io")) == {"Imported", "Spring"}
    assert sorted(t["name"] for t in await all_tags(client, ws.headers)) == sorted(
        ["alpha", "beta", "gamma", "Imported", "Spring"]
    )


async def test_request_tags_with_semicolons(client, ws):
    body = await import_rows(client, ws.headers, [["email"], ["rt@acme.io"]], tags="one;two")
    assert body["tags_created"] == 2 and body["tags_attached"] == 2
    assert tag_names(await get(client, ws.headers, "rt@acme.io")) == {"one", "two"}


async def test_tags_match_existing_names_case_insensitively(client, ws):
    vip = await create_tag(client, ws.headers, "VIP")
    rows = [["email", "tags"], ["ci@acme.io", "vip;Newsletter"], ["ci2@acme.io", "Vip"]]
    body = await import_rows(client, ws.headers, rows, tags="vIp")
    assert body["tags_created"] == 1  # only Newsletter
    assert body["tags_attached"] == 3
    contact = await get(client, ws.headers, "ci@acme.io")
    assert tag_names(contact) == {"VIP", "Newsletter"}
    assert vip["id"] in {t["id"] for t in contact["tags"]}
    assert [t["name"] for t in (await get(client, ws.headers, "ci2@acme.io"))["tags"]] == ["VIP"]
    assert len(await all_tags(client, ws.headers)) == 2


async def test_tag_limits_per_row_and_length(client, ws):
    many = ";".join(f"tag{i:02d}" for i in range(25))
    long_tag = "L" * 61
    rows = [
        ["email", "tags"],
        ["many@acme.io", many],
        ["long@acme.io", f"short;{long_tag};{'M' * 60}"],
    ]
    body = await import_rows(client, ws.headers, rows)
    assert body["imported"] == 2
    assert len((await get(client, ws.headers, "many@acme.io"))["tags"]) <= 20
    long_contact = await get(client, ws.headers, "long@acme.io")
    assert long_tag not in tag_names(long_contact)
    assert {"short", "M" * 60} <= tag_names(long_contact)
    assert all(len(t["name"]) <= 60 for t in await all_tags(client, ws.headers))
    assert body["truncated"] is True


async def test_at_most_200_distinct_tags_per_import(client, ws):
    rows = [["email", "tags"]] + [
        [f"dt{i}@acme.io", ";".join(f"t{i}-{j}" for j in range(15))] for i in range(15)
    ]  # 225 distinct names
    body = await import_rows(client, ws.headers, rows)
    assert body["imported"] == 15
    assert body["tags_created"] <= 200
    response = await client.get("/api/v1/tags", params={"limit": 100}, headers=ws.headers)
    assert response.json()["pagination"]["total"] <= 200


@pytest.mark.parametrize(
    ("header", "cell", "expected"),
    [
        ("subscribed_at", "2021-06-01T08:30:00Z", datetime(2021, 6, 1, 8, 30, tzinfo=UTC)),
        ("opted_in_at", "2021-06-01T10:30:00+02:00", datetime(2021, 6, 1, 8, 30, tzinfo=UTC)),
        ("signup_at", "2021-06-01 08:30:00", datetime(2021, 6, 1, 8, 30, tzinfo=UTC)),
        ("OPTIN_TIME", "2021-06-01", datetime(2021, 6, 1, tzinfo=UTC)),
        ("created_at", "25/12/2020", datetime(2020, 12, 25, tzinfo=UTC)),
        ("Subscribed At", "01/02/2019", datetime(2019, 2, 1, tzinfo=UTC)),
    ],
)
async def test_subscribed_at_aliases_and_formats(client, ws, header, cell, expected):
    await import_rows(client, ws.headers, [["email", header], ["d@acme.io", cell]])
    contact = await get(client, ws.headers, "d@acme.io")
    assert when(contact["subscribed_at"]) == expected


@pytest.mark.parametrize("cell", ["2999-01-01T00:00:00Z", "not a date", "31/02/2020"])
async def test_future_or_unparseable_subscribed_at_becomes_now(client, ws, cell):
    before = datetime.now(UTC) - timedelta(seconds=5)
    await import_rows(client, ws.headers, [["email", "subscribed_at"], ["f@acme.io", cell]])
    after = datetime.now(UTC) + timedelta(seconds=5)
    stamp = when((await get(client, ws.headers, "f@acme.io"))["subscribed_at"])
    assert stamp is not None and before <= stamp <= after


@pytest.mark.parametrize(
    ("header", "cell", "expected"),
    [
        ("unsubscribed_at", "2022-03-04T05:06:07Z", datetime(2022, 3, 4, 5, 6, 7, tzinfo=UTC)),
        ("opted_out_at", "2022-03-04", datetime(2022, 3, 4, tzinfo=UTC)),
        ("UNSUB_TIME", "2022-03-04 05:06:07", datetime(2022, 3, 4, 5, 6, 7, tzinfo=UTC)),
        ("unsubscribed_at", "04/03/2022", datetime(2022, 3, 4, tzinfo=UTC)),
    ],
)
async def test_unsubscribed_at_aliases_and_formats(client, ws, header, cell, expected):
    rows = [["email", "status", header], ["o@acme.io", "unsubscribed", cell]]
    await import_rows(client, ws.headers, rows)
    contact = await get(client, ws.headers, "o@acme.io")
    assert contact["status"] == "unsubscribed"
    assert when(contact["unsubscribed_at"]) == expected


async def test_future_unsubscribed_at_becomes_now(client, ws):
    before = datetime.now(UTC) - timedelta(seconds=5)
    rows = [["email", "status", "unsubscribed_at"], ["fu@acme.io", "unsubscribed", "2998-05-05"]]
    await import_rows(client, ws.headers, rows)
    stamp = when((await get(client, ws.headers, "fu@acme.io"))["unsubscribed_at"])
    assert stamp is not None and before <= stamp <= datetime.now(UTC) + timedelta(seconds=5)


async def test_consent_columns_become_consent_custom_fields(client, ws):
    rows = [
        ["email", "consent_ip", "Consent At", "consent_source"],
        ["gdpr@acme.io", "203.0.113.9", "2023-01-02 03:04:05", "landing page"],
        ["gdpr2@acme.io", "", "2023-01-02T05:04:05+02:00", ""],
    ]
    body = await import_rows(client, ws.headers, rows)
    assert body["imported"] == 2
    fields = (await get(client, ws.headers, "gdpr@acme.io"))["custom_fields"]
    assert fields["consent_ip"] == "203.0.113.9"
    assert fields["consent_source"] == "landing page"
    assert when(fields["consent_confirmed_at"]) == datetime(2023, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert "T" in fields["consent_confirmed_at"]  # ISO 8601
    assert "consent_at" not in fields
    other = (await get(client, ws.headers, "gdpr2@acme.io"))["custom_fields"]
    assert when(other["consent_confirmed_at"]) == datetime(2023, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert "consent_ip" not in other and "consent_source" not in other


async def test_other_columns_become_custom_fields(client, ws):
    long_header = "k" * 65
    header = ["email", "Company Name", "Plan", "!!!", long_header, "Notes"]
    rows = [
        header,
        ["cf@acme.io", "Acme Ltd", "gold", "x", "y", ""],
        ["cf2@acme.io", "", "silver", "x", "y", "z" * 201],
    ]
    body = await import_rows(client, ws.headers, rows)
    assert body["imported"] == 2
    assert sorted(body["dropped_columns"]) == sorted(["!!!", long_header])
    assert {"company_name", "plan"} <= set(body["custom_field_keys"])
    one = (await get(client, ws.headers, "cf@acme.io"))["custom_fields"]
    assert one == {"company_name": "Acme Ltd", "plan": "gold"}  # empty cells store nothing
    two = (await get(client, ws.headers, "cf2@acme.io"))["custom_fields"]
    assert two.get("plan") == "silver"
    assert "company_name" not in two
    assert len(two.get("notes", "")) <= 200
    registry = await client.get("/api/v1/custom-fields", headers=ws.headers)
    keys = {f["key"] for f in registry.json()["fields"]}
    assert {"company_name", "plan"} <= keys


async def test_more_than_50_custom_columns_drops_the_extra(client, ws):
    header = ["email", *(f"field_{i:02d}" for i in range(52))]
    body = await import_rows(client, ws.headers, [header, ["many@acme.io", *["v"] * 52]])
    assert body["imported"] == 1
    fields = (await get(client, ws.headers, "many@acme.io"))["custom_fields"]
    assert len(fields) <= 50
    assert len(body["dropped_columns"]) == 2


async def test_source_column_and_request_source(client, ws):
    rows = [
        ["email", "source"],
        ["src1@acme.io", "webinar"],
        ["src2@acme.io", ""],
        ["src4@acme.io", "s" * 45],
    ]
    await import_rows(client, ws.headers, rows, source="crm-sync")
    assert len((await get(client, ws.headers, "src4@acme.io"))["source"]) <= 40
    assert (await get(client, ws.headers, "src1@acme.io"))["source"] == "webinar"
    assert (await get(client, ws.headers, "src2@acme.io"))["source"] == "crm-sync"
    await import_rows(client, ws.headers, [["email"], ["src3@acme.io"]])
    assert (await get(client, ws.headers, "src3@acme.io"))["source"] == "import"


async def test_already_suppressed_address_imports_as_unsubscribed(client, ws):
    response = await client.post(
        "/api/v1/suppressions",
        json={"reason": "bounced", "entries": ["gone@acme.io"]},
        headers=ws.headers,
    )
    assert response.status_code == 200
    rows = [["email", "status"], ["gone@acme.io", "subscribed"], ["fine@acme.io", "subscribed"]]
    body = await import_rows(client, ws.headers, rows)
    assert body["imported"] == 2
    assert body["suppressed"] == 1
    assert (await get(client, ws.headers, "gone@acme.io"))["status"] == "unsubscribed"
    assert (await get(client, ws.headers, "fine@acme.io"))["status"] == "subscribed"
    # The bounce is never downgraded by the import.
    assert (await suppression(client, ws.headers, "gone@acme.io"))["reason"] == "bounced"


async def test_repeated_addresses_merge(client, ws):
    rows = [
        ["email", "first_name", "status", "tags", "plan", "city"],
        ["dup@acme.io", "Dee", "subscribed", "a", "basic", "Rome"],
        ["DUP@acme.io", "", "unsubscribed", "b", "", ""],
        ["dup@acme.io", "", "subscribed", "a;c", "", "Milan"],
        ["solo@acme.io", "Solo", "", "", "", ""],
    ]
    body = await import_rows(client, ws.headers, rows)
    assert body["imported"] == 2
    assert body["skipped_duplicates"] == 2
    contact = await get(client, ws.headers, "dup@acme.io")
    assert contact["status"] == "unsubscribed"  # strongest status wins
    assert tag_names(contact) == {"a", "b", "c"}
    assert contact["custom_fields"]["plan"] == "basic"
    assert contact["custom_fields"]["city"] in {"Rome", "Milan"}
    assert contact["first_name"] == "Dee"
    assert (
        await total(client, ws.headers) + await total(client, ws.headers, status="unsubscribed")
        >= 2
    )


@pytest.mark.parametrize(
    ("statuses", "winner"),
    [
        (["subscribed", "bounced", "unsubscribed"], "bounced"),
        (["complained", "subscribed", "bounced"], "complained"),
        (["pending", "subscribed"], "subscribed"),
    ],
)
async def test_strongest_status_wins(client, ws, statuses, winner):
    rows = [["email", "status"], *(["m@acme.io", s] for s in statuses)]
    await import_rows(client, ws.headers, rows)
    assert (await get(client, ws.headers, "m@acme.io"))["status"] == winner


async def test_skipped_counts_every_skipped_row(client, ws):
    rows = [
        ["email", "status"],
        ["bad", ""],
        ["p@acme.io", "pending"],
        ["x@example.com", ""],
        ["r@acme.io", ""],
        ["r@acme.io", ""],
    ]
    body = await import_rows(client, ws.headers, rows)
    assert body["imported"] == 1
    assert body["invalid"] == 1
    assert body["skipped_unconfirmed"] == 1
    assert body["skipped_placeholder"] == 1
    assert body["skipped_duplicates"] == 1
    assert body["skipped"] == 4


async def test_report_shape_without_automations(client, ws):
    content = make_csv([["email"], ["shape@acme.io"]])
    response = await upload(client, ws.headers, content)
    body = response.json()
    assert "automations_enrolled" not in body
    assert body["undeliverable_domains"] == [] and body["placeholder_addresses"] == []
    assert body["truncated"] is False
    explicit = await upload(
        client, ws.headers, make_csv([["email"], ["s2@acme.io"]]), run_automations="false"
    )
    assert "automations_enrolled" not in explicit.json()


async def test_run_automations_reports_enrolled(client, ws):
    response = await upload(
        client, ws.headers, make_csv([["email"], ["auto@acme.io"]]), run_automations="true"
    )
    assert response.status_code == 200
    body = response.json()
    assert isinstance(body["automations_enrolled"], int)
    assert body["automations_enrolled"] >= 0


async def test_archived_is_not_an_import_status(client, ws):
    rows = [["email", "status"], ["arch@acme.io", "archived"], ["ok@acme.io", ""]]
    body = await import_rows(client, ws.headers, rows)
    assert body["invalid"] == 1 and body["imported"] == 1
    assert await find(client, ws.headers, "arch@acme.io") is None


async def test_other_workspaces_contacts_and_tags_are_not_matched(client, ws, factory):
    other = await factory.workspace()
    await import_rows(
        client,
        other.headers,
        [["email", "first_name", "tags"], ["same@acme.io", "Theirs", "Shared"]],
    )
    body = await import_rows(
        client, ws.headers, [["email", "first_name", "tags"], ["same@acme.io", "Mine", "shared"]]
    )
    assert body["imported"] == 1 and body["updated"] == 0
    assert body["tags_created"] == 1
    assert (await get(client, ws.headers, "same@acme.io"))["first_name"] == "Mine"
    assert (await get(client, other.headers, "same@acme.io"))["first_name"] == "Theirs"
