"""A new installation as its first user meets it (issue 25): every signed-in page says when
mail only goes to the outbox folder, the overview lists the next steps of a new workspace,
the campaign editor fills subject and content from a picked template and previews them, and
`/docs` (Swagger UI, ReDoc) and the favicon are served by Mailroom itself."""

from __future__ import annotations

import re
from contextlib import aclosing

from tests.dashboard.helpers import csrf_of, form_values, signed_in
from tests.sending.conftest import verified_domain
from tests.sending.helpers import make_campaign, make_contacts, make_list, send_campaign

BANNER = "No email leaves this installation yet."


async def test_every_page_says_when_mail_only_goes_to_the_outbox(app, db, settings, ws):
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        outbox = str((settings.data_dir / "outbox").resolve())
        for path in ("/app", "/app/contacts", "/app/campaigns/new", "/settings/sending"):
            page = await admin.get(path)
            assert page.status_code == 200, path
            assert BANNER in page.text and outbox in page.text, path
            assert "MAILROOM_SMTP_URL" in page.text, path
        sending = (await admin.get("/settings/sending")).text
        assert "No SMTP relay is set: email is not sent but written to the outbox" in sending

        # The same installation with a relay set: no banner, the page names the relay only
        # (never its URL, which holds the password).
        app.state.settings = settings.model_copy(
            update={"smtp_url": "smtp://mailer:s3cret@relay.mailtest.io:2525"}
        )
        for path in ("/app", "/settings/sending"):
            page = await admin.get(path)
            assert BANNER not in page.text and "s3cret" not in page.text, path
        relayed = (await admin.get("/settings/sending")).text
        assert "through the SMTP relay at <code>relay.mailtest.io:2525</code>" in relayed


async def test_a_stranger_is_not_told_where_the_outbox_is(client):
    page = await client.get("/app/sign-in")
    assert page.status_code == 200 and BANNER not in page.text


async def test_the_overview_greets_a_new_workspace_with_its_next_steps(
    app, client, db, settings, ws
):
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        page = (await admin.get("/app")).text
        steps = page.index("Next steps")
        assert steps < page.index("Sign out on every device")
        assert steps < page.index("Emails this month")
        for link in (
            '<a href="/app/import">Import your contacts</a>',
            '<a href="/settings/sending">Verify a sending domain</a>',
            '<a href="/app/templates/new">Write a template</a>',
            '<a href="/app/campaigns/new">Send your first campaign</a>',
        ):
            assert link in page

        made = await client.post(
            "/api/v1/contacts", json={"email": "ann@mailtest.io"}, headers=ws.headers
        )
        assert made.status_code == 201
        await verified_domain(client, db, ws)
        template = await client.post(
            "/api/v1/templates",
            json={"name": "Hello", "subject": "Hi", "html_content": "<p>Hi</p>"},
            headers=ws.headers,
        )
        assert template.status_code == 201, template.text
        page = (await admin.get("/app")).text
        assert "<strong>Import your contacts</strong>: done." in page
        assert "<strong>Verify a sending domain</strong>: done." in page
        assert "<strong>Write a template</strong>: done." in page
        assert '<a href="/app/campaigns/new">Send your first campaign</a>' in page

    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        other = (await member.get("/app")).text
        assert "Next steps" in other  # a member sees them too

        news = await make_list(client, ws)
        await make_contacts(client, ws, ["bo@mailtest.io"], news)
        campaign = await make_campaign(client, ws, news)
        await send_campaign(client, ws, campaign["id"])
        assert "Next steps" not in (await member.get("/app")).text  # all done: gone


