"""`/app/imports/platform` as a person uses it: linked from the CSV import; a Mailchimp .zip
uploaded starts a check (a dry run) that the worker runs while the job page refreshes, then the
page shows what importing would do and "Import for real" imports the same upload (read back
through the API); a listmonk pull checked, its token asked again, a wrong one failing the
real import with listmonk's reason, then retried; refusals said on the form with what was
typed kept; another workspace's import is 404; a role without the import's permissions gets
the dashboard's refusal."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from html import unescape
from typing import Any

import pytest

from mailroom.contacts.importer import MAX_BYTES
from mailroom.people import service as people
from tests.dashboard.helpers import csrf_of, form_values, signed_in
from tests.platform_imports.helpers import mailchimp_zip, start, work
from tests.platform_imports.standins import (
    LISTMONK_TOKEN,
    LISTMONK_USER,
    ListmonkStandIn,
    listmonk_install,
)

PAGE = "/app/imports/platform"
ZIP = "members_export_5f3e2a1b9c.zip"
NOT_EXPORT = 'Not a Mailchimp audience export: expected an "Email Address" column'


def text_of(html: str) -> str:
    """The page as read: tags out, entities decoded, blanks folded."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def alerts(html: str) -> list[str]:
    return [text_of(a) for a in re.findall(r'<p class="flash error" role="alert">(.*?)</p>', html)]


async def follow(browser: Any, answer: Any) -> Any:
    assert answer.status_code == 303, answer.text
    return await browser.get(answer.headers["location"])


async def check_file(browser: Any, filename: str, content: bytes, **fields: str) -> Any:
    """The form posted as a browser does (the page's CSRF token, an empty API part)."""
    token = csrf_of((await browser.get(PAGE)).text)
    data = {"csrf": token, "list_id": "", **fields}
    return await browser.post(
        PAGE, data=data, files={"file": (filename, content, "application/octet-stream")}
    )


async def contact_total(client: Any, ws: Any) -> int:
    answer = await client.get("/api/v1/contacts?limit=1", headers=ws.headers)
    total: int = answer.json()["pagination"]["total"]
    return total


async def imports_of(client: Any, ws: Any) -> list[dict[str, Any]]:
    answer = await client.get("/api/v1/imports", headers=ws.headers)
    found: list[dict[str, Any]] = answer.json()["imports"]
    return found


