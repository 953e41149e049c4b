"""`/app/blueprints` as a person uses it: the list (the starters among the account's own, a
"Blueprints" link in the settings menu), capturing the workspace from the page (read back
through the API), uploading a document and the refusals said on the upload form, a blueprint's
page with its document to download, rename and delete (not for a starter), "Apply to this
workspace": a dry run's plan (nothing written), "Apply for real" in a second workspace of the
account (the objects read back through the API, each new endpoint's secret shown once), a
conflict disabling the button and a forced real apply refused with its plan, the guard's
refusal of a webhook URL, a member's missing permission, and another account's blueprint 404."""

from __future__ import annotations

import json
import re
from contextlib import aclosing
from html import unescape
from typing import Any

import pytest
from sqlalchemy import select

from mailroom.blueprints import starters
from mailroom.models import AuditEntry, Person
from mailroom.people import service as people
from mailroom.web.uploads import MULTIPART_OVERHEAD
from tests.dashboard.helpers import csrf_of, form_values, signed_in

PAGE = "/app/blueprints"
ADA = "ada@shop.example"
ALL_PARTS = (
    "custom_fields",
    "tags",
    "lists",
    "segments",
    "templates",
    "automations",
    "forms",
    "webhooks",
    "sending",
)
RECORDER = "http://127.0.0.1:9/recorder"  # conftest's catch-all endpoint of `ws`


@pytest.fixture(autouse=True)
def allow_loopback(settings: Any) -> Any:
    """The webhooks part carries conftest's endpoint on 127.0.0.1: the guard lets it through."""
    settings.webhook_allow_networks = ["127.0.0.0/8"]
    return settings


def text_of(html: str) -> str:
    """The page as read: tags out, entities decoded, blanks folded."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def part_of(html: str, element_id: str) -> str:
    """The text of the element with that id (a card, a table, a paragraph), nested elements of
    its kind included."""
    opening = re.search(rf'<(\w+)[^>]* id="{element_id}"[^>]*>', html)
    assert opening, f"no #{element_id}"
    tag, depth = opening.group(1), 1
    for found in re.finditer(rf"<(/?){tag}\b[^>]*>", html[opening.end() :]):
        depth += -1 if found.group(1) else 1
        if depth == 0:
            return text_of(html[opening.end() : opening.end() + found.start()])
    raise AssertionError(f"#{element_id} is not closed")


def alerts(html: str) -> list[str]:
    return [
        text_of(a) for a in re.findall(r'<p class="flash error" role="alert"[^>]*>(.*?)</p>', html)
    ]


def plan_rows(html: str) -> list[tuple[str, str, str, str]]:
    """The plan table: (part, name, action, reason) per row."""
    table = re.search(r'<table class="stack" id="plan-rows">(.*?)</table>', html, re.S)
    assert table, "no plan table"
    rows = []
    for row in re.findall(r"<tr>\s*<td.*?</tr>", table.group(1), re.S):
        cells = [text_of(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        rows.append((cells[0], cells[1], cells[2], cells[3]))
    return rows


async def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


async def follow(browser: Any, answer: Any) -> Any:
    assert answer.status_code == 303, answer.text
    return await browser.get(answer.headers["location"])


async def post_form(browser: Any, html: str, form_id: str, **changes: str | None) -> Any:
    """The form posted as a browser does from the page as shown, with `changes` (None: the
    field left out, as an unticked box)."""
    action = re.search(rf'<form [^>]*action="([^"]+)"[^>]*id="{form_id}"', html)
    assert action, f"no form {form_id}"
    values = form_values(html, form_id)
    for name, value in changes.items():
        if value is None:
            values.pop(name, None)
        else:
            values[name] = value
    return await browser.post(action.group(1), data=values)


async def upload(browser: Any, content: bytes, filename: str = "blueprint.json") -> Any:
    token = csrf_of((await browser.get(PAGE)).text)
    return await browser.post(
        f"{PAGE}/import",
        data={"csrf": token},
        files={"file": (filename, content, "application/json")},
    )


async def blueprints_of(client: Any, ws: Any) -> list[dict[str, Any]]:
    listed = await ok(await client.get("/api/v1/blueprints?limit=100", headers=ws.headers))
    found: list[dict[str, Any]] = listed["blueprints"]
    return found


async def own_blueprints(client: Any, ws: Any) -> list[dict[str, Any]]:
    return [b for b in await blueprints_of(client, ws) if not b["starter"]]


async def set_up(client: Any, ws: Any) -> None:
    """A custom field, a tag, a list, a template and the sender's details in `ws`."""
    h = ws.headers
    await ok(
        await client.post(
            "/api/v1/custom-fields",
            headers=h,
            json={"key": "plan", "label": "Plan", "type": "dropdown", "options": ["Free", "Pro"]},
        ),
        201,
    )
    await ok(
        await client.post("/api/v1/tags", headers=h, json={"name": "VIP", "color": "#2563eb"}), 201
    )
    await ok(
        await client.post(
            "/api/v1/lists", headers=h, json={"name": "Newsletter", "double_opt_in": True}
        ),
        201,
    )
    await ok(
        await client.post(
            "/api/v1/templates",
            headers=h,
            json={"name": "Welcome", "subject": "Welcome", "html_content": "<p>Hi</p>"},
        ),
        201,
    )
    await ok(
        await client.patch(
            "/api/v1/sending", headers=h, json={"from_name": "Acme News", "reply_to": "hi@acme.io"}
        )
    )


