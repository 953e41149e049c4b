"""`/app/import`: upload a CSV, see its columns read by the import's own aliases, change one,
choose options, then the progress page until the result (the API importer's report): counts,
placeholders skipped, the list joined. A bad mapping changes nothing; another workspace cannot
read a run nor start an upload; an unknown run says so; a run whose server died says nothing
was imported. The state lives in a file beside the upload, so any server process answers."""

from __future__ import annotations

import asyncio
import json
import re
import time
from contextlib import aclosing
from pathlib import Path

from tests.dashboard.helpers import csrf_of, signed_in

CSV = (
    "E-mail Address,Vorname,Kundennummer,Notes\n"
    "ann@mailtest.io,Ann,1001,likes tea\n"
    "bob@mailtest.io,Bob,1002,\n"
    "test@example.com,Placeholder,1003,\n"
)


async def _upload(member) -> tuple[str, object]:
    """(the page's CSRF token, the mapping page answered to uploading CSV)."""
    token = csrf_of((await member.get("/app/import")).text)
    mapped = await member.post(
        "/app/import",
        data={"csrf": token},
        files={"file": ("people.csv", CSV.encode(), "text/csv")},
    )
    return token, mapped


async def _finished(browser, url: str) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        page = await browser.get(url)
        if "Imported:" in page.text or 'role="alert"' in page.text:
            return page.text
        await asyncio.sleep(0.05)
    raise AssertionError("the import did not finish")


async def test_upload_map_import_and_read_the_result(app, client, db, settings, ws, factory):
    news = await client.post("/api/v1/lists", json={"name": "News"}, headers=ws.headers)
    list_id = news.json()["list"]["id"]
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        token, mapped = await _upload(member)
        assert mapped.status_code == 200, mapped.text
        assert "Match the columns of people.csv" in mapped.text
        # The import's aliases: the address column is email; the others custom fields.
        assert re.search(r'name="col_0">.*?<option value="email" selected>', mapped.text, re.S)
        assert '<code class="wrap">ann@mailtest.io</code>' in mapped.text
        upload = re.search(r'action="/app/import/([A-Za-z0-9]+)"', mapped.text).group(1)

        refused = await member.post(
            f"/app/import/{upload}",
            data={
                "csrf": token,
                "col_0": "ignore",
                "col_1": "first_name",
                "col_2": "ignore",
                "col_3": "ignore",
            },
        )
        assert refused.status_code == 303
        assert (
            "mapping must map exactly one column to email" in (await member.get("/app/import")).text
        )

        started = await member.post(
            f"/app/import/{upload}",
            data={
                "csrf": token,
                "col_0": "email",
                "col_1": "first_name",  # changed: Vorname is not an alias the import knows
                "col_2": "custom",
                "key_2": "customer_no",
                "col_3": "ignore",
                "default_status": "subscribed",
                "list_id": list_id,
                "tags": "csv, spring",
                "source": "import",
                "skip_duplicates": "on",
            },
        )
        assert started.status_code == 303
        assert started.headers["location"] == f"/app/import/{upload}"
        result = await _finished(member, f"/app/import/{upload}")
        assert "Imported: 2 new, 0 updated, 1 skipped." in result
        assert "<code>test@example.com</code>" in result

        found = await client.get("/api/v1/contacts", params={"q": "ann@"}, headers=ws.headers)
        [ann] = found.json()["contacts"]
        assert ann["first_name"] == "Ann" and ann["custom_fields"]["customer_no"] == "1001"
        assert "notes" not in ann["custom_fields"]
        members = await client.get(f"/api/v1/lists/{list_id}/contacts", headers=ws.headers)
        assert members.json()["pagination"]["total"] == 2

        other = await factory.workspace("pro")
        stranger = await signed_in(app, db, settings, other, "eve@else.example")
        async with aclosing(stranger):
            hidden = await stranger.get(f"/app/import/{upload}")
            assert hidden.status_code == 404 and "ann@mailtest.io" not in hidden.text
        gone = await member.get("/app/import/nosuchrun")
        assert gone.status_code == 404 and "No import has this address" in gone.text
        again = await member.post(f"/app/import/{upload}", data={"csrf": token, "col_0": "email"})
        assert again.status_code == 404  # the upload is used up


