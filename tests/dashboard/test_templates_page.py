"""`/app/templates`: write a template (the API's syntax check refuses a broken one and keeps
what was typed), change it, preview the saved version as a contact or with sample values in a
framed document of its own (no script, frameable by the dashboard only), delete it."""

from __future__ import annotations

from contextlib import aclosing

from tests.dashboard.helpers import csrf_of, signed_in

HTML = (
    "<p style='color:#333'>Hello {{ first_name | default('there') }}, {{ custom_fields.plan }}</p>"
)


async def test_write_preview_and_delete_a_template(app, client, db, settings, ws):
    made = await client.post(
        "/api/v1/contacts",
        json={"email": "ann@mailtest.io", "first_name": "Ann", "custom_fields": {"plan": "gold"}},
        headers=ws.headers,
    )
    assert made.status_code == 201
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/app/templates/new")
        token = csrf_of(page.text)
        body = {
            "csrf": token,
            "name": "Welcome",
            "subject": "Hi {{ first_name }}",
            "preheader": "",
            "html_content": "<p>{{ first_name </p>",
            "text_content": "",
        }
        broken = await member.post("/app/templates/save", data=body)
        assert broken.status_code == 400 and "html_content" in broken.text
        assert "{{ first_name &lt;/p&gt;" in broken.text  # kept, escaped
        listed = await client.get("/api/v1/templates", headers=ws.headers)
        assert listed.json()["templates"] == []

        saved = await member.post("/app/templates/save", data={**body, "html_content": HTML})
        assert saved.status_code == 303
        template_id = saved.headers["location"].rsplit("/", 1)[1]
        stored = await client.get(f"/api/v1/templates/{template_id}", headers=ws.headers)
        assert stored.json()["template"]["html_content"] == HTML

        editor = await member.get(f"/app/templates/{template_id}?as=ann@mailtest.io")
        assert "frame-src 'self'" in editor.headers["content-security-policy"]
        assert f'src="/app/templates/{template_id}/preview?as=ann%40mailtest.io"' in editor.text
        shown = await member.get(f"/app/templates/{template_id}/preview?as=ann@mailtest.io")
        assert shown.status_code == 200 and "Hello Ann, gold" in shown.text
        policy = shown.headers["content-security-policy"]
        assert "frame-ancestors 'self'" in policy and "script-src" not in policy
        sample = await member.get(f"/app/templates/{template_id}/preview")
        assert sample.status_code == 200 and "Hello " in sample.text
        text = await member.get(
            f"/app/templates/{template_id}/preview?part=text&as=ann@mailtest.io"
        )
        assert "Hello Ann, gold" in text.text and "<pre" in text.text
        nobody = await member.get(f"/app/templates/{template_id}/preview?as=no@mailtest.io")
        assert nobody.status_code == 404

        renamed = await member.post(
            "/app/templates/save",
            data={**body, "template_id": template_id, "name": "Welcome v2", "html_content": HTML},
        )
        assert renamed.status_code == 303
        assert (
            "Template “Welcome v2” saved."
            in (await member.get(f"/app/templates/{template_id}")).text
        )
        gone = await member.post(f"/app/templates/{template_id}/delete", data={"csrf": token})
        assert gone.status_code == 303
        missing = await client.get(f"/api/v1/templates/{template_id}", headers=ws.headers)
        assert missing.status_code == 404