async def test_check_a_mailchimp_export_then_import_it_for_real(app, client, db, settings, ws):
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        csv_page = await member.get("/app/import")
        assert (
            "Moving from Mailchimp, listmonk, Brevo, Kit or Mautic? Import from another platform"
            in text_of(csv_page.text)
        )
        assert f'<a href="{PAGE}">Import from another platform</a>' in csv_page.text

        page = await member.get(PAGE)
        assert page.status_code == 200
        shown = text_of(page.text)
        assert "<title>Import from another platform · Mailroom</title>" in page.text
        assert "Mailchimp Audience › Export audience: the .zip as downloaded." in shown
        for name in ("listmonk", "Brevo", "Kit", "Mautic"):
            assert f"> {name}</label>" in page.text
        assert '<button type="submit">Check (dry run)</button>' in page.text
        assert "Recent imports from other platforms None yet." in shown

        started = await check_file(member, ZIP, mailchimp_zip(), platform="mailchimp")
        assert started.status_code == 303, started.text
        check_id = started.headers["location"].rsplit("/", 1)[1]
        assert started.headers["location"] == f"{PAGE}/{check_id}"
        queued = await member.get(f"{PAGE}/{check_id}")
        assert queued.status_code == 200
        assert "<h1>Mailchimp import (check)</h1>" in queued.text
        assert "Waiting for the worker to start it (9 contacts)…" in text_of(queued.text)
        # It asks again while the worker runs it: htmx every second, else a refresh.
        assert f'hx-get="{PAGE}/{check_id}" hx-trigger="every 1s"' in queued.text
        assert '<noscript><meta http-equiv="refresh" content="2"></noscript>' in queued.text
        listed = await imports_of(client, ws)
        assert [(j["id"], j["dry_run"], j["status"]) for j in listed] == [
            (check_id, True, "queued")
        ]

        assert await work(db, settings) == 1
        checked = await member.get(f"{PAGE}/{check_id}")
        said = text_of(checked.text)
        assert "hx-get" not in checked.text and "http-equiv" not in checked.text
        assert "Checked: nothing was written. Importing for real would do what follows." in said
        assert (
            "What importing for real would do New contacts 9 Updated 0 Unchanged 0 "
            "Suppressed 3 unsubscribed, 2 bounced, 0 complained: never mailed "
            "New fields company (text), phone (text), birthday (text), signup_date (date), "
            "loyalty_points (number), vip_member (boolean) New tags 5 New lists 0 "
            "On lists 0 confirmed, 0 waiting to confirm Skipped 2 rows Warnings"
        ) in said
        assert "row 4 of subscribed_members_export_5f3e2a1b9c.csv — no email address" in said
        assert (
            "row 1 of nonsubscribed_members_export_5f3e2a1b9c.csv shopper@store-buyer.shop "
            "never subscribed (Mailchimp non-subscribed contact)"
        ) in said
        assert "names no lists" in said  # the export's warning
        assert '<button type="submit">Import for real</button>' in checked.text
        assert await contact_total(client, ws) == 0  # a check writes nothing

        row = text_of((await member.get(PAGE)).text)
        assert (
            f"Mailchimp {ZIP} check done 9 new, 0 updated, 0 unchanged, 5 suppressed, 2 skipped"
            in row
        )

        token = csrf_of(checked.text)
        real_start = await member.post(f"{PAGE}/{check_id}/import", data={"csrf": token})
        assert real_start.status_code == 303
        real_id = real_start.headers["location"].rsplit("/", 1)[1]
        assert real_id != check_id
        real_page = await member.get(real_start.headers["location"])
        assert "<h1>Mailchimp import</h1>" in real_page.text
        assert "The import has started: the contacts are written as the worker goes." in (
            text_of(real_page.text)
        )
        # A second click (another tab) leads to the same import, not a second one.
        again = await member.post(f"{PAGE}/{check_id}/import", data={"csrf": token})
        assert again.headers["location"] == f"{PAGE}/{real_id}"
        assert len(await imports_of(client, ws)) == 2

        assert await work(db, settings) == 1
        done = text_of((await member.get(f"{PAGE}/{real_id}")).text)
        assert "Imported: 9 new, 0 updated, 0 unchanged, 5 suppressed, 2 skipped." in done
        assert "What was imported New contacts 9" in done
        assert await contact_total(client, ws) == 9
        answer = await client.get("/api/v1/contacts?q=ada@analytical-engine.co", headers=ws.headers)
        [ada] = answer.json()["contacts"]
        full = await client.get(f"/api/v1/contacts/{ada['id']}", headers=ws.headers)
        assert full.json()["contact"]["custom_fields"]["company"] == "Analytical Engines Ltd"
        jobs = {j["id"]: j for j in await imports_of(client, ws)}
        assert (jobs[real_id]["dry_run"], jobs[real_id]["filename"]) == (False, ZIP)
        assert jobs[real_id]["result"]["created"] == 9

        after = await member.get(f"{PAGE}/{check_id}")
        assert (
            f'This check was imported for real: <a href="{PAGE}/{real_id}">see that import</a>'
            in after.text
        )
        assert "Import for real</button>" not in after.text


