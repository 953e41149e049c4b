"""`/settings/people`: admins invite (by email through the sending engine from
`MAILROOM_SYSTEM_FROM`; without such a sender nothing is emailed and no link is shown, the
operator prints one), change roles (never leaving a workspace without an admin) and remove
people; a forgotten password is reset by an emailed link, with the same answer for any
address. Invitations of existing people and their limits: test_invitations.py."""

from __future__ import annotations

import json
import re
from contextlib import aclosing

import httpx
from sqlalchemy import select

from mailroom.dashboard import people_pages
from mailroom.models import AuditEntry
from tests.conftest import run_cli
from tests.dashboard.helpers import csrf_of, signed_in, use_link
from tests.sending.conftest import driver, sink  # noqa: F401


def _browser(app):
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


def _path(url: str) -> str:
    return "/app/link/" + url.split("/app/link/")[1]


def listed(html: str) -> dict[str, bool]:
    """The people page's rows: address -> shown as invited."""
    return {
        email: bool(badge)
        for email, badge in re.findall(
            r'<td data-label="Email">([^< ]+)( <span class="badge">invited</span>)?', html
        )
    }


async def test_an_invited_member_joins_and_cannot_reach_admin_pages(app, db, settings, ws, cli_env):
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin), aclosing(_browser(app)) as newcomer:
        page = await admin.get("/settings/people")
        assert page.status_code == 200 and listed(page.text) == {"ada@shop.example": False}
        invited = await admin.post(
            "/settings/people",
            data={"csrf": csrf_of(page.text), "email": "Mo@Shop.example", "role": "member"},
        )
        assert (invited.status_code, invited.headers["location"]) == (303, "/settings/people")
        page = await admin.get("/settings/people")
        # Nothing emailed, and no link shown: a link goes to the person's mailbox only.
        assert "nothing was emailed" in page.text and "MAILROOM_SYSTEM_FROM" in page.text
        assert "mailroom admin sign-in-link --email mo@shop.example" in page.text
        assert "/app/link/" not in page.text
        assert listed(page.text) == {"ada@shop.example": False, "mo@shop.example": True}

        made = run_cli("admin", "sign-in-link", "--email", "mo@shop.example", "--json", env=cli_env)
        joined = await use_link(newcomer, _path(json.loads(made.stdout)["sign_in_link"]))
        assert joined.status_code == 303
        home = await newcomer.get("/app")
        assert "member of this workspace" in home.text
        assert 'href="/settings/people"' not in home.text
        assert (await newcomer.get("/settings/people")).status_code == 403
        page = await admin.get("/settings/people")
        assert listed(page.text) == {"ada@shop.example": False, "mo@shop.example": False}

    async with db.session() as session:
        operations = (
            await session.scalars(
                select(AuditEntry.operation).where(
                    AuditEntry.workspace_id == ws.workspace_id, AuditEntry.person_id.is_not(None)
                )
            )
        ).all()
    assert "invite_person" in operations


async def test_invites_and_resets_are_emailed(app, db, settings, ws, sink, driver):  # noqa: F811
    settings.system_from = "mailroom@ops.example"
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin), aclosing(_browser(app)) as newcomer:
        page = await admin.get("/settings/people")
        sent = await admin.post(
            "/settings/people",
            data={"csrf": csrf_of(page.text), "email": "mo@shop.example", "role": "admin"},
        )
        assert sent.status_code == 303
        assert "Invitation sent to mo@shop.example." in (await admin.get("/settings/people")).text
        await driver.drain()
        mail = sink.received[-1].parsed()
        assert mail["To"] == "mo@shop.example" and "mailroom@ops.example" in mail["From"]
        assert mail["Subject"].startswith("You are invited to")
        body = mail.get_body(("plain",)).get_content()
        link = re.search(r"(http\S+/app/link/\S+)", body).group(1)
        assert (await use_link(newcomer, _path(link))).status_code == 303

        # A forgotten password: the same page for a known and an unknown address.
        form = await newcomer.get("/app/forgot")
        token = csrf_of(form.text)
        known = await newcomer.post("/app/forgot", data={"csrf": token, "email": "mo@shop.example"})
        unknown = await newcomer.post(
            "/app/forgot", data={"csrf": token, "email": "no@shop.example"}
        )
        assert known.status_code == unknown.status_code == 200
        assert "If that address has a Mailroom account" in known.text
        assert known.text == unknown.text
        await driver.drain()
        reset = sink.received[-1].parsed()
        assert reset["To"] == "mo@shop.example" and len(sink.received) == 2
        reset_link = re.search(r"(http\S+/app/link/\S+)", reset.get_body(("plain",)).get_content())
        done = await use_link(newcomer, _path(reset_link.group(1)), "another good one")
        assert done.status_code == 303