async def second_workspace(db: Any, factory: Any, ws: Any, name: str = "Second shop") -> Any:
    """Another workspace of `ws`'s account (no endpoint of its own), Ada an admin of it."""
    second = await factory.workspace(account_id=ws.account_id, name=name, listen=False)
    async with db.transaction() as session:
        ada = await session.scalar(select(Person).where(Person.email == ADA))
        await people.set_role(session, ada, second.workspace_id, "admin")
    return second


async def switch_to(browser: Any, workspace_id: str) -> None:
    home = await browser.get("/app")
    moved = await browser.post(
        "/app/workspace", data={"csrf": csrf_of(home.text), "workspace_id": workspace_id}
    )
    assert moved.status_code == 303, moved.text


async def test_the_list_and_capturing_this_workspace(app, client, db, settings, ws):
    await set_up(client, ws)
    ada = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(ada):
        home = await ada.get("/app")
        assert f'<a href="{PAGE}">Blueprints</a>' in home.text

        page = await ada.get(PAGE)
        assert page.status_code == 200
        assert "<title>Blueprints · Mailroom</title>" in page.text
        assert f'<a href="{PAGE}" aria-current="page">Blueprints</a>' in page.text
        # The starters are listed like the account's own, with their badge.
        listed = part_of(page.text, "blueprint-list")
        for starter_id in ("starter-newsletter", "starter-shop"):
            assert f'<a href="{PAGE}/{starter_id}">' in page.text
        assert listed.count("starter") == 2
        assert listed.count("Ships with Mailroom") == 2
        # The capture form: every part offered and ticked.
        capture = form_values(page.text, "capture-form")
        assert [k for k in capture if k.startswith("include_")] == [
            f"include_{p}" for p in ALL_PARTS
        ]
        name = f"Workspace {ws.workspace_id[:8]}"
        assert f"Makes a blueprint of {name} as it is now." in text_of(page.text)

        # Only tags and lists, from the page.
        unticked = {f"include_{p}": None for p in ALL_PARTS if p not in ("tags", "lists")}
        made = await post_form(
            ada,
            page.text,
            "capture-form",
            name="  Shop   set-up ",
            description="Tags and lists of the shop",
            **unticked,
        )
        assert made.status_code == 303, made.text
        blueprint_id = made.headers["location"].rsplit("/", 1)[1]
        shown = await ada.get(made.headers["location"])
        assert shown.status_code == 200
        assert f"Blueprint “Shop set-up” captured from {name}." in text_of(shown.text)
        assert "<h1>Shop set-up</h1>" in shown.text
        assert part_of(shown.text, "blueprint-contents") == "Tags (1) VIP Lists (1) Newsletter"

        [kept] = await own_blueprints(client, ws)
        assert kept["id"] == blueprint_id
        assert (kept["name"], kept["description"]) == ("Shop set-up", "Tags and lists of the shop")
        assert (kept["parts"], kept["counts"]) == (["tags", "lists"], {"tags": 1, "lists": 1})
        assert kept["source_workspace_id"] == ws.workspace_id

        again = await ada.get(PAGE)
        row = re.search(
            rf'<tr>\s*<td data-label="Blueprint"><a href="{PAGE}/{blueprint_id}">.*?</tr>',
            again.text,
            re.S,
        )
        assert row, again.text
        assert text_of(row.group(0)).startswith(
            f"Shop set-up Tags and lists of the shop Tags 1 Lists 1 Captured from {name} "
        )

        # Refusals are said on the capture form, what was typed kept; nothing is made.
        none = await post_form(
            ada,
            page.text,
            "capture-form",
            name="Nothing",
            **{f"include_{p}": None for p in ALL_PARTS},
        )
        assert none.status_code == 400
        assert part_of(none.text, "capture-problem") == "Choose at least one part to capture."
        assert form_values(none.text, "capture-form")["name"] == "Nothing"
        assert [k for k in form_values(none.text, "capture-form") if k.startswith("include_")] == []
        nameless = await post_form(ada, page.text, "capture-form", name="   ")
        assert nameless.status_code == 400
        assert part_of(nameless.text, "capture-problem") == "name is required"
        assert len(await own_blueprints(client, ws)) == 1

        audited = await ada.get("/settings/audit-log")
        assert "capture_blueprint" in audited.text


