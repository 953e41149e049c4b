"""Settings → Assistants through the app, as a signed-in person's browser uses it: an admin
lists, connects (the code shown once, exchanged by the agent with no key) and revokes
assistants; a member connects with a member's permissions only and never sees the list; the
approval box's default; refusals change nothing; the audit log names an assistant and the
person (or key) it acts for."""

from __future__ import annotations

from contextlib import aclosing
from datetime import timedelta

from sqlalchemy import func, select

from mailroom.models import AssistantGrant, AuditEntry, Person
from tests.dashboard.assistant_steps import (
    CALLBACK,
    EXCHANGE,
    bearer,
    consent_path,
    pkce,
    register_client,
    shown_code,
    token_for_code,
)
from tests.dashboard.helpers import csrf_of, form_values, signed_in

ADA = "ada@shop.example"
MO = "mo@shop.example"
LIST = "/settings/assistants"
CONNECT = "/settings/assistants/connect"
ADMIN_ONLY = ("webhooks:read", "webhooks:write", "audit:read")


async def _connect(browser, **fields):
    """Posts the connect form as the page shows it, with `fields` changed."""
    page = await browser.get(CONNECT)
    assert page.status_code == 200, page.text
    data = {**form_values(page.text, "connect-form"), **fields}
    return await browser.post(CONNECT, data={k: v for k, v in data.items() if v is not None})


async def _grant(db, name: str) -> AssistantGrant:
    async with db.session() as session:
        return await session.scalar(select(AssistantGrant).where(AssistantGrant.name == name))


async def _person_id(db, email: str) -> str:
    async with db.session() as session:
        return await session.scalar(select(Person.id).where(Person.email == email))


async def test_an_admin_connects_lists_and_revokes_an_assistant(app, client, db, settings, ws):
    admin = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(admin):
        empty = await admin.get(LIST)
        assert empty.status_code == 200
        assert "No assistant is connected to this workspace yet." in empty.text
        assert '<code class="wrap">http://testserver/mcp</code>' in empty.text
        assert 'href="/settings/assistants" aria-current="page">Assistants</a>' in empty.text

        form = await admin.get(CONNECT)
        for permission in (*ADMIN_ONLY, "contacts:read", "campaigns:send"):
            assert f'name="permission" value="{permission}"' in form.text
        made = await _connect(
            admin,
            name="  Claude   Code ",
            permission=["contacts:read", "contacts:write", "campaigns:send"],
            minutes="15",
            daily_recipient_budget="500",
        )
        assert made.status_code == 201, made.text
        assert "One-use code for “Claude Code”" in made.text
        code = shown_code(made.text)
        assert 'data-copy="#grant-code"' in made.text
        assert f"{{&#34;grant&#34;: &#34;{code}&#34;}}" in made.text  # the instructions
        assert "POST http://testserver/api/v1/assistants/grants/exchange" in made.text
        assert "Its campaign sends and schedules wait for an admin's approval." in made.text
        grant = await _grant(db, "Claude Code")
        assert abs(grant.expires_at - grant.created_at - timedelta(minutes=15)) < timedelta(
            seconds=5
        )

        exchanged = await client.post(EXCHANGE, json={"grant": code})
        assert exchanged.status_code == 200, exchanged.text
        tokens = exchanged.json()
        assert tokens["scope"] == "contacts:read contacts:write campaigns:send"
        assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 200
        again = await client.post(EXCHANGE, json={"grant": code})
        assert again.json() == {"error": "Grant already used"}
        shown = (
            await client.get(f"/api/v1/assistants/{tokens['assistant_id']}", headers=ws.headers)
        ).json()
        assert shown["requires_approval"] is True and shown["daily_recipient_budget"] == 500
        assert shown["connected_by"]["email"] == ADA

        listed = await admin.get(LIST)
        assert code not in listed.text  # shown once
        row = listed.text.split("<tbody>")[1]
        for cell in (
            '<td data-label="Name">Claude Code</td>',
            '<td data-label="Connected through">One-use grant</td>',
            f'<td data-label="Connected by">{ADA}</td>',
            '<td data-label="Campaign sends">need approval</td>',
            '<td data-label="Daily budget">500 recipients a day</td>',
            '<span class="badge">campaigns:send</span>',
        ):
            assert cell in row, cell
        assert '<td data-label="Last used">never</td>' not in row

        confirm = await admin.get(f"{LIST}/{tokens['assistant_id']}/revoke")
        assert confirm.status_code == 200 and "Revoke “Claude Code”?" in confirm.text
        done = await admin.post(
            f"{LIST}/{tokens['assistant_id']}/revoke", data={"csrf": csrf_of(confirm.text)}
        )
        assert (done.status_code, done.headers["location"]) == (303, LIST)
        assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 401
        after = await admin.get(LIST)
        assert "Assistant “Claude Code” is revoked: its tokens no longer work." in after.text
        assert "No assistant is connected to this workspace yet." in after.text
        gone = await admin.get(f"{LIST}/{tokens['assistant_id']}/revoke")
        assert gone.status_code == 404 and "Assistant not found" in gone.text

    person_id = await _person_id(db, ADA)
    async with db.session() as session:
        entries = (
            await session.execute(
                select(AuditEntry.operation, AuditEntry.target_id, AuditEntry.person_id).where(
                    AuditEntry.workspace_id == ws.workspace_id,
                    AuditEntry.operation.in_(("create_assistant_grant", "revoke_assistant")),
                )
            )
        ).all()
    assert sorted(entries) == [
        ("create_assistant_grant", grant.id, person_id),
        ("revoke_assistant", tokens["assistant_id"], person_id),
    ]


