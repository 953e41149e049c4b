"""POST /contacts/import and `mailroom import`: files as people export them, rules 1-12."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from tests.contacts.helpers import create, events_of
from tests.dns_server import DnsServer


async def _import(client, ws, content: str | bytes, **form):
    data = content.encode() if isinstance(content, str) else content
    return await client.post(
        "/api/v1/contacts/import",
        files={"file": ("contacts.csv", data, "text/csv")},
        data=form,
        headers=ws.headers,
    )


async def _contact(client, ws, email):
    listing = await client.get("/api/v1/contacts", params={"q": email}, headers=ws.headers)
    matches = [c for c in listing.json()["contacts"] if c["email"] == email]
    if not matches:
        archived = await client.get(
            "/api/v1/contacts", params={"q": email, "status": "archived"}, headers=ws.headers
        )
        matches = [c for c in archived.json()["contacts"] if c["email"] == email]
    return matches[0] if matches else None


MAILCHIMP = (
    '"Email Address","First Name","Last Name","MEMBER_RATING","OPTIN_TIME","Status"\r\n'
    '"Ann@Acme.io","Ann","Lee","4","2023-01-15 10:30:00","subscribed"\r\n'
    '"bob@acme.io","Bob","","2","","cleaned"\r\n'
)


async def test_mailchimp_export(client, ws, db):
    response = await _import(client, ws, MAILCHIMP)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["imported"] == 2 and body["invalid"] == 0
    assert body["custom_field_keys"] == ["member_rating"]
    ann = await _contact(client, ws, "ann@acme.io")
    assert ann["first_name"] == "Ann" and ann["status"] == "subscribed"
    assert ann["custom_fields"] == {"member_rating": "4"}
    assert ann["subscribed_at"].startswith("2023-01-15T10:30:00")
    assert ann["source"] == "import"
    bob = await _contact(client, ws, "bob@acme.io")
    assert bob["status"] == "bounced"
    check = await client.get(
        "/api/v1/suppressions", params={"email": "bob@acme.io"}, headers=ws.headers
    )
    assert check.json()["reason"] == "bounced"
    created = await events_of(db, ws.workspace_id, "contact.created")
    assert sorted(e.data["contact"]["email"] for e in created) == ["ann@acme.io", "bob@acme.io"]


@pytest.mark.parametrize(
    "content",
    [
        "\ufeffemail;first_name;city\nann@acme.io;Ann;Paris\nbob@acme.io;Bob;Lyon\n",
        "email\tfirst_name\tcity\nann@acme.io\tAnn\tParis\nbob@acme.io\tBob\tLyon\n",
        'email,first_name,city\nann@acme.io,"Ann","Paris, France"\nbob@acme.io,"Bob","Line one\nline two"\n',
    ],
    ids=["semicolon-bom", "tab", "quoted"],
)
async def test_delimiters_bom_and_quoting(client, ws, content):
    response = await _import(client, ws, content)
    assert response.status_code == 200, response.text
    assert response.json()["imported"] == 2
    ann = await _contact(client, ws, "ann@acme.io")
    assert ann["first_name"] == "Ann"
    assert ann["custom_fields"]["city"].startswith("Paris")
    bob = await _contact(client, ws, "bob@acme.io")
    assert bob["custom_fields"]["city"] in {"Lyon", "Line one\nline two"}


async def test_over_5_mb_is_413(client, ws):
    header = b"email,note\n"
    content = header + b"x" * (5 * 1024 * 1024 + 1 - len(header))
    response = await _import(client, ws, content)
    assert response.status_code == 413
    assert "5 MB" in response.json()["error"]


@pytest.mark.parametrize("where", ["header", "late row"])
async def test_a_file_that_is_not_utf8_is_400_and_nothing_is_imported(client, ws, where):
    rows = [f"person{i}@acme.io,P{i}" for i in range(3000)]
    header = "email,first_name" if where == "late row" else "email,pr\xe9nom"
    content = "\n".join([header, *rows]).encode()
    if where == "late row":
        content += "\nlatin@acme.io,Andr\xe9\n".encode("latin-1")
    else:
        content = content.replace("pr\xe9nom".encode(), "pr\xe9nom".encode("latin-1"))
    response = await _import(client, ws, content)
    assert response.status_code == 400
    assert response.json() == {"error": "The file must be UTF-8 encoded CSV"}
    listing = await client.get("/api/v1/contacts", headers=ws.headers)
    assert listing.json()["pagination"]["total"] == 0


@pytest.mark.parametrize("content", ["", "email,first_name\n", "\n\n"])
async def test_empty_file_is_422_with_counts(client, ws, content):
    response = await _import(client, ws, content)
    assert response.status_code == 422
    body = response.json()
    assert body["error"].startswith("No valid contacts found")
    assert body["invalid"] == 0 and body["skipped_unconfirmed"] == 0


async def test_only_bad_rows_is_422(client, ws):
    response = await _import(client, ws, "email,status\nnot-an-email,\nann@acme.io,pending\n")
    assert response.status_code == 422
    assert response.json()["invalid"] == 1
    assert response.json()["skipped_unconfirmed"] == 1


async def test_existing_contacts_with_and_without_skip_duplicates(client, ws):
    await create(
        client, ws.headers, "ann@acme.io", first_name="Ann", custom_fields={"a": "old", "keep": "k"}
    )
    await create(client, ws.headers, "bob@acme.io", first_name="Bob")
    content = "email,first_name,status,a,tags\nann@acme.io,Annie,unsubscribed,new,vip\nbob@acme.io,Robert,,,\n"
    response = await _import(client, ws, content)
    body = response.json()
    assert body["updated"] == 2 and body["imported"] == 0
    ann = await _contact(client, ws, "ann@acme.io")
    assert ann["first_name"] == "Ann"  # kept
    assert ann["status"] == "unsubscribed"  # escalated
    assert ann["custom_fields"] == {"a": "new", "keep": "k"}  # merged, file wins
    assert ann["source"] == "api"
    # Never the reverse: a file saying subscribed does not bring ann back.
    await _import(client, ws, "email,status\nann@acme.io,subscribed\n")
    assert (await _contact(client, ws, "ann@acme.io"))["status"] == "unsubscribed"
    refreshed = await _import(
        client, ws, content.replace("Annie", "Anna"), skip_duplicates="false", source="crm"
    )
    assert refreshed.status_code == 200
    assert (await _contact(client, ws, "bob@acme.io"))["first_name"] == "Robert"
    assert (await _contact(client, ws, "bob@acme.io"))["source"] == "crm"


async def test_suppressed_addresses_import_as_unsubscribed(client, ws):
    await client.post("/api/v1/suppressions", json={"entries": ["ann@acme.io"]}, headers=ws.headers)
    response = await _import(client, ws, "email\nann@acme.io\nbob@acme.io\n")
    body = response.json()
    assert body["imported"] == 2 and body["suppressed"] == 1
    assert (await _contact(client, ws, "ann@acme.io"))["status"] == "unsubscribed"
    assert (await _contact(client, ws, "bob@acme.io"))["status"] == "subscribed"


async def test_repeated_addresses_merge(client, ws):
    content = (
        "email,first_name,tags,plan,status\n"
        "ann@acme.io,Ann,a,free,\n"
        "ANN@acme.io,,b,pro,unsubscribed\n"
        "ann@acme.io,,a|c,,\n"
    )
    body = (await _import(client, ws, content)).json()
    assert body["imported"] == 1 and body["skipped_duplicates"] == 2
    ann = await _contact(client, ws, "ann@acme.io")
    assert ann["status"] == "unsubscribed" and ann["first_name"] == "Ann"
    assert ann["custom_fields"] == {"plan": "pro"}
    tags = (await client.get(f"/api/v1/contacts/{ann['id']}/tags", headers=ws.headers)).json()[
        "tags"
    ]
    assert sorted(t["name"] for t in tags) == ["a", "b", "c"]


async def test_contact_cap_counts_only_subscribed_rows(client, factory, db):
    from tests.contacts.test_delete_cap import _fill

    free = await factory.workspace("free")
    await _fill(db, free.workspace_id, 499)
    too_many = await _import(client, free, "email\nx1@acme.io\nx2@acme.io\n")
    assert too_many.status_code == 403
    assert too_many.json()["error"] == (
        "Contact limit reached (500 on the Free plan). Upgrade to add more."
    )
    assert await _contact(client, free, "x1@acme.io") is None
    fits = await _import(client, free, "email,status\nx1@acme.io,\nx2@acme.io,unsubscribed\n")
    assert fits.status_code == 200 and fits.json()["imported"] == 2


async def test_list_membership(client, ws, factory):
    single = (await client.post("/api/v1/lists", json={"name": "s"}, headers=ws.headers)).json()[
        "list"
    ]
    double = (
        await client.post(
            "/api/v1/lists", json={"name": "d", "double_opt_in": True}, headers=ws.headers
        )
    ).json()["list"]
    content = "email,status\nann@acme.io,\nbob@acme.io,unsubscribed\n"
    body = (await _import(client, ws, content, list_id=single["id"])).json()
    assert body["list_added"] == 1 and body["list_pending_confirmation"] == 0
    body = (await _import(client, ws, content, list_id=double["id"])).json()
    assert body["list_added"] == 0 and body["list_pending_confirmation"] == 1
    missing = await _import(client, ws, content, list_id="nope")
    assert missing.status_code == 404
    assert missing.json() == {"error": "List not found"}


async def test_check_domains(client, ws, settings):
    zones = {
        "good.io": {"MX": ["10 mx.good.io"]},
        "aonly.io": {"A": ["203.0.113.5"]},
        "nomail.io": {"MX": ["0 ."]},
        "slow.io": {"slow": True},
    }
    content = (
        "email\na@good.io\nb@aonly.io\nc@nomail.io\nd@missing.io\ne@missing.io\n"
        "f@slow.io\ng@gmail.com\n"
    )
    async with DnsServer(zones) as dns:
        settings.dns_nameservers = [dns.address]
        response = await _import(client, ws, content, check_domains="true")
        asked = {name for name, _ in dns.protocol.queries}
    body = response.json()
    assert response.status_code == 200, response.text
    assert body["imported"] == 4  # good, aonly, slow (kept on timeout), gmail
    assert body["skipped_undeliverable"] == 3
    by_domain = {d["domain"]: d for d in body["undeliverable_domains"]}
    assert by_domain["missing.io"]["rows"] == 2
    assert by_domain["nomail.io"]["rows"] == 1
    assert "gmail.com" not in asked


async def test_import_failure_leaves_nothing(client, ws, monkeypatch):
    from mailroom.contacts import import_writes

    async def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(import_writes, "attach_tags", broken)
    response = await _import(client, ws, "email,tags\nann@acme.io,vip\n")
    assert response.status_code == 500
    assert response.json()["error"] == "Import failed; nothing was imported"
    assert "details" in response.json()
    listing = (await client.get("/api/v1/contacts", headers=ws.headers)).json()
    assert listing["pagination"]["total"] == 0
    tags = (await client.get("/api/v1/tags", headers=ws.headers)).json()
    assert tags["tags"] == []


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"default_status": "pending"}, "default_status must be subscribed or unsubscribed"),
        ({"skip_duplicates": "maybe"}, "skip_duplicates must be true or false"),
        ({"mapping": "{"}, "mapping must be a JSON array"),
        (
            {"mapping": '[{"column": 1, "target": "first_name"}]'},
            "mapping must map exactly one column to email",
        ),
        ({"new_fields": '{"key": "x"}'}, "new_fields must be a JSON array"),
    ],
)
async def test_bad_options_are_400(client, ws, form, message):
    response = await _import(client, ws, "email,name\nann@acme.io,Ann\n", **form)
    assert response.status_code == 400
    assert response.json() == {"error": message}


async def test_not_multipart_is_400(client, ws):
    response = await client.post("/api/v1/contacts/import", json={"file": "x"}, headers=ws.headers)
    assert response.status_code == 400


async def test_cli_import(client, ws, cli_env, tmp_path):
    path = tmp_path / "list.csv"
    path.write_text("email,first_name\nann@acme.io,Ann\nbad\n")
    result = run_cli(
        "import", str(path), "--workspace", ws.workspace_id, "--tags", "cli", "--json", env=cli_env
    )
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["imported"] == 1 and body["invalid"] == 1
    ann = await _contact(client, ws, "ann@acme.io")
    assert ann["source"] == "import"
    missing = run_cli("import", str(path), "--workspace", "nope", env=cli_env)
    assert missing.returncode == 1 and "Workspace not found" in missing.stderr