async def test_uploading_a_document_and_the_refusals(app, client, db, settings, ws):
    document = {
        "mailroom_blueprint": 1,
        "name": "Uploaded",
        "description": "From a file",
        "parts": {
            "tags": [{"name": "VIP"}],
            "lists": [{"name": "Newsletter"}],
        },
    }
    ada = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(ada):
        made = await upload(ada, json.dumps(document).encode())
        shown = await follow(ada, made)
        assert "Blueprint “Uploaded” imported." in text_of(shown.text)
        assert part_of(shown.text, "blueprint-about").startswith(
            "From a file From Imported from a document Created "
        )
        [kept] = await own_blueprints(client, ws)
        assert kept["source_workspace_id"] is None
        read = await ok(
            await client.get(f"/api/v1/blueprints/{kept['id']}/document", headers=ws.headers)
        )
        assert read["name"] == "Uploaded"
        assert [t["name"] for t in read["parts"]["tags"]] == ["VIP"]
        assert [t["name"] for t in read["parts"]["lists"]] == ["Newsletter"]

        # A document the service refuses: its message, on the upload form, as the API says it.
        dangling = {
            "mailroom_blueprint": 1,
            "name": "Dangling",
            "parts": {
                "segments": [
                    {
                        "name": "VIPs",
                        "rules": {
                            "match": "all",
                            "conditions": [{"field": "tags", "op": "has_any", "value": ["Gold"]}],
                        },
                    }
                ]
            },
        }
        api = await client.post("/api/v1/blueprints/import", headers=ws.headers, json=dangling)
        assert api.status_code == 400
        refused = await upload(ada, json.dumps(dangling).encode())
        assert refused.status_code == 400
        assert part_of(refused.text, "upload-problem") == api.json()["error"]
        assert "Gold" in api.json()["error"]
        assert alerts(refused.text) == [api.json()["error"]]

        newer = {**document, "mailroom_blueprint": 2}
        refused = await upload(ada, json.dumps(newer).encode())
        assert (refused.status_code, part_of(refused.text, "upload-problem")) == (
            400,
            "mailroom_blueprint: unsupported version 2 (this Mailroom reads 1)",
        )
        refused = await upload(ada, b"name,parts\nnot,json\n", "export.csv")
        assert (refused.status_code, part_of(refused.text, "upload-problem")) == (
            400,
            "That file is not JSON: upload a blueprint document as downloaded from Mailroom.",
        )
        refused = await upload(ada, b"[1, 2]")
        assert (refused.status_code, part_of(refused.text, "upload-problem")) == (
            400,
            "That file is not a blueprint document: it must hold one JSON object.",
        )
        token = csrf_of((await ada.get(PAGE)).text)
        refused = await ada.post(
            f"{PAGE}/import", data={"csrf": token}, files={"file": ("", b"", "application/json")}
        )
        assert (refused.status_code, part_of(refused.text, "upload-problem")) == (
            400,
            "Choose a blueprint document (a .json file) to upload.",
        )
        # Over the cap: said on the form; a body past it by more than a form's overhead is
        # not read at all, and the page says why.
        settings.max_json_body_bytes = 1000
        big = {**document, "description": "x" * 990}
        answer = await upload(ada, json.dumps(big).encode())
        assert (answer.status_code, part_of(answer.text, "upload-problem")) == (
            413,
            "File too large: a blueprint document can be up to 1,000 bytes.",
        )
        huge = {**document, "description": "x" * (MULTIPART_OVERHEAD + 1000)}
        answer = await upload(ada, json.dumps(huge).encode())
        assert answer.status_code == 303 and answer.headers["location"] == f"{PAGE}?too_large=1"
        said = await ada.get(answer.headers["location"])
        assert part_of(said.text, "upload-problem") == (
            "File too large: a blueprint document can be up to 1,000 bytes."
        )
        assert len(await own_blueprints(client, ws)) == 1