async def test_an_oauth_client_is_listed_under_its_own_name(app, client, db, settings, ws):
    admin = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(admin):
        client_id = await register_client(client)
        verifier, challenge = pkce()
        consent = await admin.get(await consent_path(admin, client_id, challenge))
        assert consent.status_code == 200 and "Connect Test Agent?" in consent.text
        allowed = await admin.post(
            consent.url.path,
            data={
                "csrf": csrf_of(consent.text),
                "name": "Test Agent",
                "workspace_id": ws.workspace_id,
                "permission": ["contacts:read", "campaigns:send"],
                "decision": "allow",
            },
        )
        assert allowed.status_code == 303
        target = allowed.headers["location"]
        assert target.startswith(CALLBACK + "?") and "state=xyz" in target
        code = target.split("code=")[1].split("&")[0]
        tokens = await token_for_code(client, client_id, code, verifier)
        assert tokens["scope"] == "contacts:read campaigns:send"

        row = (await admin.get(LIST)).text.split("<tbody>")[1]
        assert '<td data-label="Connected through">OAuth: Test Agent</td>' in row
        # The consent page's box was left unticked: its sends go out at once.
        assert '<td data-label="Campaign sends">go out at once</td>' in row
        assert '<td data-label="Daily budget">none</td>' in row


async def test_a_member_connects_within_a_members_permissions_only(app, client, db, settings, ws):
    member = await signed_in(app, db, settings, ws, MO, role="member")
    async with aclosing(member):
        home = await member.get("/app")
        assert 'href="/settings/assistants/connect">Assistants</a>' in home.text
        assert 'href="/settings/assistants"' not in home.text
        refused = await member.get(LIST)
        assert refused.status_code == 403 and "Admins only" in refused.text

        form = await member.get(CONNECT)
        assert form.status_code == 200
        assert 'name="permission" value="contacts:read"' in form.text
        for permission in ADMIN_ONLY:
            assert f'value="{permission}"' not in form.text
        assert "Admins only: audit:read, webhooks:read, webhooks:write." in form.text

        # Posted by hand, the admin-only permissions are dropped, never granted.
        made = await _connect(member, name="Helper", permission=["contacts:read", *ADMIN_ONLY])
        assert made.status_code == 201, made.text
        assert 'href="/settings/assistants">' not in made.text
        tokens = (await client.post(EXCHANGE, json={"grant": shown_code(made.text)})).json()
        assert tokens["scope"] == "contacts:read"
        hooks = await client.get("/api/v1/webhooks", headers=bearer(tokens))
        assert hooks.json() == {"error": "Forbidden: webhooks:read permission required"}

        nothing_left = await _connect(member, name="Sneaky", permission=list(ADMIN_ONLY))
        assert nothing_left.status_code == 400
        assert "Choose at least one permission." in nothing_left.text

        # Listing and revoking stay an admin's.
        revoke = await member.get(f"{LIST}/{tokens['assistant_id']}/revoke")
        assert revoke.status_code == 403
        posted = await member.post(
            f"{LIST}/{tokens['assistant_id']}/revoke", data={"csrf": csrf_of(home.text)}
        )
        assert posted.status_code == 403
        assert (await client.get("/api/v1/contacts", headers=bearer(tokens))).status_code == 200

    async with db.session() as session:
        by = await session.scalar(
            select(AuditEntry.person_id).where(AuditEntry.operation == "create_assistant_grant")
        )
    assert by == await _person_id(db, MO)
    assert await _grant(db, "Sneaky") is None


