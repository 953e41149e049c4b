"""Template preview: the subject, HTML and text as a contact (or sample values) would receive
them, merge tags and fallbacks, escaping, the derived text part, CSS inlining, the preheader,
and that a preview is a read (no write counted, no audit entry)."""

from __future__ import annotations

import re

import pytest

from mailroom.ratelimits import service as ratelimits

BASE = "/api/v1/templates"


async def create_template(client, headers, name="T", **fields):
    response = await client.post(BASE, json={"name": name, **fields}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["template"]


async def create_contact(client, headers, email, **fields):
    response = await client.post(
        "/api/v1/contacts", json={"email": email, **fields}, headers=headers
    )
    assert response.status_code == 201, response.text
    return response.json()["contact"]


async def preview(client, headers, template_id, body=None):
    response = await client.post(f"{BASE}/{template_id}/preview", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
async def shop(factory):
    return await factory.workspace("pro", name="Acme Shop")


# ---------------------------------------------------------------- merge tags


async def test_preview_as_a_contact_fills_every_merge_tag(client, shop):
    contact = await create_contact(
        client,
        shop.headers,
        "ada@example.com",
        first_name="Ada",
        last_name="Lovelace",
        custom_fields={"company": "Analytical Engines", "items": "three"},
    )
    template = await create_template(
        client,
        shop.headers,
        subject="Hello {{ first_name }} {{ last_name }}",
        html_content="<p>{{ email }} at {{ custom_fields.company }} ({{ custom_fields.items }}) "
        "from {{ workspace.name }}</p>",
        text_content="{{ first_name }} / {{ custom_fields.company }} / {{ unsubscribe_url }} / "
        "{{ preferences_url }} / {{ webview_url }}",
    )
    shown = await preview(client, shop.headers, template["id"], {"contact_id": contact["id"]})
    assert set(shown) == {"subject", "html", "text"}
    assert shown["subject"] == "Hello Ada Lovelace"
    assert "<p>ada@example.com at Analytical Engines (three) from Acme Shop</p>" in shown["html"]
    assert shown["text"] == (
        "Ada / Analytical Engines / http://testserver/preview/unsubscribe / "
        "http://testserver/preview/preferences / http://testserver/preview/webview"
    )


async def test_without_a_contact_sample_values_are_used(client, shop):
    for field in (
        {"key": "plan", "type": "dropdown", "options": ["Gold", "Silver"]},
        {"key": "company", "label": "Company name"},
        {"key": "seats", "type": "number"},
    ):
        made = await client.post("/api/v1/custom-fields", json=field, headers=shop.headers)
        assert made.status_code == 201, made.text
    template = await create_template(
        client,
        shop.headers,
        subject="Hi {{ first_name }}",
        text_content="{{ first_name }} {{ last_name }} <{{ email }}> {{ custom_fields.plan }} "
        "{{ custom_fields.company }} {{ custom_fields.seats }} {{ custom_fields.nope }}.",
    )
    for body in (None, {}, {"contact_id": None}):
        shown = await preview(client, shop.headers, template["id"], body)
        assert shown["subject"] == "Hi Jane"
        assert shown["text"] == "Jane Doe <jane.doe@example.com> Gold Company name 42 ."


async def test_fallbacks_and_missing_values_render_as_nothing_never_none(client, shop):
    contact = await create_contact(
        client, shop.headers, "nameless@example.com", custom_fields={"zero": 0, "off": False}
    )
    template = await create_template(
        client,
        shop.headers,
        subject='{{ first_name | default("there") }}',
        text_content='Hi {{ first_name | default("there") }}!'
        "[{{ last_name }}][{{ custom_fields.missing }}][{{ custom_fields.missing.deeper }}]"
        '[{{ custom_fields.missing | default("n/a") }}][{{ nothing_at_all }}]'
        "[{{ custom_fields.zero }}][{{ custom_fields.off }}]"
        "[{{ custom_fields.missing + 1 }}][{% if custom_fields.missing > 3 %}big{% endif %}]",
    )
    shown = await preview(client, shop.headers, template["id"], {"contact_id": contact["id"]})
    assert shown["subject"] == "there"
    assert shown["text"] == "Hi there![][][][n/a][][0][False][][]"
    assert "None" not in shown["text"]


async def test_a_field_deleted_from_the_registry_renders_empty(client, shop):
    contact = await create_contact(
        client, shop.headers, "score@example.com", custom_fields={"score": "12"}
    )
    template = await create_template(
        client, shop.headers, text_content="[{{ custom_fields.score }}]"
    )
    shown = await preview(client, shop.headers, template["id"], {"contact_id": contact["id"]})
    assert shown["text"] == "[12]"
    deleted = await client.delete("/api/v1/custom-fields/score", headers=shop.headers)
    assert deleted.status_code == 200, deleted.text
    shown = await preview(client, shop.headers, template["id"], {"contact_id": contact["id"]})
    assert shown["text"] == "[]"


async def test_html_is_escaped_and_subject_and_text_are_not(client, shop):
    contact = await create_contact(
        client, shop.headers, "tom@example.com", first_name="<b>Tom & Jerry</b>"
    )
    template = await create_template(
        client,
        shop.headers,
        subject="For {{ first_name }}",
        html_content="<p>{{ first_name }}</p>",
        text_content="{{ first_name }}",
    )
    shown = await preview(client, shop.headers, template["id"], {"contact_id": contact["id"]})
    assert "<p>&lt;b&gt;Tom &amp; Jerry&lt;/b&gt;</p>" in shown["html"]
    assert shown["subject"] == "For <b>Tom & Jerry</b>"
    assert shown["text"] == "<b>Tom & Jerry</b>"


# ---------------------------------------------------------------- what compiling adds


async def test_text_part_is_derived_from_the_html_when_empty(client, shop):
    contact = await create_contact(client, shop.headers, "grace@example.com", first_name="Grace")
    template = await create_template(
        client,
        shop.headers,
        html_content="<html><head><title>x</title><style>p{color:red}</style></head><body>"
        "<h1>News</h1><p>Hi {{ first_name }},</p>"
        "<ul>{% for n in ['one', 'two'] %}<li>{{ n }}</li>{% endfor %}</ul>"
        '<p><a href="https://example.com/a?x=1&amp;y=2">Read more</a><br>'
        '<a href="{{ unsubscribe_url }}">Unsubscribe</a></p></body></html>',
    )
    shown = await preview(client, shop.headers, template["id"], {"contact_id": contact["id"]})
    assert shown["text"] == (
        "News\n\nHi Grace,\n\n- one\n- two\n\n"
        "Read more (https://example.com/a?x=1&y=2)\n"
        "Unsubscribe (http://testserver/preview/unsubscribe)\n"
    )


async def test_style_blocks_are_inlined_and_media_queries_kept(client, shop):
    template = await create_template(
        client,
        shop.headers,
        html_content="<html><head><style>p.note{color:#ff0000} "
        "@media (max-width:600px){p{font-size:18px}}</style></head>"
        '<body><table>{% for i in range(2) %}<tr><td><p class="note">{{ i }}</p></td></tr>'
        "{% endfor %}</table></body></html>",
    )
    html = (await preview(client, shop.headers, template["id"]))["html"]
    assert html.count('<p class="note" style="color: #ff0000;">') == 2
    assert ">0</p>" in html and ">1</p>" in html
    assert "p.note" not in html  # the rule itself is gone
    assert "@media (max-width:600px)" in html


async def test_preheader_is_hidden_at_the_top_of_the_body(client, shop):
    contact = await create_contact(client, shop.headers, "p@example.com", first_name="Pat")
    template = await create_template(
        client,
        shop.headers,
        preheader="Only for {{ first_name }} & friends",
        html_content='<html><body class="b"><p>Body</p></body></html>',
    )
    html = (await preview(client, shop.headers, template["id"], {"contact_id": contact["id"]}))[
        "html"
    ]
    found = re.search(r'<body class="b"><div style="display:none;[^"]*">([^<]*)</div><p>', html)
    assert found is not None, html
    assert found.group(1).startswith("Only for Pat &amp; friends")


async def test_preview_follows_an_update(client, shop):
    template = await create_template(client, shop.headers, text_content="before")
    assert (await preview(client, shop.headers, template["id"]))["text"] == "before"
    patched = await client.patch(
        f"{BASE}/{template['id']}", json={"text_content": "after"}, headers=shop.headers
    )
    assert patched.status_code == 200
    assert (await preview(client, shop.headers, template["id"]))["text"] == "after"


async def test_an_empty_template_previews_as_empty_parts(client, shop):
    template = await create_template(client, shop.headers, "Empty")
    assert await preview(client, shop.headers, template["id"]) == {
        "subject": "",
        "html": "",
        "text": "",
    }


# ---------------------------------------------------------------- request checks


async def test_unknown_or_foreign_contact_is_404(client, shop, factory):
    template = await create_template(client, shop.headers)
    other = await factory.workspace()
    theirs = await create_contact(client, other.headers, "them@example.com")
    for contact_id in ("no-such-contact", theirs["id"]):
        response = await client.post(
            f"{BASE}/{template['id']}/preview",
            json={"contact_id": contact_id},
            headers=shop.headers,
        )
        assert response.status_code == 404
        assert response.json() == {"error": "Contact not found"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"contact_id": 5}, "contact_id must be a string"),
        ({"contact": "x"}, "Unknown field(s): contact"),
        ([], "Request body must be a JSON object"),
    ],
)
async def test_bad_preview_body_is_400(client, shop, body, message):
    template = await create_template(client, shop.headers)
    response = await client.post(
        f"{BASE}/{template['id']}/preview", json=body, headers=shop.headers
    )
    assert response.status_code == 400
    assert response.json() == {"error": message}


async def test_preview_is_a_read_not_counted_or_audited(client, factory, db):
    free = await factory.workspace("free")
    template = await create_template(client, free.headers, text_content="hi")
    async with db.transaction() as session:  # the rest of the hour's 120 writes
        for _ in range(119):
            await ratelimits.hit(
                session, f"writes:{free.workspace_id}", limit=120, window_seconds=3600
            )
    for _ in range(3):
        assert (await preview(client, free.headers, template["id"]))["text"] == "hi"
    refused = await client.patch(
        f"{BASE}/{template['id']}", json={"subject": "x"}, headers=free.headers
    )
    assert refused.status_code == 429
    log = await client.get("/api/v1/account/audit-log", headers=free.headers)
    operations = [e["operation"] for e in log.json()["entries"]]
    assert "preview_template" not in operations
    assert operations.count("create_template") == 1