async def test_download_rename_and_delete(app, client, db, settings, ws):
    await set_up(client, ws)
    made = await ok(
        await client.post(
            "/api/v1/blueprints",
            headers=ws.headers,
            json={"name": "Shop: set-up/2025", "include": ["tags", "lists"]},
        ),
        201,
    )
    blueprint_id = made["blueprint"]["id"]
    ada = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(ada):
        page = await ada.get(f"{PAGE}/{blueprint_id}")
        link = f'<a class="button secondary" href="{PAGE}/{blueprint_id}/document" download>'
        assert link + "Download document</a>" in page.text
        got = await ada.get(f"{PAGE}/{blueprint_id}/document")
        assert got.status_code == 200
        assert got.headers["content-type"] == "application/json"
        assert got.headers["content-disposition"] == (
            "attachment; filename=\"Shop set-up2025.json\"; filename*=UTF-8''Shop%20set-up2025.json"
        )
        api = await ok(
            await client.get(f"/api/v1/blueprints/{blueprint_id}/document", headers=ws.headers)
        )
        assert got.json() == api

        renamed = await post_form(
            ada, page.text, "rename-form", name="Shop basics", description="Tags and lists"
        )
        shown = await follow(ada, renamed)
        assert "Blueprint “Shop basics” saved." in text_of(shown.text)
        read = await ok(await client.get(f"/api/v1/blueprints/{blueprint_id}", headers=ws.headers))
        assert (read["blueprint"]["name"], read["blueprint"]["description"]) == (
            "Shop basics",
            "Tags and lists",
        )
        refused = await post_form(ada, shown.text, "rename-form", name="")
        assert refused.status_code == 400
        assert part_of(refused.text, "rename-problem") == "name is required"

        assert f'<a class="button secondary" href="{PAGE}/{blueprint_id}/delete">Delete…</a>' in (
            shown.text
        )
        question = await ada.get(f"{PAGE}/{blueprint_id}/delete")
        assert "<h1>Delete “Shop basics”?</h1>" in question.text
        gone = await ada.post(
            f"{PAGE}/{blueprint_id}/delete", data={"csrf": csrf_of(question.text)}
        )
        listed = await follow(ada, gone)
        assert "Blueprint “Shop basics” deleted" in text_of(listed.text)
        assert blueprint_id not in listed.text
        missing = await client.get(f"/api/v1/blueprints/{blueprint_id}", headers=ws.headers)
        assert missing.status_code == 404

        # A starter: no rename or delete on its page, and the service refuses them anyway.
        starter = await ada.get(f"{PAGE}/starter-newsletter")
        assert starter.status_code == 200
        assert 'id="rename-form"' not in starter.text and "/delete" not in starter.text
        assert "cannot be renamed or deleted" in text_of(starter.text)
        assert "Ships with Mailroom" in part_of(starter.text, "blueprint-about")
        tried = await ada.post(
            f"{PAGE}/starter-newsletter/delete", data={"csrf": csrf_of(starter.text)}
        )
        again = await follow(ada, tried)
        assert alerts(again.text) == [starters.READ_ONLY]
        # Applied like any: its plan for this workspace, nothing written by the dry run.
        dry = await post_form(ada, again.text, "dry-run-form")
        assert dry.status_code == 200, dry.text
        rows = plan_rows(dry.text)
        actions = {action for _part, _name, action, _reason in rows}
        assert "create" in actions and actions <= {"create", "skip", "unchanged"}
        assert "Forms" in [part for part, _name, _action, _reason in rows]
        assert (await ok(await client.get("/api/v1/forms", headers=ws.headers)))["forms"] == []