async def test_campaign_sends_wait_for_approval_unless_unticked(app, db, settings, ws):
    admin = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(admin):
        # The form as shown: the box is ticked.
        assert (
            await _connect(admin, name="Shown", permission=["campaigns:send"])
        ).status_code == 201
        # Unticked by the person.
        unticked = await _connect(
            admin, name="Unticked", permission=["campaigns:send"], requires_approval=None
        )
        assert unticked.status_code == 201
        assert "go out without an admin's approval" in unticked.text
        # A form without the box at all (posted by hand): the service's default.
        page = await admin.get(CONNECT)
        bare = await admin.post(
            CONNECT,
            data={"csrf": csrf_of(page.text), "name": "Bare", "permission": ["campaigns:send"]},
        )
        assert bare.status_code == 201
        # The box means nothing for an assistant that cannot send campaigns.
        reader = await _connect(admin, name="Reader", permission=["campaigns:read"])
        assert reader.status_code == 201
    approvals = {
        name: (await _grant(db, name)).requires_approval
        for name in ("Shown", "Unticked", "Bare", "Reader")
    }
    assert approvals == {"Shown": True, "Unticked": False, "Bare": True, "Reader": False}
    bare = await _grant(db, "Bare")  # the lifetime left as shown: 10 minutes
    assert abs(bare.expires_at - bare.created_at - timedelta(minutes=10)) < timedelta(seconds=5)


async def test_refused_forms_change_nothing(app, db, settings, ws):
    admin = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(admin):
        page = await admin.get(CONNECT)
        no_csrf = await admin.post(CONNECT, data={"name": "X", "permission": ["contacts:read"]})
        assert no_csrf.status_code == 403 and "This form has expired" in no_csrf.text
        for fields, message in (
            ({"name": "  "}, "Name the assistant: the list and the audit log show it."),
            ({"permission": None}, "Choose at least one permission."),
            ({"minutes": "61"}, "The code lasts 1 to 60 minutes."),
            ({"minutes": "0"}, "The code lasts 1 to 60 minutes."),
            (
                {"daily_recipient_budget": "-3"},
                "The daily recipient budget is a whole number from 0 to 100,000,000, or empty "
                "for none.",
            ),
        ):
            data = {"name": "Kept", "permission": ["contacts:read"], **fields}
            refused = await _connect(admin, **data)
            assert refused.status_code == 400, fields
            assert f'<p class="flash error" role="alert">{message}</p>' in refused.text
            assert "mr_grant_" not in refused.text
        # What the person filled in is kept for the next try.
        assert 'value="Kept"' in refused.text
        assert 'value="contacts:read" checked' in refused.text

        revoke = await admin.post(f"{LIST}/00000000-0000-0000-0000-000000000000/revoke", data={})
        assert revoke.status_code == 403
        unknown = await admin.post(
            f"{LIST}/00000000-0000-0000-0000-000000000000/revoke",
            data={"csrf": csrf_of(page.text)},
        )
        assert unknown.status_code == 404 and "Assistant not found" in unknown.text
    async with db.session() as session:
        assert await session.scalar(select(func.count()).select_from(AssistantGrant)) == 0
        audited = await session.scalar(
            select(func.count()).where(AuditEntry.operation == "create_assistant_grant")
        )
    assert audited == 0


async def test_the_audit_log_names_the_assistant_and_whom_it_acts_for(
    app, client, db, settings, ws
):
    admin = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(admin):
        made = await _connect(admin, name="Claude Code", permission=["contacts:write"])
        mine = (await client.post(EXCHANGE, json={"grant": shown_code(made.text)})).json()
        by_key = await client.post(
            "/api/v1/assistants/grants",
            headers=ws.headers,
            json={"name": "Nightly bot", "permissions": ["contacts:write"]},
        )
        theirs = (
            await client.post(EXCHANGE, json={"grant": by_key.json()["grant"]["code"]})
        ).json()
        for tokens, email in ((mine, "a@example.com"), (theirs, "b@example.com")):
            added = await client.post(
                "/api/v1/contacts", headers=bearer(tokens), json={"email": email}
            )
            assert added.status_code == 201, added.text

        log = await admin.get("/settings/audit-log")
        assert log.status_code == 200
        assert f'<td data-label="Who">Claude Code (assistant) for {ADA}</td>' in log.text
        assert '<td data-label="Who">Nightly bot (assistant) for an API key</td>' in log.text
        assert (
            f'<option value="assistant:{mine["assistant_id"]}">Claude Code (assistant)</option>'
            in log.text
        )

        only = await admin.get(
            "/settings/audit-log", params={"who": f"assistant:{mine['assistant_id']}"}
        )
        rows = only.text.split("<tbody>")[1].split("</tbody>")[0]
        assert rows.count("<tr>") == 1 and "create_contact" in rows
        assert f'value="assistant:{mine["assistant_id"]}" selected' in only.text

        # Revoked, it is still named in the log.
        confirm = await admin.get(f"{LIST}/{mine['assistant_id']}/revoke")
        await admin.post(
            f"{LIST}/{mine['assistant_id']}/revoke", data={"csrf": csrf_of(confirm.text)}
        )
        later = await admin.get("/settings/audit-log")
        assert f'<td data-label="Who">Claude Code (assistant) for {ADA}</td>' in later.text
