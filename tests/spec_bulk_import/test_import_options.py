"""POST /contacts/import options: `mapping` (rule 12), `new_fields`, `check_domains`."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from tests.dns_server import DnsServer
from tests.spec_bulk_import.helpers import (
    create_contact,
    find,
    get,
    import_rows,
    make_csv,
    total,
    upload,
    when,
)

FILE = [
    ["Col A", "Col B", "Col C", "Col D", "Col E"],
    ["Ann", "ann@acme.io", "gold", "2020-01-02", "ignored"],
    ["Ben", "ben@acme.io", "silver", "", "ignored"],
]


async def test_mapping_assigns_columns(client, ws):
    mapping = [
        {"column": 1, "target": "email"},
        {"column": 0, "target": "first_name"},
        {"column": 2, "target": "custom", "key": "tier"},
        {"column": 3, "target": "subscribed_at"},
    ]
    body = await import_rows(client, ws.headers, FILE, mapping=mapping)
    assert body["imported"] == 2
    ann = await get(client, ws.headers, "ann@acme.io")
    assert ann["first_name"] == "Ann"
    assert ann["custom_fields"] == {"tier": "gold"}  # unlisted column E is ignored
    assert when(ann["subscribed_at"]) == datetime(2020, 1, 2, tzinfo=UTC)
    assert (await get(client, ws.headers, "ben@acme.io"))["custom_fields"] == {"tier": "silver"}


async def test_mapping_ignore_target_and_all_targets(client, ws):
    rows = [
        ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"],
        [
            "x@acme.io",
            "Xa",
            "Xb",
            "unsubscribed",
            "t1|t2",
            "partner",
            "2019-05-05",
            "2020-06-06",
            "192.0.2.1",
            "2019-05-04",
            "popup",
            "drop me",
        ],
    ]
    targets = [
        "email",
        "first_name",
        "last_name",
        "status",
        "tags",
        "source",
        "subscribed_at",
        "unsubscribed_at",
        "consent_ip",
        "consent_at",
        "consent_source",
        "ignore",
    ]
    mapping = [{"column": i, "target": t} for i, t in enumerate(targets)]
    body = await import_rows(client, ws.headers, rows, mapping=mapping)
    assert body["imported"] == 1
    contact = await get(client, ws.headers, "x@acme.io")
    assert (contact["first_name"], contact["last_name"]) == ("Xa", "Xb")
    assert contact["status"] == "unsubscribed"
    assert contact["source"] == "partner"
    assert {t["name"] for t in contact["tags"]} == {"t1", "t2"}
    assert when(contact["subscribed_at"]) == datetime(2019, 5, 5, tzinfo=UTC)
    assert when(contact["unsubscribed_at"]) == datetime(2020, 6, 6, tzinfo=UTC)
    fields = contact["custom_fields"]
    assert fields["consent_ip"] == "192.0.2.1"
    assert fields["consent_source"] == "popup"
    assert when(fields["consent_confirmed_at"]) == datetime(2019, 5, 4, tzinfo=UTC)
    assert set(fields) == {"consent_ip", "consent_source", "consent_confirmed_at"}


async def test_mapping_several_date_columns_first_usable_wins(client, ws):
    rows = [
        ["email", "d1", "d2", "d3"],
        ["one@acme.io", "", "garbage", "2018-08-08"],
        ["two@acme.io", "2017-07-07", "", "2018-08-08"],
    ]
    mapping = [
        {"column": 0, "target": "email"},
        {"column": 1, "target": "subscribed_at"},
        {"column": 2, "target": "subscribed_at"},
        {"column": 3, "target": "subscribed_at"},
    ]
    await import_rows(client, ws.headers, rows, mapping=mapping)
    one = await get(client, ws.headers, "one@acme.io")
    assert when(one["subscribed_at"]) == datetime(2018, 8, 8, tzinfo=UTC)
    two = await get(client, ws.headers, "two@acme.io")
    assert when(two["subscribed_at"]) == datetime(2017, 7, 7, tzinfo=UTC)


@pytest.mark.parametrize(
    "mapping",
    [
        "not json",
        "{bad json",
        json.dumps({"column": 1, "target": "email"}),
        json.dumps([{"column": 0, "target": "first_name"}]),
        json.dumps([{"column": 0, "target": "email"}, {"column": 1, "target": "email"}]),
        json.dumps(
            [
                {"column": 1, "target": "email"},
                {"column": 0, "target": "first_name"},
                {"column": 4, "target": "first_name"},
            ]
        ),
        json.dumps(
            [
                {"column": 1, "target": "email"},
                {"column": 2, "target": "custom", "key": "tier"},
                {"column": 3, "target": "custom", "key": "tier"},
            ]
        ),
        json.dumps(
            [
                {"column": 1, "target": "email"},
                {"column": 2, "target": "custom", "key": "consent_ip"},
            ]
        ),
        json.dumps(
            [
                {"column": 1, "target": "email"},
                {"column": 2, "target": "custom", "key": "consent_source"},
            ]
        ),
        json.dumps(
            [
                {"column": 1, "target": "email"},
                {"column": 2, "target": "custom", "key": "consent_confirmed_at"},
            ]
        ),
        json.dumps([{"column": 1, "target": "email"}, {"column": 2, "target": "nickname"}]),
        json.dumps([{"column": 1, "target": "email"}, {"column": 2, "target": "custom"}]),
        json.dumps([{"column": 9, "target": "email"}]),
    ],
    ids=[
        "not-json",
        "broken-json",
        "not-array",
        "no-email",
        "two-emails",
        "duplicate-single-target",
        "custom-key-reused",
        "custom-consent-ip",
        "custom-consent-source",
        "custom-consent-confirmed-at",
        "unknown-target",
        "custom-without-key",
        "column-out-of-range",
    ],
)
async def test_invalid_mapping_is_400(client, ws, mapping):
    response = await upload(client, ws.headers, make_csv(FILE), mapping=mapping)
    assert response.status_code == 400
    assert isinstance(response.json()["error"], str)
    assert await total(client, ws.headers) == 0


async def test_new_fields_declares_types_before_typing(client, ws):
    new_fields = [
        {"key": "score", "type": "number", "label": "Score"},
        {"key": "vip", "type": "boolean"},
        {"key": "birthday", "type": "date"},
        {"key": "size", "type": "dropdown", "options": ["S", "M", "L"]},
    ]
    rows = [
        ["email", "score", "vip", "birthday", "size", "note"],
        ["nf@acme.io", "42", "yes", "24/12/1990", "M", "hello"],
        ["nf2@acme.io", "3.5", "false", "1991-01-31", "L", ""],
    ]
    body = await import_rows(client, ws.headers, rows, new_fields=new_fields)
    assert body["imported"] == 2
    fields = (await get(client, ws.headers, "nf@acme.io"))["custom_fields"]
    assert fields["score"] == 42 and not isinstance(fields["score"], str)
    assert fields["vip"] is True
    assert fields["birthday"] == "1990-12-24"
    assert fields["size"] == "M"
    assert fields["note"] == "hello"
    other = (await get(client, ws.headers, "nf2@acme.io"))["custom_fields"]
    assert other["score"] == 3.5
    assert other["vip"] is False
    registry = (await client.get("/api/v1/custom-fields", headers=ws.headers)).json()["fields"]
    by_key = {f["key"]: f for f in registry}
    assert by_key["score"]["type"] == "number" and by_key["score"]["label"] == "Score"
    assert by_key["vip"]["type"] == "boolean"
    assert by_key["birthday"]["type"] == "date"
    assert by_key["size"]["type"] == "dropdown" and by_key["size"]["options"] == ["S", "M", "L"]
    assert by_key["note"]["type"] == "text"


async def test_new_fields_conflicting_with_stored_values_is_409(client, ws):
    await create_contact(client, ws.headers, "has@acme.io", custom_fields={"score": "high"})
    rows = [["email", "score"], ["newbie@acme.io", "7"]]
    response = await upload(
        client, ws.headers, make_csv(rows), new_fields=[{"key": "score", "type": "number"}]
    )
    assert response.status_code == 409
    body = response.json()
    assert isinstance(body["error"], str)
    assert body["violations"]["count"] == 1
    assert await find(client, ws.headers, "newbie@acme.io") is None
    registry = (await client.get("/api/v1/custom-fields", headers=ws.headers)).json()["fields"]
    assert {f["key"]: f["type"] for f in registry}["score"] == "text"


@pytest.mark.parametrize(
    "new_fields",
    [
        "not json",
        json.dumps({"key": "a", "type": "number"}),
        json.dumps([{"type": "number"}]),
        json.dumps([{"key": "bad key!", "type": "number"}]),
        json.dumps([{"key": "a", "type": "colour"}]),
    ],
)
async def test_invalid_new_fields_is_400(client, ws, new_fields):
    rows = [["email", "a"], ["x@acme.io", "1"]]
    response = await upload(client, ws.headers, make_csv(rows), new_fields=new_fields)
    assert response.status_code == 400
    assert await total(client, ws.headers) == 0


async def test_typed_field_value_that_does_not_fit_is_not_stored_as_text(client, ws):
    rows = [["email", "score"], ["ok@acme.io", "12"], ["nan@acme.io", "lots"]]
    await import_rows(client, ws.headers, rows, new_fields=[{"key": "score", "type": "number"}])
    assert (await get(client, ws.headers, "ok@acme.io"))["custom_fields"]["score"] == 12
    assert (await get(client, ws.headers, "nan@acme.io"))["custom_fields"].get("score") != "lots"


ZONES = {
    "good.io": {"MX": ["mx.good.io"]},
    "nomail.io": {"MX": ["."]},
    "aonly.io": {"A": ["203.0.113.5"]},
    "slow.io": {"slow": True},
}


async def test_check_domains_skips_undeliverable_domains(client, ws, settings):
    async with DnsServer(ZONES) as dns:
        settings.dns_nameservers = [dns.address]
        rows = [
            ["email"],
            ["a@good.io"],
            ["b@good.io"],
            ["c@nomail.io"],
            ["d@aonly.io"],
            ["e@missing.io"],
            ["f@missing.io"],
            ["g@gmail.com"],
        ]
        body = await import_rows(client, ws.headers, rows, check_domains="true")
        queried = {name for name, _ in dns.protocol.queries}
    assert body["imported"] == 4
    assert body["skipped_undeliverable"] == 3
    by_domain = {d["domain"]: d for d in body["undeliverable_domains"]}
    assert set(by_domain) == {"nomail.io", "missing.io"}
    assert by_domain["missing.io"]["rows"] == 2
    assert by_domain["nomail.io"]["rows"] == 1
    assert all(isinstance(d.get("reason", ""), str) for d in by_domain.values())
    for email in ("a@good.io", "b@good.io", "d@aonly.io", "g@gmail.com"):
        assert await find(client, ws.headers, email) is not None
    for email in ("c@nomail.io", "e@missing.io", "f@missing.io"):
        assert await find(client, ws.headers, email) is None
    assert "gmail.com" not in queried
    assert {"good.io", "nomail.io", "aonly.io", "missing.io"} <= queried


async def test_check_domains_timeout_keeps_the_row(client, ws, settings):
    async with DnsServer(ZONES) as dns:
        settings.dns_nameservers = [dns.address]
        rows = [["email"], ["slow@slow.io"], ["fast@good.io"]]
        body = await import_rows(client, ws.headers, rows, check_domains="true")
    assert body["imported"] == 2
    assert body["skipped_undeliverable"] == 0
    assert body["undeliverable_domains"] == []


async def test_without_check_domains_nothing_is_looked_up(client, ws, settings):
    async with DnsServer(ZONES) as dns:
        settings.dns_nameservers = [dns.address]
        body = await import_rows(client, ws.headers, [["email"], ["z@missing.io"]])
        assert dns.protocol.queries == []
    assert body["imported"] == 1
    assert body["skipped_undeliverable"] == 0


async def test_all_rows_undeliverable_is_422(client, ws, settings):
    async with DnsServer(ZONES) as dns:
        settings.dns_nameservers = [dns.address]
        response = await upload(
            client, ws.headers, make_csv([["email"], ["q@missing.io"]]), check_domains="true"
        )
    assert response.status_code == 422
    assert "invalid" in response.json() and "skipped_unconfirmed" in response.json()


async def test_at_most_500_domains_are_looked_up(client, ws, settings):
    async with DnsServer({}) as dns:  # every name: NXDOMAIN
        settings.dns_nameservers = [dns.address]
        rows = [["email"], *([f"u{i}@d{i:03d}.io"] for i in range(505))]
        body = await import_rows(client, ws.headers, rows, check_domains="true")
        queried = {name for name, _ in dns.protocol.queries}
    assert len(queried) == 500
    assert body["skipped_undeliverable"] == 500
    assert body["imported"] == 5  # domains left unchecked keep their rows
    assert body["truncated"] is True


async def test_mapping_consent_at_may_take_several_columns(client, ws):
    """Rule 12: "the three date targets may take several, first usable date wins" - the date
    targets are subscribed_at, unsubscribed_at and consent_at."""
    rows = [
        ["email", "confirmed", "double_opt_in_at"],
        ["c1@acme.io", "", "2021-04-05 06:07:08"],
        ["c2@acme.io", "2020-01-01", "2021-04-05"],
    ]
    mapping = [
        {"column": 0, "target": "email"},
        {"column": 1, "target": "consent_at"},
        {"column": 2, "target": "consent_at"},
    ]
    response = await upload(client, ws.headers, make_csv(rows), mapping=mapping)
    assert response.status_code == 200, response.text
    one = (await get(client, ws.headers, "c1@acme.io"))["custom_fields"]
    assert when(one["consent_confirmed_at"]) == datetime(2021, 4, 5, 6, 7, 8, tzinfo=UTC)
    two = (await get(client, ws.headers, "c2@acme.io"))["custom_fields"]
    assert when(two["consent_confirmed_at"]) == datetime(2020, 1, 1, tzinfo=UTC)


async def test_mapping_unsubscribed_at_may_take_several_columns(client, ws):
    rows = [["email", "status", "a", "b"], ["u@acme.io", "unsubscribed", "", "2019-09-09"]]
    mapping = [
        {"column": 0, "target": "email"},
        {"column": 1, "target": "status"},
        {"column": 2, "target": "unsubscribed_at"},
        {"column": 3, "target": "unsubscribed_at"},
    ]
    await import_rows(client, ws.headers, rows, mapping=mapping)
    contact = await get(client, ws.headers, "u@acme.io")
    assert when(contact["unsubscribed_at"]) == datetime(2019, 9, 9, tzinfo=UTC)


async def test_several_date_alias_headers_first_usable_wins(client, ws):
    rows = [
        ["email", "OPTIN_TIME", "created_at"],
        ["h1@acme.io", "", "2016-06-16"],
        ["h2@acme.io", "2015-05-15", "2016-06-16"],
    ]
    await import_rows(client, ws.headers, rows)
    one = await get(client, ws.headers, "h1@acme.io")
    assert when(one["subscribed_at"]) == datetime(2016, 6, 16, tzinfo=UTC)
    two = await get(client, ws.headers, "h2@acme.io")
    assert when(two["subscribed_at"]) == datetime(2015, 5, 15, tzinfo=UTC)


async def test_registered_field_types_apply_without_new_fields(client, ws):
    response = await client.post(
        "/api/v1/custom-fields", json={"key": "age", "type": "number"}, headers=ws.headers
    )
    assert response.status_code == 201, response.text
    await import_rows(client, ws.headers, [["email", "Age"], ["age@acme.io", "37"]])
    assert (await get(client, ws.headers, "age@acme.io"))["custom_fields"]["age"] == 37