async def test_a_dry_run_then_apply_for_real_in_a_second_workspace(
    app, client, db, settings, ws, factory
):
    await set_up(client, ws)
    ada = await signed_in(app, db, settings, ws, ADA)
    second = await second_workspace(db, factory, ws)
    async with aclosing(ada):
        page = await ada.get(PAGE)
        unticked = {"include_automations": None, "include_forms": None, "include_segments": None}
        made = await post_form(ada, page.text, "capture-form", name="Shop set-up", **unticked)
        assert made.status_code == 303, made.text
        here = made.headers["location"]

        await switch_to(ada, second.workspace_id)
        page = await ada.get(here)
        assert "Into Second shop ." in part_of(page.text, "apply")
        assert form_values(page.text, "dry-run-form")["on_conflict"] == "skip"
        dry = await post_form(ada, page.text, "dry-run-form")
        assert dry.status_code == 200, dry.text
        said = text_of(dry.text)
        assert "The plan (dry run: nothing changed)" in said
        assert plan_rows(dry.text) == [
            ("Custom fields", "plan", "create", ""),
            ("Tags", "VIP", "create", ""),
            ("Lists", "Newsletter", "create", ""),
            ("Templates", "Welcome", "create", ""),
            ("Webhook endpoints", RECORDER, "create", ""),
            ("Sending settings", "sending", "create", ""),
        ]
        assert part_of(dry.text, "plan-counts") == (
            "Create 6 Update 0 Unchanged 0 Skip 0 Conflict 0"
        )
        assert (await ok(await client.get("/api/v1/tags", headers=second.headers)))["tags"] == []
        confirm = form_values(dry.text, "apply-form")
        assert (confirm["dry_run"], confirm["on_conflict"]) == ("false", "skip")
        assert '<button type="submit">Apply for real</button>' in dry.text

        real = await post_form(ada, dry.text, "apply-form")
        assert real.status_code == 200, real.text
        said = text_of(real.text)
        assert "Applied to Second shop: 6 created, 0 updated, 0 unchanged, 0 skipped." in said
        assert "apply-form" not in real.text
        secrets = part_of(real.text, "secrets")
        assert "Copy them now: each is shown this once and cannot be read again." in secrets
        [(url, secret)] = re.findall(
            r"Secret of <code class=\"wrap\">([^<]+)</code></label>\s*"
            r'<textarea class="secret" id="secret-1" rows="2" readonly>([^<]+)</textarea>',
            real.text,
        )
        assert url == RECORDER and len(secret) >= 20

        # Read back through the API: the objects are in the second workspace.
        h = second.headers
        tags = await ok(await client.get("/api/v1/tags", headers=h))
        assert [(t["name"], t["color"]) for t in tags["tags"]] == [("VIP", "#2563eb")]
        lists = await ok(await client.get("/api/v1/lists", headers=h))
        assert [(m["name"], m["double_opt_in"]) for m in lists["lists"]] == [("Newsletter", True)]
        fields = await ok(await client.get("/api/v1/custom-fields", headers=h))
        assert [f["key"] for f in fields["fields"]] == ["plan"]
        hooks = await ok(await client.get("/api/v1/webhooks", headers=h))
        assert [w["url"] for w in hooks["webhooks"]] == [RECORDER]
        async with db.transaction() as session:
            entry = await session.scalar(
                select(AuditEntry).where(
                    AuditEntry.operation == "apply_blueprint",
                    AuditEntry.workspace_id == second.workspace_id,
                )
            )
        assert entry is not None

        # Shown once: the page again has no secret, and a second apply is all unchanged.
        later = await ada.get(here)
        assert secret not in later.text and 'id="secrets"' not in later.text
        again = await post_form(ada, later.text, "dry-run-form")
        assert {row[2] for row in plan_rows(again.text)} == {"unchanged"}
        assert (
            part_of(again.text, "plan-counts") == "Create 0 Update 0 Unchanged 6 Skip 0 Conflict 0"
        )


