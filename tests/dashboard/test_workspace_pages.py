"""`/app/workspaces/new` as a person uses it: an admin opens a workspace in the same account
(the "New workspace" link beside the switcher; moved into it, its admin, audit-logged there),
from nothing or from a blueprint (the starter's objects read back through the new workspace's
own key, automations paused; a captured blueprint's webhook endpoint answered with its secret
this once), and every refusal said on the form with nothing made: no name, a name too long or
already the account's, a blueprint unknown or another account's, a blueprint the guard refuses
(all or nothing: no half-made workspace). A member has no link and is refused the pages."""

from __future__ import annotations

import asyncio
import re
from contextlib import aclosing
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from mailroom.accounts import service as accounts
from mailroom.core.context import Context
from mailroom.models import AuditEntry, Blueprint, Person, Workspace, WorkspaceMember
from mailroom.sending import service as sending
from tests.dashboard.helpers import csrf_of, form_values, signed_in
from tests.dashboard.test_blueprint_pages import (
    alerts,
    ok,
    part_of,
    plan_rows,
    switch_to,
    text_of,
)

NEW = "/app/workspaces/new"
ADA = "ada@shop.example"


@pytest.fixture(autouse=True)
def allow_loopback(settings: Any) -> Any:
    settings.webhook_allow_networks = ["127.0.0.0/8"]
    return settings


async def workspaces_of_account(db: Any, account_id: str) -> list[tuple[str, str]]:
    async with db.session(write=False) as session:
        rows = await session.execute(
            select(Workspace.id, Workspace.name)
            .where(Workspace.account_id == account_id)
            .order_by(Workspace.created_at, Workspace.id)
        )
        return [(w, n) for w, n in rows.all()]


async def key_for(db: Any, workspace_id: str) -> dict[str, str]:
    async with db.transaction() as session:
        made = await accounts.create_key(session, workspace_id)
    return {"x-api-key": made.secret}


async def create(browser: Any, path: str = NEW, **fields: str) -> Any:
    """The new-workspace form posted as shown at `path`, with `fields` changed."""
    page = await browser.get(path)
    assert page.status_code == 200, page.text
    values = form_values(page.text, "new-workspace-form")
    values.update(fields)
    return await browser.post("/app/workspaces", data=values)


async def test_an_admin_opens_an_empty_workspace_and_is_moved_into_it(
    app, client, db, settings, ws
):
    ada = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(ada):
        home = await ada.get("/app")
        assert f'<a href="{NEW}" class="new-workspace">New workspace</a>' in home.text

        page = await ada.get(NEW)
        assert page.status_code == 200
        assert "<title>New workspace · Mailroom</title>" in page.text
        assert "Pro plan" in text_of(page.text)
        # The select offers none, then the account's blueprints (the starters among them).
        select_html = page.text.split('id="workspace-blueprint"')[1].split("</select>")[0]
        options = re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', select_html)
        assert options == [
            ("", "None: an empty workspace"),
            ("starter-newsletter", "Newsletter (starter)"),
            ("starter-shop", "Shop (starter)"),
        ]
        assert form_values(page.text, "new-workspace-form")["blueprint"] == ""

        answer = await create(ada, name="  Second   site ")
        assert answer.status_code == 303 and answer.headers["location"] == "/app"
        home = await ada.get("/app")
        assert "Workspace “Second site” created: you are its admin." in text_of(home.text)

    found = await workspaces_of_account(db, ws.account_id)
    assert [n for _w, n in found] == ["", "Second site"]
    new_id = found[1][0]
    # The switcher now stands on it.
    assert re.search(rf'<option value="{new_id}" selected>Second site</option>', home.text)
    async with db.session(write=False) as session:
        ada_id = await session.scalar(select(Person.id).where(Person.email == ADA))
        role = await session.scalar(
            select(WorkspaceMember.role).where(
                WorkspaceMember.workspace_id == new_id, WorkspaceMember.person_id == ada_id
            )
        )
        audited = (
            await session.scalars(
                select(AuditEntry.operation).where(AuditEntry.workspace_id == new_id)
            )
        ).all()
    assert role == "admin"
    assert audited == ["create_workspace"]
    # It is empty and of the same account: the new workspace's own key sees no lists.
    headers = await key_for(db, new_id)
    assert (await ok(await client.get("/api/v1/lists", headers=headers)))["lists"] == []


