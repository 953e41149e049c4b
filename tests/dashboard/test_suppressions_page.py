"""`/settings/suppressions`: totals by reason, check one address, filter by reason and
domain, import pasted addresses or a CSV (the API's importer rules), export the filtered list,
and lift a deleted address (admins only: a member gets the 403 page, a bounce is refused)."""

from __future__ import annotations

import csv
import io
from contextlib import aclosing

from tests.dashboard.helpers import csrf_of, signed_in


async def _suppressed(client, ws, reason: str, *emails: str) -> None:
    done = await client.post(
        "/api/v1/suppressions", json={"reason": reason, "entries": list(emails)}, headers=ws.headers
    )
    assert done.status_code == 200, done.text


async def _deleted(client, ws, email: str) -> None:
    made = await client.post("/api/v1/contacts", json={"email": email}, headers=ws.headers)
    assert made.status_code == 201, made.text
    gone = await client.delete(
        f"/api/v1/contacts/{made.json()['contact']['id']}", headers=ws.headers
    )
    assert gone.status_code == 200, gone.text


async def _check(client, ws, email: str) -> dict:
    found = await client.get("/api/v1/suppressions", params={"email": email}, headers=ws.headers)
    return found.json()


async def test_totals_check_filter_and_lift(app, client, db, settings, ws):
    await _suppressed(client, ws, "bounced", "hard@bounce.example", "gone@bounce.example")
    await _suppressed(client, ws, "complained", "angry@spam.example")
    await _deleted(client, ws, "left@shop.example")
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        page = await admin.get("/settings/suppressions")
        assert page.status_code == 200
        assert "<strong>4</strong> addresses on the list" in page.text
        assert "bounced 2" in page.text and "complained 1" in page.text and "deleted 1" in page.text

        filtered = await admin.get("/settings/suppressions?reason=bounced&domain=bounce")
        assert "2 shown by these filters" in filtered.text and "spam.example" not in filtered.text

        bounced = await admin.get("/settings/suppressions?email=HARD@bounce.example")
        assert "<strong>hard@bounce.example</strong> is suppressed" in bounced.text
        assert "Bounces are permanent" in bounced.text
        assert "Lift the suppression of hard@bounce.example" not in bounced.text
        clean = await admin.get("/settings/suppressions?email=new@shop.example")
        assert "<strong>new@shop.example</strong> is not on the suppression list." in clean.text
        bad = await admin.get("/settings/suppressions?email=nope")
        assert "email must be a valid email address" in bad.text

        deleted = await admin.get("/settings/suppressions?email=left@shop.example")
        assert "Lift the suppression of left@shop.example" in deleted.text
        email_hash = await _check(client, ws, "left@shop.example")
        assert email_hash["suppressed"] is True and email_hash["liftable"] is True
        token = csrf_of(deleted.text)
        hashes = {
            row["reason"]: row["email_hash"]
            for row in (await client.get("/api/v1/suppressions/list", headers=ws.headers)).json()[
                "suppressions"
            ]
        }
        refused = await admin.post(
            "/settings/suppressions/lift", data={"csrf": token, "email_hash": hashes["bounced"]}
        )
        assert refused.status_code == 409 and "bounces are permanent" in refused.text
        lifted = await admin.post(
            "/settings/suppressions/lift", data={"csrf": token, "email_hash": hashes["deleted"]}
        )
        assert lifted.status_code == 303
        assert (await _check(client, ws, "left@shop.example"))["suppressed"] is False
        after = await admin.get("/settings/suppressions")
        assert "Lifted: the address can be added and mailed again." in after.text
        assert "<strong>3</strong> addresses" in after.text
        assert "lift_suppression" in (await admin.get("/settings/audit-log")).text


async def test_members_see_and_import_but_cannot_lift(app, client, db, settings, ws):
    await _deleted(client, ws, "left@shop.example")
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/settings/suppressions?email=left@shop.example")
        assert page.status_code == 200 and "ask a workspace admin" in page.text
        assert "Lift the suppression" not in page.text
        hashes = (await client.get("/api/v1/suppressions/list", headers=ws.headers)).json()
        refused = await member.post(
            "/settings/suppressions/lift",
            data={
                "csrf": csrf_of(page.text),
                "email_hash": hashes["suppressions"][0]["email_hash"],
            },
        )
        assert refused.status_code == 403 and "Admins only" in refused.text
        assert (await _check(client, ws, "left@shop.example"))["suppressed"] is True

        imported = await member.post(
            "/settings/suppressions/import",
            data={
                "csrf": csrf_of(page.text),
                "addresses": "one@list.example\nTWO@list.example\nnot-an-address\n",
                "reason": "complained",
            },
            files={"file": ("", b"", "application/octet-stream")},
        )
        assert imported.status_code == 303
        shown = await member.get("/settings/suppressions")
        assert "Imported 3 addresses: 2 added" in shown.text and "1 not valid" in shown.text
        assert (await _check(client, ws, "two@list.example"))["reason"] == "complained"


async def test_import_a_csv_and_export_the_filtered_list(app, client, db, settings, ws):
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        token = csrf_of((await admin.get("/settings/suppressions")).text)
        data = b"email,reason\nbob@csv.example,bounced\ncarol@csv.example,\n"
        imported = await admin.post(
            "/settings/suppressions/import",
            data={"csrf": token, "addresses": "", "reason": "unsubscribed"},
            files={"file": ("list.csv", data, "text/csv")},
        )
        assert imported.status_code == 303
        assert (await _check(client, ws, "bob@csv.example"))["reason"] == "bounced"
        assert (await _check(client, ws, "carol@csv.example"))["reason"] == "unsubscribed"

        nothing = await admin.post(
            "/settings/suppressions/import", data={"csrf": token, "addresses": " "}
        )
        assert nothing.status_code == 303
        assert "Paste at least one address" in (await admin.get("/settings/suppressions")).text

        exported = await admin.get("/settings/suppressions/export?reason=bounced")
        assert exported.status_code == 200
        assert exported.headers["content-type"].startswith("text/csv")
        rows = list(csv.DictReader(io.StringIO(exported.text)))
        assert [r["reason"] for r in rows] == ["bounced"] and rows[0]["domain"] == "csv.example"
        forged = await admin.post(
            "/settings/suppressions/import", data={"addresses": "eve@csv.example"}
        )
        assert forged.status_code == 403
        assert (await _check(client, ws, "eve@csv.example"))["suppressed"] is False


async def test_the_list_pages_by_fifty_and_keeps_its_filters(app, client, db, settings, ws):
    await _suppressed(client, ws, "bounced", *[f"p{n:02d}@pages.example" for n in range(60)])
    await _suppressed(client, ws, "complained", "other@else.example")
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        first = await admin.get("/settings/suppressions?reason=bounced&domain=pages")
        assert "Page 1 of 2" in first.text and "60 shown by these filters" in first.text
        assert 'href="?reason=bounced&amp;domain=pages&amp;page=2">Older</a>' in first.text
        second = await admin.get("/settings/suppressions?reason=bounced&domain=pages&page=2")
        assert "Page 2 of 2" in second.text and ">Older</a>" not in second.text
        assert second.text.count("@pages.example</code>") == 10
        assert "else.example" not in second.text