async def test_skip_or_update_and_conflicts(app, client, db, settings, ws, factory):
    await set_up(client, ws)
    made = await ok(
        await client.post(
            "/api/v1/blueprints",
            headers=ws.headers,
            json={"name": "Fields and tags", "include": ["custom_fields", "tags"]},
        ),
        201,
    )
    here = f"{PAGE}/{made['blueprint']['id']}"
    ada = await signed_in(app, db, settings, ws, ADA)
    second = await second_workspace(db, factory, ws)
    await ok(
        await client.post(
            "/api/v1/tags", headers=second.headers, json={"name": "vip", "color": "#000000"}
        ),
        201,
    )
    async with aclosing(ada):
        await switch_to(ada, second.workspace_id)
        page = await ada.get(here)
        skipped = await post_form(ada, page.text, "dry-run-form")
        other = "an object of this name exists here with other content"
        assert plan_rows(skipped.text) == [
            ("Custom fields", "plan", "create", ""),
            ("Tags", "VIP", "skip", other),
        ]
        updating = await post_form(ada, skipped.text, "dry-run-form", on_conflict="update")
        assert plan_rows(updating.text)[1] == ("Tags", "VIP", "update", other)
        assert form_values(updating.text, "dry-run-form")["on_conflict"] == "update"
        assert form_values(updating.text, "apply-form")["on_conflict"] == "update"
        real = await post_form(ada, updating.text, "apply-form")
        assert "Applied to Second shop: 1 created, 1 updated, 0 unchanged, 0 skipped." in (
            text_of(real.text)
        )
        assert 'id="secrets"' not in real.text
        tags = await ok(await client.get("/api/v1/tags", headers=second.headers))
        assert [(t["name"], t["color"]) for t in tags["tags"]] == [("vip", "#2563eb")]

        # A conflict: shown with its reason, "Apply for real" disabled; forced, refused.
        third = await second_workspace(db, factory, ws, "Third shop")
        await ok(
            await client.post(
                "/api/v1/custom-fields",
                headers=third.headers,
                json={"key": "plan", "type": "text"},
            ),
            201,
        )
        await switch_to(ada, third.workspace_id)
        page = await ada.get(here)
        dry = await post_form(ada, page.text, "dry-run-form")
        reason = "a custom field plan exists here with type text, not dropdown"
        assert plan_rows(dry.text) == [
            ("Custom fields", "plan", "conflict", reason),
            ("Tags", "VIP", "create", ""),
        ]
        assert part_of(dry.text, "plan-conflicted").startswith("The plan has conflicts")
        assert (
            '<button type="submit" class="secondary" disabled aria-describedby="plan-conflicted">'
            "Apply for real</button>"
        ) in dry.text
        forced = await post_form(ada, dry.text, "apply-form")
        assert forced.status_code == 409
        assert alerts(forced.text) == ["Blueprint conflicts with this workspace"]
        assert "The plan (nothing was applied)" in text_of(forced.text)
        assert plan_rows(forced.text) == plan_rows(dry.text)
        assert (await ok(await client.get("/api/v1/tags", headers=third.headers)))["tags"] == []


