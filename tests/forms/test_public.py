"""The public side of a signup form, as a visitor and a site's script use it: the hosted
page, JSON and form-encoded submissions, validation in the page's language, the honeypot, the
rate limit, CORS, and what a submission leaves (contact, consent, lists, events)."""

from __future__ import annotations

from urllib.parse import urlencode

from tests.forms.helpers import contact_by_email, make_form, make_list, memberships, submit
from tests.sending.helpers import events_of, ok

JANE = "jane@mail.example"
FORM_HEADERS = {"content-type": "application/x-www-form-urlencoded"}


async def test_the_hosted_page_shows_the_fields_in_the_visitors_language(client, ws):
    await ok(
        await client.post(
            "/api/v1/custom-fields",
            json={"key": "plan", "label": "Plan", "type": "dropdown", "options": ["Basic", "Pro"]},
            headers=ws.headers,
        ),
        201,
    )
    form = await make_form(
        client,
        ws,
        name="Join us",
        fields=[{"key": "email"}, {"key": "first_name"}, {"key": "plan", "required": True}],
        languages=["en", "fr"],
        consent_text="One email a week.",
    )
    page = await client.get(f"/f/{form['id']}")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert '<html lang="en">' in html and "<h1>Join us</h1>" in html
    assert f'action="/f/{form["id"]}?lang=en"' in html
    assert 'type="email"' in html and 'autocomplete="given-name"' in html
    assert '<option value="Pro">Pro</option>' in html and "One email a week." in html
    assert "<script" not in html and page.headers["access-control-allow-origin"] == "*"

    french = await client.get(f"/f/{form['id']}", headers={"accept-language": "fr-FR,fr;q=0.9"})
    assert '<html lang="fr">' in french.text and ">S&#39;inscrire</button>" in french.text
    chosen = await client.get(f"/f/{form['id']}?lang=en", headers={"accept-language": "fr"})
    assert '<html lang="en">' in chosen.text

    assert (await client.get("/f/not-a-form")).status_code == 404


async def test_a_single_opt_in_submission_makes_a_confirmed_subscriber(client, db, ws):
    list_id = await make_list(client, ws)
    form = await make_form(
        client, ws, fields=[{"key": "email"}, {"key": "first_name"}], list_ids=[list_id]
    )
    answer = await submit(
        client, form["id"], email=" Jane@Mail.example ", first_name="Jane", extra="ignored"
    )
    assert (answer.status_code, answer.json()) == (200, {"ok": True, "double_opt_in": False})
    assert answer.headers["access-control-allow-origin"] == "*"

    contact = await contact_by_email(client, ws, JANE)
    assert contact is not None
    assert (contact["status"], contact["source"], contact["first_name"]) == (
        "subscribed",
        "form",
        "Jane",
    )
    consent = contact["custom_fields"]
    assert consent["consent_source"] == f"form:{form['id']}"
    assert consent["consent_ip"] == "127.0.0.1"
    assert consent["consent_confirmed_at"].endswith("Z")
    assert await memberships(client, ws, list_id) == {JANE: "confirmed"}

    submitted = await events_of(db, ws.workspace_id, "form.submitted")
    assert len(submitted) == 1 and submitted[0].form_id == form["id"]
    assert submitted[0].data["form"] == {"id": form["id"], "name": "Signup"}
    assert submitted[0].data["contact"]["email"] == JANE
    created = await events_of(db, ws.workspace_id, "contact.created")
    assert [e.form_id for e in created] == [form["id"]]
    joined = await events_of(db, ws.workspace_id, "contact.list_joined")
    assert [(e.list_id, e.form_id) for e in joined] == [(list_id, form["id"])]

    # The same person again: their details update, nothing doubles.
    again = await submit(client, form["id"], email=JANE, first_name="Janet")
    assert again.json() == {"ok": True, "double_opt_in": False}
    assert (await contact_by_email(client, ws, JANE))["first_name"] == "Janet"
    assert len(await events_of(db, ws.workspace_id, "contact.list_joined")) == 1
    read = await ok(await client.get(f"/api/v1/forms/{form['id']}", headers=ws.headers))
    assert read["form"]["stats"] == {"submissions": 2, "confirmed": 2}


async def test_form_encoded_answers_a_page_or_the_redirect(client, ws):
    form = await make_form(client, ws, success_message="See you on Monday!")
    body = urlencode({"email": JANE, "hp": ""})
    page = await client.post(f"/f/{form['id']}", content=body, headers=FORM_HEADERS)
    assert page.status_code == 200 and "See you on Monday!" in page.text
    assert "<h1>Thank you</h1>" in page.text

    moving = await make_form(client, ws, name="Moving", redirect_url="https://shop.example/thanks")
    answer = await client.post(f"/f/{moving['id']}", content=body, headers=FORM_HEADERS)
    assert answer.status_code == 303 and answer.headers["location"] == "https://shop.example/thanks"
    shown = await client.get(f"/f/{moving['id']}")
    # Browsers apply form-action to the redirect after the post.
    assert "form-action 'self' https://shop.example" in shown.headers["content-security-policy"]