async def test_a_workspace_started_from_the_newsletter_starter(app, client, db, settings, ws):
    ada = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(ada):
        # Reached from the starter's page ("New workspace from it"): the starter is chosen.
        starter = await ada.get("/app/blueprints/starter-newsletter")
        assert (
            f'href="{NEW}?blueprint=starter-newsletter">New workspace from it</a>' in starter.text
        )
        answer = await create(ada, f"{NEW}?blueprint=starter-newsletter", name="Weekly letter")
        assert answer.status_code == 200, answer.text
        html = answer.text
    assert "<title>Workspace “Weekly letter” created · Mailroom</title>" in html
    made = part_of(html, "made")
    assert "Blueprint “Newsletter" in made and "5 created" in made
    assert 'id="secrets"' not in html  # no endpoint made, no secret to show
    assert [(part, name, action) for part, name, action, _ in plan_rows(html)] == [
        ("Custom fields", "interests", "create"),
        ("Lists", "Newsletter", "create"),
        ("Templates", "Welcome", "create"),
        ("Forms", "Newsletter signup", "create"),
        ("Automations", "Welcome", "create"),
    ]
    # The answer is drawn in the new workspace: its switcher stands on it.
    new_id = (await workspaces_of_account(db, ws.account_id))[1][0]
    assert re.search(rf'<option value="{new_id}" selected>Weekly letter</option>', html)

    headers = await key_for(db, new_id)
    lists = (await ok(await client.get("/api/v1/lists", headers=headers)))["lists"]
    assert [item["name"] for item in lists] == ["Newsletter"]
    automations = (await ok(await client.get("/api/v1/automations", headers=headers)))[
        "automations"
    ]
    assert [(a["name"], a["status"]) for a in automations] == [("Welcome", "paused")]
    fields = (await ok(await client.get("/api/v1/custom-fields", headers=headers)))["fields"]
    assert [f["key"] for f in fields] == ["interests"]
    # Nothing of it landed in the workspace the person came from.
    assert (await ok(await client.get("/api/v1/lists", headers=ws.headers)))["lists"] == []
    async with db.session(write=False) as session:
        audited = (
            await session.scalars(
                select(AuditEntry.operation)
                .where(AuditEntry.workspace_id == new_id)
                .order_by(AuditEntry.id)
            )
        ).all()
    assert sorted(audited) == ["apply_blueprint", "create_workspace"]


async def test_a_captured_blueprint_with_a_webhook_answers_its_secret_once(
    app, client, db, settings, ws
):
    captured = await ok(
        await client.post(
            "/api/v1/blueprints",
            headers=ws.headers,
            json={"name": "Hooks", "include": ["webhooks", "tags"]},
        ),
        201,
    )
    blueprint_id = captured["blueprint"]["id"]
    ada = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(ada):
        answer = await create(ada, name="Hooked", blueprint=blueprint_id)
        assert answer.status_code == 200, answer.text
    secrets = re.findall(r'<textarea class="secret"[^>]*>([^<]+)</textarea>', answer.text)
    assert len(secrets) == 1 and secrets[0].startswith("whsec_")
    new_id = (await workspaces_of_account(db, ws.account_id))[1][0]
    headers = await key_for(db, new_id)
    hooks = (await ok(await client.get("/api/v1/webhooks", headers=headers)))["webhooks"]
    assert [h["url"] for h in hooks] == ["http://127.0.0.1:9/recorder"]
    assert "secret" not in hooks[0]  # read back, the secret is never shown again


