"""Inviting people who exist already: a person is one sign-in identity across accounts, so an
invitation of an existing address (of this account or another) adds the role and emails a
notice, never a sign-in link; the admin's answer is the same whatever the address; a member
invited again keeps the last-admin rule; invitations are limited per person and per
workspace and count toward the month's allowance; values in the mail are never run."""

from __future__ import annotations

import re
from contextlib import aclosing

import httpx
from sqlalchemy import select

from mailroom.core.clock import utcnow
from mailroom.core.plans import get_plan
from mailroom.dashboard import people_pages
from mailroom.models import Person, WorkspaceMember
from mailroom.sending import limits
from tests.dashboard.helpers import PASSWORD, csrf_of, signed_in
from tests.dashboard.test_people import listed
from tests.sending.conftest import driver, sink  # noqa: F401

SYSTEM_FROM = "mailroom@ops.example"


def _browser(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


async def _invite(admin: httpx.AsyncClient, email: str, role: str = "member") -> httpx.Response:
    page = await admin.get("/settings/people")
    return await admin.post(
        "/settings/people", data={"csrf": csrf_of(page.text), "email": email, "role": role}
    )


async def _person(db, email: str) -> Person:
    async with db.session() as session:
        return (await session.scalars(select(Person).where(Person.email == email))).one()


async def _role(db, workspace_id: str, email: str) -> str | None:
    async with db.session() as session:
        return await session.scalar(
            select(WorkspaceMember.role)
            .join(Person, Person.id == WorkspaceMember.person_id)
            .where(WorkspaceMember.workspace_id == workspace_id, Person.email == email)
        )


def _flashes(html: str) -> list[str]:
    return re.findall(r'<p class="flash ok"[^>]*>([^<]*)</p>', html)


async def test_inviting_someone_of_another_account_never_hands_them_over(
    app,
    db,
    settings,
    ws,
    factory,
    sink,  # noqa: F811
    driver,  # noqa: F811
):
    """Bob (another account, a password, two-step sign-in) is invited by Ada: he gets the
    role and a notice without a link; Ada sees exactly what a new address gives her; Bob's
    password and second factor are untouched, and he works in Ada's workspace under its
    account and plan."""
    settings.system_from = SYSTEM_FROM
    theirs = await factory.workspace("free", name="Bob's shop")
    bob = await signed_in(app, db, settings, theirs, "bob@other.example")
    before = await _person(db, "bob@other.example")
    ada = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(bob), aclosing(ada):
        existing = await _invite(ada, "Bob@Other.example", "admin")
        after_existing = await ada.get("/settings/people")
        new = await _invite(ada, "new@else.example", "admin")
        after_new = await ada.get("/settings/people")
        assert existing.status_code == new.status_code == 303
        assert existing.headers["location"] == new.headers["location"] == "/settings/people"
        assert _flashes(after_existing.text) == ["Invitation sent to bob@other.example."]
        assert _flashes(after_new.text) == ["Invitation sent to new@else.example."]
        shown = listed(after_new.text)
        assert shown["bob@other.example"] is True and shown["new@else.example"] is True
        for page in (after_existing, after_new):
            assert "/app/link/" not in page.text

        await driver.drain()
        mails = {m.parsed()["To"]: m.parsed() for m in sink.received}
        notice = mails["bob@other.example"]
        body = notice.get_body(("plain",)).get_content()
        assert notice["Subject"].startswith("You now have access to")
        assert "/app/link/" not in body and "/app/link/" not in notice.as_string()
        assert "http://testserver/app/sign-in" in body
        invitation = mails["new@else.example"].get_body(("plain",)).get_content()
        assert re.search(r"http\S+/app/link/\S+", invitation)  # a new person only

        after = await _person(db, "bob@other.example")
        assert (after.password_hash, after.link_nonce) == (before.password_hash, before.link_nonce)
        assert await _role(db, ws.workspace_id, "bob@other.example") == "admin"
        assert await _role(db, theirs.workspace_id, "bob@other.example") == "admin"

        # Bob, signed in as before, now also works in Ada's workspace, on its plan.
        home = await bob.get("/app")
        assert ws.workspace_id in home.text and theirs.workspace_id in home.text
        moved = await bob.post(
            "/app/workspace", data={"csrf": csrf_of(home.text), "workspace_id": ws.workspace_id}
        )
        assert moved.status_code == 303
        account = await bob.get("/settings/account")
        assert account.status_code == 200 and "<h2>Pro plan</h2>" in account.text
        people = await ada.get("/settings/people")
        assert listed(people.text)["bob@other.example"] is False  # he has opened it now


async def test_an_existing_person_of_the_account_gets_no_link_shown(app, db, settings, ws, factory):
    """Without a sender for the installation's mail, the admin used to be shown a link that
    signed in as the person invited; now nothing of the kind is shown, for anyone."""
    second = await factory.workspace(account_id=ws.account_id, name="Second shop")
    mo = await signed_in(app, db, settings, second, "mo@shop.example")
    await mo.aclose()
    before = await _person(db, "mo@shop.example")
    ada = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(ada), aclosing(_browser(app)) as own:
        invited = await _invite(ada, "mo@shop.example", "admin")
        assert invited.status_code == 303
        page = await ada.get("/settings/people")
        assert "/app/link/" not in invited.text + page.text
        assert "nothing was emailed" in page.text
        assert listed(page.text)["mo@shop.example"] is True
        after = await _person(db, "mo@shop.example")
        assert (after.password_hash, after.link_nonce) == (before.password_hash, before.link_nonce)
        # Mo's own password still signs him in.
        token = csrf_of((await own.get("/app/sign-in")).text)
        right = {"csrf": token, "email": "mo@shop.example", "password": PASSWORD}
        assert (await own.post("/app/sign-in", data=right)).status_code == 303


async def test_no_account_can_claim_an_address(app, db, settings, ws, factory):
    """An address invited by one account can be invited by any other (no 409 that says it
    is taken, no answer that differs)."""
    theirs = await factory.workspace(name="Their shop")
    ada = await signed_in(app, db, settings, ws, "ada@shop.example")
    eve = await signed_in(app, db, settings, theirs, "eve@their.example")
    async with aclosing(ada), aclosing(eve):
        assert (await _invite(eve, "carol@anywhere.example")).status_code == 303
        second = await _invite(ada, "carol@anywhere.example")
        assert second.status_code == 303
        page = await ada.get("/settings/people")
        assert "carol@anywhere.example" in listed(page.text)
        assert "cannot be invited" not in page.text
        assert await _role(db, ws.workspace_id, "carol@anywhere.example") == "member"
        assert await _role(db, theirs.workspace_id, "carol@anywhere.example") == "member"
        # Removing her here leaves her place in the other account's workspace.
        person = await _person(db, "carol@anywhere.example")
        gone = await ada.post(
            f"/settings/people/{person.id}/remove", data={"csrf": csrf_of(page.text)}
        )
        assert gone.status_code == 303
        assert await _role(db, ws.workspace_id, "carol@anywhere.example") is None
        assert await _role(db, theirs.workspace_id, "carol@anywhere.example") == "member"


async def test_inviting_a_member_again_keeps_the_last_admin(app, db, settings, ws):
    ada = await signed_in(app, db, settings, ws, "ada@shop.example")
    mo = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(ada), aclosing(mo):
        alone = await _invite(ada, "ada@shop.example", "member")
        assert alone.status_code == 409 and "A workspace needs at least one admin." in alone.text
        assert await _role(db, ws.workspace_id, "ada@shop.example") == "admin"
        assert (await ada.get("/settings/people")).status_code == 200  # still an admin

        promoted = await _invite(ada, "mo@shop.example", "admin")
        assert promoted.status_code == 303
        page = await ada.get("/settings/people")
        assert _flashes(page.text) == ["mo@shop.example is now an admin here."]
        assert await _role(db, ws.workspace_id, "mo@shop.example") == "admin"
        # With two admins, Ada may step down by the same form.
        assert (await _invite(ada, "ada@shop.example", "member")).status_code == 303
        assert await _role(db, ws.workspace_id, "ada@shop.example") == "member"


async def test_invitations_are_limited_per_person_and_per_workspace(
    app, db, settings, ws, monkeypatch
):
    monkeypatch.setattr(people_pages, "INVITES_PER_PERSON", 3, raising=False)
    monkeypatch.setattr(people_pages, "INVITES_PER_WORKSPACE", 5, raising=False)
    ada = await signed_in(app, db, settings, ws, "ada@shop.example")
    mo = await signed_in(app, db, settings, ws, "mo@shop.example")
    async with aclosing(ada), aclosing(mo):
        for n in range(3):
            assert (await _invite(ada, f"a{n}@else.example")).status_code == 303
        refused = await _invite(ada, "a3@else.example")
        assert refused.status_code == 429 and "Too many invitations" in refused.text
        assert int(refused.headers["retry-after"]) > 0
        assert await _role(db, ws.workspace_id, "a3@else.example") is None
        # Another admin of the workspace has their own count, up to the workspace's.
        for n in range(2):
            assert (await _invite(mo, f"m{n}@else.example")).status_code == 303
        refused = await _invite(mo, "m2@else.example")
        assert refused.status_code == 429 and "Too many invitations" in refused.text
        assert await _role(db, ws.workspace_id, "m2@else.example") is None


async def test_invitations_count_toward_the_months_allowance(
    app,
    db,
    settings,
    ws,
    sink,  # noqa: F811
    driver,  # noqa: F811
):
    settings.system_from = SYSTEM_FROM
    ada = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(ada):
        assert (await _invite(ada, "mo@else.example")).status_code == 303
        async with db.session() as session:
            assert await limits.used_this_month(session, ws.account_id, utcnow()) == 1
        async with db.transaction() as session:
            room = get_plan("pro").emails_per_month - 1
            await limits.add_month(session, ws.account_id, room, utcnow())
        full = await _invite(ada, "jo@else.example")
        assert full.status_code == 403 and "Monthly email limit reached" in full.text
        async with db.session() as session:
            assert (
                await session.scalar(select(Person).where(Person.email == "jo@else.example"))
                is None
            )
        await driver.drain()
        assert [m.parsed()["To"] for m in sink.received] == ["mo@else.example"]


async def test_a_workspace_name_in_an_invitation_is_printed_not_run(
    app,
    db,
    settings,
    factory,
    sink,  # noqa: F811
    driver,  # noqa: F811
):
    settings.system_from = SYSTEM_FROM
    ws = await factory.workspace(name="{{ 7*7 }}")
    ada = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(ada):
        assert (await _invite(ada, "mo@else.example")).status_code == 303
    await driver.drain()
    mail = sink.received[-1].parsed()
    assert mail["Subject"] == "You are invited to {{ 7*7 }} on Mailroom"
    text = mail.get_body(("plain",)).get_content()
    html = mail.get_body(("html",)).get_content()
    assert "invited you to work on {{ 7*7 }} as a member" in text
    assert "{{ 7*7 }}" in html and "work on 49" not in text