async def test_invalid_submissions_are_shown_again_in_the_pages_language(client, ws):
    await ok(
        await client.post(
            "/api/v1/custom-fields",
            json={"key": "age", "label": "Âge", "type": "number"},
            headers=ws.headers,
        ),
        201,
    )
    form = await make_form(
        client,
        ws,
        fields=[{"key": "email"}, {"key": "first_name", "required": True}, {"key": "age"}],
        languages=["fr", "en"],
    )
    body = urlencode({"email": "not-an-address", "first_name": "", "age": "vingt"})
    page = await client.post(f"/f/{form['id']}", content=body, headers=FORM_HEADERS)
    assert page.status_code == 400
    assert "E-mail doit être une adresse e-mail valide" in page.text
    assert "Prénom est obligatoire" in page.text and "Âge doit être un nombre" in page.text
    assert 'value="not-an-address"' in page.text  # what they typed stays
    assert 'aria-invalid="true"' in page.text

    refused = await submit(client, form["id"], email="jane@")
    assert refused.status_code == 400
    english = await client.post(f"/f/{form['id']}?lang=en", json={"first_name": "Jane"})
    assert (english.status_code, english.json()) == (400, {"error": "Email is required"})
    typed = await client.post(
        f"/f/{form['id']}?lang=en", json={"email": JANE, "first_name": "J", "age": "x"}
    )
    assert typed.json() == {"error": "Âge must be a number"}
    broken = await client.post(
        f"/f/{form['id']}", content=b"[1]", headers={"content-type": "application/json"}
    )
    assert (broken.status_code, broken.json()) == (400, {"error": "Body must be a JSON object"})
    assert await contact_by_email(client, ws, JANE) is None


async def test_the_honeypot_takes_nothing_but_answers_the_same(client, db, ws):
    form = await make_form(client, ws)
    answer = await submit(client, form["id"], email=JANE, hp="http://spam.example")
    assert answer.json() == {"ok": True, "double_opt_in": False}
    assert await contact_by_email(client, ws, JANE) is None
    assert await events_of(db, ws.workspace_id, "form.submitted") == []


async def test_submissions_are_limited_per_ip_and_form(client, ws, settings):
    settings.form_rate_per_minute = 2
    form = await make_form(client, ws)
    other = await make_form(client, ws, name="Other")
    for n in range(2):
        assert (await submit(client, form["id"], email=f"p{n}@mail.example")).status_code == 200
    limited = await submit(client, form["id"], email="p3@mail.example")
    assert limited.status_code == 429
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    assert limited.json()["error"].startswith("Too many submissions from this address.")
    page = await client.post(
        f"/f/{form['id']}", content=urlencode({"email": "x@mail.example"}), headers=FORM_HEADERS
    )
    assert page.status_code == 429 and "Too many attempts" in page.text
    assert await contact_by_email(client, ws, "p3@mail.example") is None
    # Another form is counted on its own.
    assert (await submit(client, other["id"], email="p3@mail.example")).status_code == 200


async def test_cross_origin_embeds_may_post(client, ws):
    form = await make_form(client, ws)
    preflight = await client.options(
        f"/f/{form['id']}",
        headers={"origin": "https://shop.example", "access-control-request-method": "POST"},
    )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert "content-type" in preflight.headers["access-control-allow-headers"].lower()


async def test_a_deleted_form_takes_no_submissions(client, ws):
    form = await make_form(client, ws)
    await ok(await client.delete(f"/api/v1/forms/{form['id']}", headers=ws.headers))
    answer = await submit(client, form["id"], email=JANE)
    assert (answer.status_code, answer.json()) == (404, {"error": "Form not found"})
    page = await client.post(
        f"/f/{form['id']}", content=urlencode({"email": JANE}), headers=FORM_HEADERS
    )
    assert page.status_code == 404
    assert await contact_by_email(client, ws, JANE) is None


async def test_a_full_workspace_refuses_plainly(client, ws, db):
    from sqlalchemy import update

    from mailroom.models import Account

    async with db.transaction() as session:
        await session.execute(
            update(Account).where(Account.id == ws.account_id).values(plan="free")
        )
    form = await make_form(client, ws, double_opt_in=False)
    # Free plan: double opt-in, so a sender is needed; without one the email cannot go.
    answer = await submit(client, form["id"], email=JANE)
    assert answer.status_code == 422
    assert answer.json()["error"].startswith("Sending is not configured")
    assert await contact_by_email(client, ws, JANE) is None


async def test_an_endpoint_scoped_to_a_form_hears_only_that_forms_submissions(client, db, ws):
    from sqlalchemy import func, select

    from mailroom.models import WebhookDelivery, WebhookEndpoint

    form = await make_form(client, ws)
    other = await make_form(client, ws, name="Other")
    async with db.transaction() as session:
        endpoint = WebhookEndpoint(
            workspace_id=ws.workspace_id,
            url="https://hooks.shop.example/forms",
            event_types=["form.submitted", "contact.created"],
            filters={"form_ids": [form["id"]]},
            secret="whsec_forms",
        )
        session.add(endpoint)
        await session.flush()
        endpoint_id = endpoint.id
    await submit(client, form["id"], email=JANE)
    await submit(client, other["id"], email="other@mail.example")
    await ok(
        await client.post(
            "/api/v1/contacts", json={"email": "api@mail.example"}, headers=ws.headers
        ),
        201,
    )
    async with db.session() as session:
        heard = await session.scalar(
            select(func.count()).where(WebhookDelivery.endpoint_id == endpoint_id)
        )
    assert heard == 2  # this form's form.submitted and contact.created, nothing else