async def test_refusals_are_said_on_the_form(app, client, db, settings, ws):
    news = await client.post("/api/v1/lists", json={"name": "News"}, headers=ws.headers)
    list_id = news.json()["list"]["id"]
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        page = await admin.get(PAGE)
        assert f'<option value="{list_id}">News</option>' in page.text
        token = csrf_of(page.text)

        # Not the platform's export: 422 with the reader's reason, what was typed kept.
        refused = await check_file(
            admin,
            "people.csv",
            b"name,phone\nAda,123\n",
            platform="mailchimp",
            list_id=list_id,
            check_domains="on",
        )
        assert refused.status_code == 422
        assert alerts(refused.text) == [NOT_EXPORT]
        kept = form_values(refused.text, "platform-import-form")
        assert (kept["list_id"], kept["check_domains"]) == (list_id, "on")
        assert 'value="mailchimp" required aria-describedby="platform-mailchimp-help" checked' in (
            refused.text
        )

        # Every row skipped: said, with why.
        empty = await check_file(
            admin,
            "subscribed_members_export_1.csv",
            b"Email Address,First Name\n,Nobody\n",
            platform="mailchimp",
        )
        assert empty.status_code == 422
        assert alerts(empty.text) == ["No contacts to import: every row of the export was skipped"]
        assert (
            '<li>Row 1 of <code class="wrap">subscribed_members_export_1.csv</code>: '
            "no email address</li>"
        ) in empty.text

        async def posted(**fields: str) -> Any:
            return await admin.post(PAGE, data={"csrf": token, **fields})

        cases = [
            ({}, 400, "Choose the platform the contacts come from."),
            (
                {"platform": "mailchimp"},
                400,
                "Choose Mailchimp's export file to upload, or give its API details.",
            ),
            ({"platform": "brevo"}, 400, "Choose Brevo's export file to upload."),
            (
                {"platform": "kit", "mailchimp_key": "abc-us21"},
                400,
                "Kit has no API pull here: upload its export file instead.",
            ),
            (
                {"platform": "mailchimp", "mailchimp_audience": "5f3e2a1b9c"},
                400,
                "Give the Mailchimp API key (Profile › Extras › API keys) to pull an audience.",
            ),
            (
                {"platform": "mailchimp", "mailchimp_key": "abc"},
                400,
                "api.key must end with its data centre, like -us21",
            ),
            (
                {"platform": "listmonk", "listmonk_url": "https://lists.example.com"},
                400,
                "A listmonk pull needs listmonk's address, an API user and that user's token.",
            ),
            (
                {
                    "platform": "listmonk",
                    "listmonk_url": "https://lists.example.com",
                    "listmonk_username": "api",
                    "listmonk_token": "t",
                    "listmonk_list_ids": "3, x",
                },
                400,
                "listmonk list ids are whole numbers separated by commas, like 3, 7.",
            ),
            (
                {
                    "platform": "listmonk",
                    "listmonk_url": "http://10.0.0.7:9000",
                    "listmonk_username": "api",
                    "listmonk_token": "t",
                },
                400,
                "api.url is not allowed: 10.0.0.7 is not a public address",
            ),
        ]
        for fields, status, message in cases:
            answer = await posted(**fields)
            assert (answer.status_code, alerts(answer.text)) == (status, [message]), fields
        kept = form_values((await posted(**cases[-1][0])).text, "platform-import-form")
        assert (kept["listmonk_url"], kept["listmonk_username"]) == ("http://10.0.0.7:9000", "api")
        assert kept["listmonk_token"] == ""  # a secret is never written into the page

        both = await check_file(
            admin, ZIP, mailchimp_zip(), platform="mailchimp", mailchimp_key="abc-us21"
        )
        assert (both.status_code, alerts(both.text)) == (
            400,
            ["Upload the export file or give the API details, not both."],
        )
        gone_list = await check_file(admin, ZIP, mailchimp_zip(), platform="mailchimp", list_id="x")
        assert (gone_list.status_code, alerts(gone_list.text)) == (404, ["List not found"])

        # Over 5 MB: the file (413 on the form), or a body past the cap (said after a redirect).
        big = await check_file(admin, "big.csv", b"x" * (MAX_BYTES + 1), platform="listmonk")
        assert (big.status_code, alerts(big.text)) == (
            413,
            ["File too large: an export file can be up to 5 MB."],
        )
        huge = await check_file(admin, "huge.csv", b"x" * (MAX_BYTES + 100_000), platform="kit")
        assert huge.status_code == 303
        assert alerts((await follow(admin, huge)).text) == [
            "File too large: an export file can be up to 5 MB."
        ]

        forged = await admin.post(
            PAGE,
            data={"csrf": "forged", "platform": "mailchimp"},
            files={"file": (ZIP, mailchimp_zip(), "application/zip")},
        )
        assert forged.status_code == 403
        assert await imports_of(client, ws) == []


@pytest.fixture
async def listmonk(settings: Any) -> AsyncIterator[ListmonkStandIn]:
    settings.webhook_allow_networks = ["127.0.0.0/8"]  # the stand-in listens on 127.0.0.1
    lists, subscribers = listmonk_install()
    async with ListmonkStandIn(LISTMONK_USER, LISTMONK_TOKEN, lists, subscribers) as served:
        yield served


