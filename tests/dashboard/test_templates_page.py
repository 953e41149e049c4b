"""`/app/templates`: write a template (the API's syntax check refuses a broken one and keeps
what was typed), change it, preview the saved version as a contact or with sample values in a
framed document of its own (no script, frameable by the dashboard only), preview the draft
before it is saved, upload and pick images from the media library beside it, delete it."""

from __future__ import annotations

import io
from contextlib import aclosing

from PIL import Image

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


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (10, 120, 200)).save(buffer, format="PNG")
    return buffer.getvalue()


async def test_the_draft_previews_before_it_is_saved(app, client, db, settings, ws):
    """The editor's content posted to a frame renders as the contact, unsaved: the same
    framed document, a broken draft answered with the render's reason, a post without the
    page's token refused."""
    made = await client.post(
        "/api/v1/contacts",
        json={"email": "ann@mailtest.io", "first_name": "Ann"},
        headers=ws.headers,
    )
    assert made.status_code == 201
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        token = csrf_of((await member.get("/app/templates/new")).text)
        draft = {
            "csrf": token,
            "subject": "Hi",
            "preheader": "",
            "html_content": "<h1>Draft for {{ first_name }}</h1>",
            "text_content": "",
            "as": "ann@mailtest.io",
        }
        shown = await member.post("/app/templates/draft-preview", data=draft)
        assert shown.status_code == 200
        assert "<h1>Draft for Ann</h1>" in shown.text
        assert "default-src 'none'" in shown.headers["content-security-policy"]
        assert "frame-ancestors 'self'" in shown.headers["content-security-policy"]
        text = await member.post("/app/templates/draft-preview?part=text", data=draft)
        assert "<pre" in text.text and "Draft for Ann" in text.text
        sample = await member.post("/app/templates/draft-preview", data={**draft, "as": ""})
        assert "Draft for Jane" in sample.text
        broken = await member.post(
            "/app/templates/draft-preview", data={**draft, "html_content": "{{ first_name "}
        )
        assert broken.status_code == 422 and "html_content" in broken.text
        nobody = await member.post(
            "/app/templates/draft-preview", data={**draft, "as": "zed@mailtest.io"}
        )
        assert nobody.status_code == 404 and "No contact has that address" in nobody.text
        forged = await member.post(
            "/app/templates/draft-preview", data={**draft, "csrf": "not-the-token"}
        )
        assert forged.status_code == 403
    listed = await client.get("/api/v1/templates", headers=ws.headers)
    assert listed.json()["templates"] == []  # previews save nothing


async def test_images_uploaded_and_picked_beside_the_editor(app, client, db, settings, ws):
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/app/templates/new")
        assert "No images yet: upload one here." in page.text
        token = csrf_of(page.text)
        uploaded = await member.post(
            "/app/templates/media",
            data={"csrf": token, "back": "/app/templates/new"},
            files={"file": ("logo.png", _png(), "image/png")},
            headers={"HX-Request": "true"},
        )
        assert uploaded.status_code == 200 and "<html" not in uploaded.text
        assert "Image “logo.png” uploaded." in uploaded.text
        library = (await client.get("/api/v1/media", headers=ws.headers)).json()
        [stored] = library["files"]
        assert f'data-insert-image="{stored["url"]}"' in uploaded.text
        assert f'value="{stored["url"]}"' in uploaded.text

        refused = await member.post(
            "/app/templates/media",
            data={"csrf": token, "back": "/app/templates/new"},
            files={"file": ("notes.png", b"not an image at all", "image/png")},
        )
        assert refused.status_code == 303
        assert refused.headers["location"] == "/app/templates/new"
        again = await member.get("/app/templates/new")
        assert "Unsupported image type: upload a PNG, JPEG, GIF or WebP file" in again.text
        assert 'alt="logo.png"' in again.text
        elsewhere = await member.post(
            "/app/templates/media",
            data={"csrf": token, "back": "https://evil.example/"},
            files={"file": ("b.png", _png(), "image/png")},
        )
        assert elsewhere.headers["location"] == "/app/templates"
    library = (await client.get("/api/v1/media", headers=ws.headers)).json()
    assert library["count"] == 2