async def test_roles_change_but_a_workspace_keeps_an_admin(app, db, settings, ws):
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(admin), aclosing(member):
        page = await admin.get("/settings/people")
        ids = dict(
            re.findall(
                r'<td data-label="Email">([^<]+?)(?: <span[^>]*>[^<]*</span>)*</td>\s*<td data-label="Role">\s*<form method="post" action="/settings/people/([^/]+)/role"',
                page.text,
            )
        )
        ada, mo = ids["ada@shop.example"], ids["mo@shop.example"]
        token = csrf_of(page.text)
        alone = await admin.post(
            f"/settings/people/{ada}/role", data={"csrf": token, "role": "member"}
        )
        assert alone.status_code == 409 and "A workspace needs at least one admin." in alone.text
        promoted = await admin.post(
            f"/settings/people/{mo}/role", data={"csrf": token, "role": "admin"}
        )
        assert promoted.status_code == 303
        assert (await member.get("/settings/people")).status_code == 200  # now an admin
        await admin.post(f"/settings/people/{mo}/role", data={"csrf": token, "role": "member"})
        confirm = await admin.get(f"/settings/people/{mo}/remove")
        assert "Remove mo@shop.example from" in confirm.text
        gone = await admin.post(f"/settings/people/{mo}/remove", data={"csrf": token})
        assert gone.status_code == 303
        assert (await member.get("/app")).status_code == 303  # no workspace left: signed out


async def test_the_operator_can_make_a_new_sign_in_link(app, client, db, settings, ws, cli_env):
    first = await signed_in(app, db, settings, ws, "ada@shop.example")
    await first.aclose()
    result = run_cli("admin", "sign-in-link", "--email", "ada@shop.example", "--json", env=cli_env)
    assert result.returncode == 0, result.stderr
    link = json.loads(result.stdout)["sign_in_link"]
    assert (await use_link(client, _path(link), "a new good one")).status_code == 303
    missing = run_cli("admin", "sign-in-link", "--email", "nobody@shop.example", env=cli_env)
    assert missing.returncode != 0 and "Person not found" in missing.stderr


async def test_a_stranger_cannot_use_up_the_owners_resets(
    app,
    db,
    settings,
    ws,
    sink,  # noqa: F811
    driver,  # noqa: F811
    monkeypatch,
):
    """Reset requests are limited per address and client: a stranger's client that asked
    three times is held back, the owner's own client still gets the email. A daily cap per
    address bounds the mail all clients together can cause."""
    settings.system_from = "mailroom@ops.example"
    monkeypatch.setattr(people_pages, "RESET_MAILS_PER_ADDRESS", 4, raising=False)
    first = await signed_in(app, db, settings, ws, "mo@shop.example")
    await first.aclose()

    async def ask(host: str) -> None:
        transport = httpx.ASGITransport(app=app, client=(host, 50000))
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as one:
            token = csrf_of((await one.get("/app/forgot")).text)
            for _ in range(4 if host == "203.0.113.9" else 1):
                answer = await one.post(
                    "/app/forgot", data={"csrf": token, "email": "mo@shop.example"}
                )
                assert answer.status_code == 200 and "If that address has" in answer.text

    await ask("203.0.113.9")  # the stranger: three emails, the fourth held back
    await driver.drain()
    assert len(sink.received) == 3
    await ask("198.51.100.7")  # the owner
    await driver.drain()
    assert len(sink.received) == 4 and sink.received[-1].parsed()["To"] == "mo@shop.example"
    await ask("192.0.2.44")  # over the day's cap for the address
    await driver.drain()
    assert len(sink.received) == 4