@pytest.mark.parametrize(
    ("fields", "status", "message"),
    [
        ({"name": "   "}, 400, "Name the workspace."),
        ({"name": "x" * 101}, 400, "A workspace name can be up to 100 characters."),
        ({"name": "Shop", "blueprint": "01ffffff-0000-7000-8000-000000000000"}, 404, None),
    ],
)
async def test_refusals_are_said_on_the_form_and_make_nothing(
    app, db, settings, ws, fields, status, message
):
    ada = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(ada):
        answer = await create(ada, **fields)
    assert answer.status_code == status, answer.text
    said = alerts(answer.text)
    assert said == [message or "Blueprint not found"]
    # What was typed stays in the form.
    assert form_values(answer.text, "new-workspace-form")["name"] == fields["name"]
    assert len(await workspaces_of_account(db, ws.account_id)) == 1


async def test_a_name_the_account_already_has_is_refused(app, db, settings, ws, factory):
    await factory.workspace(account_id=ws.account_id, name="Shop Two", listen=False)
    ada = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(ada):
        answer = await create(ada, name="shop two")
    assert answer.status_code == 409
    assert alerts(answer.text) == ["This account already has a workspace named “shop two”."]
    assert len(await workspaces_of_account(db, ws.account_id)) == 2
    # Another account's workspace of that name is no obstacle.
    await factory.workspace(name="Elsewhere", listen=False)
    async with aclosing(await signed_in(app, db, settings, ws, "bob@shop.example")) as bob:
        answer = await create(bob, name="Elsewhere")
    assert answer.status_code == 303
    assert [n for _w, n in await workspaces_of_account(db, ws.account_id)][-1] == "Elsewhere"


async def test_another_accounts_blueprint_is_not_found(app, client, db, settings, ws, factory):
    other = await factory.workspace(listen=False)
    theirs = await ok(
        await client.post(
            "/api/v1/blueprints",
            headers=other.headers,
            json={"name": "Theirs", "include": ["tags"]},
        ),
        201,
    )
    ada = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(ada):
        answer = await create(ada, name="Mine", blueprint=theirs["blueprint"]["id"])
    assert answer.status_code == 404
    assert alerts(answer.text) == ["Blueprint not found"]
    assert len(await workspaces_of_account(db, ws.account_id)) == 1


async def test_a_blueprint_the_guard_refuses_leaves_no_workspace(app, client, db, settings, ws):
    captured = await ok(
        await client.post(
            "/api/v1/blueprints",
            headers=ws.headers,
            json={"name": "Hooks", "include": ["webhooks"]},
        ),
        201,
    )
    settings.webhook_allow_networks = []  # 127.0.0.1 is now refused by the outbound guard
    ada = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(ada):
        answer = await create(ada, name="Guarded", blueprint=captured["blueprint"]["id"])
    assert answer.status_code == 400, answer.text
    (said,) = alerts(answer.text)
    assert said.startswith(
        "No workspace was made: the blueprint could not be applied. webhooks[0].url is not allowed:"
    )
    assert len(await workspaces_of_account(db, ws.account_id)) == 1
    async with db.session(write=False) as session:
        members = await session.scalar(select(func.count()).select_from(WorkspaceMember))
    assert members == 1  # Ada's place in `ws` only


async def test_a_member_has_no_link_and_is_refused(app, db, settings, ws):
    bob = await signed_in(app, db, settings, ws, "bob@shop.example", role="member")
    async with aclosing(bob):
        home = await bob.get("/app")
        assert NEW not in home.text
        page = await bob.get(NEW)
        assert page.status_code == 403
        refused = await bob.post(
            "/app/workspaces", data={"csrf": csrf_of(home.text), "name": "Sneaky"}
        )
        assert refused.status_code == 403
    assert len(await workspaces_of_account(db, ws.account_id)) == 1