async def test_another_workspace_cannot_start_an_upload(app, client, db, settings, ws, factory):
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        _token, mapped = await _upload(member)
        upload = re.search(r'action="/app/import/([A-Za-z0-9]+)"', mapped.text).group(1)
    other = await factory.workspace("pro")
    stranger = await signed_in(app, db, settings, other, "eve@else.example")
    async with aclosing(stranger):
        their_token = csrf_of((await stranger.get("/app/import")).text)
        taken = await stranger.post(
            f"/app/import/{upload}", data={"csrf": their_token, "col_0": "email"}
        )
        assert taken.status_code == 404
    listed = await client.get("/api/v1/contacts", headers=other.headers)
    assert listed.json()["pagination"]["total"] == 0


async def test_a_run_whose_server_died_says_nothing_was_imported(app, db, settings, ws):
    folder = Path(settings.data_dir) / "imports"
    folder.mkdir(parents=True, exist_ok=True)
    state = {
        "workspace_id": ws.workspace_id,
        "step": "inserting",
        "done": 10,
        "total": 100,
        "status": "running",
        "report": None,
        "error": None,
        "updated": time.time() - 3600,
    }
    (folder / "deadrun.json").write_text(json.dumps(state))
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/app/import/deadrun")
        assert page.status_code == 200
        assert "The server stopped during this import" in page.text
        assert 'hx-trigger="every 500ms"' not in page.text  # no more polling
        (folder / "liverun.json").write_text(json.dumps({**state, "updated": time.time()}))
        live = await member.get("/app/import/liverun")
        assert "10 of 100" in live.text and 'hx-trigger="every 500ms"' in live.text


async def _import_file(member, content: str) -> str:
    """Upload `content`, import it with the column read as email, and read the result page."""
    token = csrf_of((await member.get("/app/import")).text)
    mapped = await member.post(
        "/app/import", data={"csrf": token}, files={"file": ("f.csv", content.encode(), "text/csv")}
    )
    upload = re.search(r'action="/app/import/([A-Za-z0-9]+)"', mapped.text).group(1)
    started = await member.post(
        f"/app/import/{upload}",
        data={"csrf": token, "col_0": "email", "default_status": "subscribed", "source": "import"},
    )
    assert started.status_code == 303
    return await _finished(member, f"/app/import/{upload}")


async def test_a_refused_import_says_why_and_its_title_says_it_failed(
    app, client, db, settings, ws, factory
):
    """Issue 25: a refusal read only "No valid contacts found in the file" under the title
    "Importing contacts", whatever the reason."""
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        mapped = (await _upload(member))[1].text
        assert "separated by ; or |" in mapped and "comma separated" not in mapped

        placeholders = "email\ntest@example.com\nabuse@mailtest.io\nnot-an-address\n"
        failed = await _import_file(member, placeholders)
        assert "<title>Import failed · Mailroom</title>" in failed
        assert "<h1>Import failed</h1>" in failed
        assert "No valid contacts found in the file" in failed
        assert "Nothing was imported" in failed
        assert "2 placeholder addresses" in failed
        assert "<code>test@example.com</code>, <code>abuse@mailtest.io</code>" in failed
        assert "1 row without a valid email address" in failed

        done = await _import_file(member, "email\nann@mailtest.io\n")
        assert "<title>Import finished · Mailroom</title>" in done
        assert "<h1>Import finished</h1>" in done and "Imported: 1 new" in done

    free = await factory.workspace("free")
    owner = await signed_in(app, db, settings, free, "fay@free.example")
    async with aclosing(owner):
        many = "email\n" + "".join(f"c{n}@mailtest.io\n" for n in range(501))
        capped = await _import_file(owner, many)
        assert "<h1>Import failed</h1>" in capped
        assert "Contact limit reached (500 on the Free plan)" in capped
        assert "mailroom admin set-plan" in capped
    listed = await client.get("/api/v1/contacts", headers=free.headers)
    assert listed.json()["pagination"]["total"] == 0