async def test_a_picked_template_fills_the_campaign_and_the_editor_previews_it(
    app, client, db, settings, ws
):
    template = await client.post(
        "/api/v1/templates",
        json={
            "name": "Welcome",
            "subject": "Welcome, {{ first_name | default('friend') }}",
            "preheader": "Glad you are here",
            "html_content": "<p>Hello from the template</p>",
            "text_content": "Hello from the template",
        },
        headers=ws.headers,
    )
    assert template.status_code == 201, template.text
    template_id = template.json()["template"]["id"]
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        new = await member.get("/app/campaigns/new")
        assert 'data-preview-of="campaign-editor"' in new.text
        assert 'hx-post="/app/campaigns/template"' in new.text
        form = form_values(new.text, "campaign-editor")
        form |= {"name": "Spring", "subject": "typed", "template_id": template_id}
        # Without script: the "Use this template" button posts the form here; htmx posts the
        # same on change and swaps the content card. Nothing is saved.
        filled = await member.post("/app/campaigns/template", data=form)
        assert filled.status_code == 200
        values = form_values(filled.text, "campaign-editor")
        assert values["subject"] == "Welcome, {{ first_name | default('friend') }}"
        assert values["preheader"] == "Glad you are here"
        assert values["name"] == "Spring"  # what was typed elsewhere stays
        assert "&lt;p&gt;Hello from the template&lt;/p&gt;</textarea>" in filled.text
        assert f'<option value="{template_id}" selected>Welcome</option>' in filled.text
        listed = await client.get("/api/v1/campaigns", headers=ws.headers)
        assert listed.json()["pagination"]["total"] == 0

        # The editor's frames show the draft (posted by app.js) ...
        draft = {**form, **values, "html_content": "<p>Hello from the template</p>"}
        shown = await member.post("/app/templates/draft-preview", data=draft)
        assert shown.status_code == 200 and "Hello from the template" in shown.text
        assert (
            "sandbox" in new.text
            and "default-src 'none'" in shown.headers["content-security-policy"]
        )
        # ... and a saved campaign's frames its saved version, without script.
        draft["csrf"] = csrf_of(filled.text)
        saved = await member.post("/app/campaigns/save", data=draft)
        assert saved.status_code == 303, saved.text
        campaign_id = saved.headers["location"].rsplit("/", 1)[1]
        page = await member.get(f"/app/campaigns/{campaign_id}")
        assert f'src="/app/campaigns/{campaign_id}/preview"' in page.text
        frame = await member.get(f"/app/campaigns/{campaign_id}/preview")
        assert frame.status_code == 200 and "Hello from the template" in frame.text
        assert re.search(r"frame-ancestors 'self'", frame.headers["content-security-policy"])


async def test_docs_and_the_favicon_are_served_offline(client):
    docs = await client.get("/docs")
    assert docs.status_code == 200
    assert "/docs/assets/swagger-ui-bundle.js" in docs.text
    assert "/docs/assets/swagger-ui.css" in docs.text and "/openapi.json" in docs.text
    assert "cdn." not in docs.text and "https://" not in docs.text.replace("https://swagger.io", "")
    for name, kind in (
        ("swagger-ui-bundle.js", "text/javascript"),
        ("swagger-ui.css", "text/css"),
        ("redoc.standalone.js", "text/javascript"),
    ):
        asset = await client.get(f"/docs/assets/{name}")
        assert asset.status_code == 200 and asset.headers["content-type"].startswith(kind), name
        assert len(asset.content) > 10_000
    bundle = (await client.get("/docs/assets/swagger-ui-bundle.js")).text
    assert "SwaggerUIBundle" in bundle
    assert (await client.get("/docs/assets/..%2Fcore.py")).status_code == 404
    assert (await client.get("/docs/assets/favicon.png")).status_code == 404
    redoc = await client.get("/redoc")
    assert redoc.status_code == 200 and "/docs/assets/redoc.standalone.js" in redoc.text
    assert "fonts.googleapis" not in redoc.text

    icon = await client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/x-icon"
    assert icon.content[:4] == b"\x00\x00\x01\x00"  # an ICO file
    page = await client.get("/app/sign-in")
    assert '<link rel="icon" href="/favicon.ico"' in page.text
    assert "/docs" not in (await client.get("/openapi.json")).json()["paths"]