async def test_names_are_compared_as_names_and_never_twice_at_once(app, db, settings, ws, factory):
    """Case (unicode-aware) and inner whitespace ignored; invisible characters dropped; four
    posts of one name at once make one workspace (the check and the insert are one step)."""
    await factory.workspace(account_id=ws.account_id, name="ÉCOLE  Straße", listen=False)
    ada = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(ada):
        answer = await create(ada, name="école strasse")
        assert answer.status_code == 409
        assert alerts(answer.text) == [
            "This account already has a workspace named “école strasse”."
        ]
        for invisible in ("\u200b", "\x00\t", "\u200e \u2060"):
            answer = await create(ada, name=invisible)
            assert (answer.status_code, alerts(answer.text)) == (400, ["Name the workspace."])
        answer = await create(ada, name="Night\x00 \u200bshop")
        assert answer.status_code == 303
        page = await ada.get(NEW)
        token = csrf_of(page.text)
        answers = await asyncio.gather(
            *(ada.post("/app/workspaces", data={"csrf": token, "name": "Twin"}) for _ in range(4))
        )
    assert sorted(a.status_code for a in answers) == [303, 409, 409, 409]
    names = [n for _w, n in await workspaces_of_account(db, ws.account_id)]
    assert names == ["", "ÉCOLE  Straße", "Night shop", "Twin"]


@pytest.mark.parametrize(
    ("by", "words"), [("operator", "by the operator"), ("health", "for its delivery health")]
)
async def test_no_new_workspace_while_the_account_is_paused(app, db, settings, ws, by, words):
    """A new workspace is no way around a pause of the operator or of the health check (a
    workspace's own pause is its own business)."""
    async with db.transaction() as session:
        principal = await accounts.principal_for_workspace(session, ws.workspace_id)
        ctx = Context(session, principal, settings)
        await sending.pause(ctx, by="workspace")
    ada = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(ada):
        assert (await create(ada, name="Own pause is fine")).status_code == 303
        async with db.transaction() as session:
            principal = await accounts.principal_for_workspace(session, ws.workspace_id)
            ctx = Context(session, principal, settings)
            reason = "operator" if by == "operator" else "bounce_rate"
            await sending.pause(ctx, by=by, reason=reason, note="spam complaints")
        await switch_to(ada, ws.workspace_id)
        answer = await create(ada, name="Escape")
    assert answer.status_code == 403
    workspace_name = f"Workspace {ws.workspace_id[:8]}"
    assert alerts(answer.text) == [
        f"Sending is paused in “{workspace_name}” ({words}): a new workspace can be opened "
        "once it resumes."
    ]
    assert [n for _w, n in await workspaces_of_account(db, ws.account_id)] == [
        "",
        "Own pause is fine",
    ]


async def test_an_older_blueprint_linked_is_chosen_though_not_among_the_first_offered(
    app, client, db, settings, ws
):
    first = await ok(
        await client.post(
            "/api/v1/blueprints", headers=ws.headers, json={"name": "Oldest", "include": ["tags"]}
        ),
        201,
    )
    oldest = first["blueprint"]["id"]
    async with db.transaction() as session:  # 100 newer ones, as the API would make them
        blueprint = await session.get(Blueprint, oldest)
        for i in range(100):
            session.add(
                Blueprint(
                    account_id=ws.account_id,
                    name=f"Newer {i}",
                    document=blueprint.document,
                    created_at=blueprint.created_at + timedelta(seconds=i + 1),
                )
            )
    ada = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(ada):
        page = await ada.get(f"{NEW}?blueprint={oldest}")
        assert form_values(page.text, "new-workspace-form")["blueprint"] == oldest
        unknown = await ada.get(f"{NEW}?blueprint=01ffffff-0000-7000-8000-000000000000")
        assert form_values(unknown.text, "new-workspace-form")["blueprint"] == ""
        nul = await create(ada, name="Odd", blueprint="bad\x00id")
        assert (nul.status_code, alerts(nul.text)) == (404, ["Blueprint not found"])