async def test_a_listmonk_pull_asks_for_its_token_again(app, client, db, settings, ws, listmonk):
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        token = csrf_of((await admin.get(PAGE)).text)
        started = await admin.post(
            PAGE,
            data={
                "csrf": token,
                "platform": "listmonk",
                "listmonk_url": listmonk.url,
                "listmonk_username": LISTMONK_USER,
                "listmonk_token": LISTMONK_TOKEN,
                "listmonk_list_ids": "3",
            },
        )
        assert started.status_code == 303, started.text
        check_id = started.headers["location"].rsplit("/", 1)[1]
        assert await work(db, settings) == 1
        checked = await admin.get(f"{PAGE}/{check_id}")
        said = text_of(checked.text)
        assert (
            f'<dt>From</dt><dd>listmonk\'s API at <code class="wrap">{listmonk.url}</code>, '
            "lists 3</dd>"
        ) in unescape(checked.text)
        assert "What importing for real would do New contacts 120" in said
        assert "New lists 1" in said
        assert LISTMONK_TOKEN not in checked.text
        assert '<label for="platform-secret">listmonk API token</label>' in checked.text

        # Without the token: asked for, nothing started.
        bare = await admin.post(f"{PAGE}/{check_id}/import", data={"csrf": token})
        assert (bare.status_code, alerts(bare.text)) == (
            400,
            ["Give the listmonk API token again: it is not kept after the check."],
        )
        # A wrong token: the real import fails with listmonk's reason, and may be retried.
        wrong = await admin.post(
            f"{PAGE}/{check_id}/import", data={"csrf": token, "secret": "not-the-token"}
        )
        failed_id = wrong.headers["location"].rsplit("/", 1)[1]
        assert await work(db, settings) == 1
        failed = await admin.get(f"{PAGE}/{failed_id}")
        assert alerts(failed.text) == ["listmonk: invalid API credentials"]
        retry_page = await admin.get(f"{PAGE}/{check_id}")
        assert alerts(retry_page.text) == [
            "Its real import failed: listmonk: invalid API credentials"
        ]
        assert '<button type="submit">Import for real again</button>' in retry_page.text
        right = await admin.post(
            f"{PAGE}/{check_id}/import", data={"csrf": token, "secret": LISTMONK_TOKEN}
        )
        real_id = right.headers["location"].rsplit("/", 1)[1]
        assert real_id not in (check_id, failed_id)
        assert await work(db, settings) == 1
        assert "Imported: 120 new" in text_of((await admin.get(f"{PAGE}/{real_id}")).text)
        assert await contact_total(client, ws) == 120
        lists = (await client.get("/api/v1/lists", headers=ws.headers)).json()["lists"]
        assert [row["name"] for row in lists] == ["Beta testers"]


async def test_another_workspaces_import_is_404(app, client, db, settings, ws, factory):
    theirs_ws = await factory.workspace()
    theirs = await start(client, theirs_ws, "mailchimp", ZIP, mailchimp_zip(), dry_run="true")
    their_id = theirs.json()["import"]["id"]
    await work(db, settings)
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        token = csrf_of((await admin.get(PAGE)).text)
        for path in (f"{PAGE}/{their_id}", f"{PAGE}/0190f0e4-no-such-import"):
            missing = await admin.get(path)
            assert missing.status_code == 404
            assert "That did not work Import not found" in text_of(missing.text)
        real = await admin.post(f"{PAGE}/{their_id}/import", data={"csrf": token})
        assert real.status_code == 404
        assert ZIP not in (await admin.get(PAGE)).text
    assert len(await imports_of(client, theirs_ws)) == 1
    assert await contact_total(client, theirs_ws) == 0


async def test_a_role_without_the_imports_permissions_is_refused(
    app, client, db, settings, ws, monkeypatch
):
    # No role lacks contacts, lists or tags writes today: take tags:write from members.
    monkeypatch.setattr(people, "ADMIN_ONLY", people.ADMIN_ONLY | {"tags:write"})
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get(PAGE)
        assert page.status_code == 403
        assert "That did not work Forbidden: tags:write permission required" in text_of(page.text)
        token = csrf_of((await member.get("/app/import")).text)
        posted = await member.post(
            PAGE,
            data={"csrf": token, "platform": "mailchimp"},
            files={"file": (ZIP, mailchimp_zip(), "application/zip")},
        )
        assert posted.status_code == 403
        assert "Forbidden: tags:write permission required" in text_of(posted.text)
    assert await imports_of(client, ws) == []
