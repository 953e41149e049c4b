"""`/app/forms`: a form built on the page (fields asked in the chosen order with their labels,
a list, double opt-in off), its hosted link, embed code and preview, the counts after a
submission, the API's refusals, delete."""

from __future__ import annotations

import re
from contextlib import aclosing

from tests.dashboard.helpers import csrf_of, signed_in


async def test_build_a_form_submit_it_and_delete_it(app, client, db, settings, ws):
    news = (await client.post("/api/v1/lists", json={"name": "News"}, headers=ws.headers)).json()
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/app/forms/new")
        token = csrf_of(page.text)
        rows = {"key_0": "email", "key_1": "first_name", "key_2": "last_name"}
        body = {
            "csrf": token,
            "name": "Footer signup",
            **rows,
            "ask_1": "on",
            "label_1": "Your first name",
            "required_1": "on",
            "order_1": "1",
            "order_0": "2",
            "list_ids": [news["list"]["id"]],
            "success_message": "Thanks!",
            "redirect_url": "",
            "consent_text": "",
            "languages": ["en", "fr"],
        }
        bad = await member.post("/app/forms/save", data={**body, "redirect_url": "ftp://x"})
        assert bad.status_code == 400 and "redirect_url" in bad.text
        saved = await member.post("/app/forms/save", data=body)
        assert saved.status_code == 303, re.findall(r"flash error[^<]*<", saved.text)
        form_id = saved.headers["location"].rsplit("/", 1)[1]
        stored = (await client.get(f"/api/v1/forms/{form_id}", headers=ws.headers)).json()["form"]
        assert [f["key"] for f in stored["fields"]] == ["first_name", "email"]
        assert stored["fields"][0]["label"] == "Your first name" and stored["fields"][0]["required"]
        assert stored["list_ids"] == [news["list"]["id"]] and stored["double_opt_in"] is False
        assert stored["languages"] == ["en", "fr"]

        shown = await member.get(f"/app/forms/{form_id}")
        assert f"/f/{form_id}" in shown.text and "&lt;form" in shown.text  # the embed code
        assert f'src="/f/{form_id}"' in shown.text and "0 submissions" in shown.text
        submitted = await client.post(
            f"/f/{form_id}", json={"email": "new@mailtest.io", "first_name": "Nia"}
        )
        assert submitted.status_code == 200, submitted.text
        assert "1 submission," in (await member.get(f"/app/forms/{form_id}")).text

        gone = await member.post(f"/app/forms/{form_id}/delete", data={"csrf": token})
        assert gone.status_code == 303
        assert (await client.get(f"/f/{form_id}")).status_code == 404


async def test_the_builder_previews_the_form_before_it_is_saved(app, client, db, settings, ws):
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        token = csrf_of((await member.get("/app/forms/new")).text)
        draft = {
            "csrf": token,
            "name": "Footer",
            "key_0": "email",
            "ask_0": "on",
            "order_0": "1",
            "key_1": "first_name",
            "ask_1": "on",
            "label_1": "Your first name",
            "required_1": "on",
            "order_1": "2",
            "key_2": "last_name",
            "order_2": "3",
            "consent_text": "We write once a month.",
            "languages": "fr",
        }
        shown = await member.post("/app/forms/draft-preview", data=draft)
        assert shown.status_code == 200
        assert "Your first name" in shown.text and "We write once a month." in shown.text
        assert 'lang="fr"' in shown.text
        assert 'name="last_name"' not in shown.text  # not asked
        policy = shown.headers["content-security-policy"]
        assert "form-action 'none'" in policy and "frame-ancestors 'self'" in policy
        unknown = await member.post(
            "/app/forms/draft-preview", data={**draft, "key_2": "shoe_size", "ask_2": "on"}
        )
        assert unknown.status_code == 400 and "shoe_size" in unknown.text
    listed = await client.get("/api/v1/forms", headers=ws.headers)
    assert listed.json()["forms"] == []  # a preview saves nothing