async def test_refusals_show_on_the_page(app, client, db, settings, ws, factory):
    ada = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(ada):
        # The guard refuses a webhook URL: 400 naming it, said in the apply card.
        private = {
            "mailroom_blueprint": 1,
            "name": "Private hook",
            "parts": {
                "tags": [{"name": "VIP"}],
                "webhooks": [{"url": "https://10.1.2.3/hook", "event_types": ["contact.created"]}],
            },
        }
        shown = await follow(ada, await upload(ada, json.dumps(private).encode()))
        dry = await post_form(ada, shown.text, "dry-run-form")
        assert dry.status_code == 400
        [said] = alerts(dry.text)
        assert said.startswith("webhooks[0].url is not allowed: ")
        assert part_of(dry.text, "apply-problem") == said
        assert 'id="plan-rows"' not in dry.text
        assert (await ok(await client.get("/api/v1/tags", headers=ws.headers)))["tags"] == []

        # A bad on_conflict from a hand-made form: the service's message.
        odd = await post_form(ada, shown.text, "dry-run-form", on_conflict="merge")
        assert (odd.status_code, alerts(odd.text)) == (400, ["on_conflict must be skip or update"])

    # A member holds no webhooks permission: not offered to capture, and applying a
    # blueprint with endpoints is refused with the service's 403, on the page.
    mo = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(mo):
        page = await mo.get(PAGE)
        assert "include_webhooks" not in form_values(page.text, "capture-form")
        assert "Webhook endpoints (needs webhooks:read)" in part_of(page.text, "capture")
        made = await post_form(mo, page.text, "capture-form", name="Mine")
        assert made.status_code == 303, made.text
        [own] = [b for b in await own_blueprints(client, ws) if b["name"] == "Mine"]
        assert "webhooks" not in own["parts"]

        [hooked] = [b for b in await own_blueprints(client, ws) if b["name"] == "Private hook"]
        page = await mo.get(f"{PAGE}/{hooked['id']}")
        refused = await post_form(mo, page.text, "dry-run-form")
        assert refused.status_code == 403
        assert part_of(refused.text, "apply-problem") == (
            "Forbidden: webhooks:write permission required"
        )


async def test_another_accounts_blueprint_is_not_found(app, client, db, settings, ws, factory):
    other = await factory.workspace()
    theirs = await ok(
        await client.post(
            "/api/v1/blueprints",
            headers=other.headers,
            json={"name": "Theirs", "include": ["tags"]},
        ),
        201,
    )
    their_id = theirs["blueprint"]["id"]
    ada = await signed_in(app, db, settings, ws, ADA)
    async with aclosing(ada):
        listed = await ada.get(PAGE)
        assert their_id not in listed.text and "Theirs" not in listed.text
        token = csrf_of(listed.text)
        for answer in (
            await ada.get(f"{PAGE}/{their_id}"),
            await ada.get(f"{PAGE}/{their_id}/document"),
            await ada.get(f"{PAGE}/{their_id}/delete"),
            await ada.post(f"{PAGE}/{their_id}/apply", data={"csrf": token, "dry_run": "true"}),
            await ada.post(f"{PAGE}/{their_id}", data={"csrf": token, "name": "Mine now"}),
            await ada.post(f"{PAGE}/{their_id}/delete", data={"csrf": token}),
        ):
            assert answer.status_code == 404, answer.text
            assert "Blueprint not found" in text_of(answer.text)
    kept = await ok(await client.get(f"/api/v1/blueprints/{their_id}", headers=other.headers))
    assert kept["blueprint"]["name"] == "Theirs"
