"""`/app/lists` and `/app/tags`: created from the page (a clash is the API's 409 message and
creates nothing), changed, deleted with the count of contacts that left; counts link to the
filtered contacts; another workspace's group is 404."""

from __future__ import annotations

from contextlib import aclosing

from tests.dashboard.helpers import csrf_of, signed_in


async def _api(client, ws, path: str) -> list:
    answer = await client.get(path, headers=ws.headers)
    assert answer.status_code == 200, answer.text
    return answer.json()


async def test_lists_created_changed_and_deleted(app, client, db, settings, ws, factory):
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/app/lists")
        assert page.status_code == 200 and "No list yet." in page.text
        token = csrf_of(page.text)
        made = await member.post(
            "/app/lists",
            data={"csrf": token, "name": "News", "description": "Weekly", "double_opt_in": "on"},
        )
        assert made.status_code == 303
        [news] = (await _api(client, ws, "/api/v1/lists"))["lists"]
        assert (news["name"], news["description"], news["double_opt_in"]) == (
            "News",
            "Weekly",
            True,
        )
        clash = await member.post("/app/lists", data={"csrf": token, "name": "news"})
        assert clash.status_code == 409 and "A list with this name already exists" in clash.text
        assert len((await _api(client, ws, "/api/v1/lists"))["lists"]) == 1

        contact = await client.post(
            "/api/v1/contacts", json={"email": "a@shop.example"}, headers=ws.headers
        )
        await client.post(
            f"/api/v1/lists/{news['id']}/contacts",
            json={"contact_ids": [contact.json()["contact"]["id"]], "status": "confirmed"},
            headers=ws.headers,
        )
        listed = await member.get("/app/lists")
        assert f'href="/app/contacts?list={news["id"]}">News</a>' in listed.text
        assert "0 confirmed, 1 waiting" in listed.text  # a double opt-in list

        changed = await member.post(
            f"/app/lists/{news['id']}",
            data={"csrf": token, "name": "Newsletter", "description": ""},
        )
        assert changed.status_code == 303
        [renamed] = (await _api(client, ws, "/api/v1/lists"))["lists"]
        assert (renamed["name"], renamed["double_opt_in"]) == ("Newsletter", False)

        gone = await member.post(f"/app/lists/{news['id']}/delete", data={"csrf": token})
        assert gone.status_code == 303
        after = await member.get("/app/lists")
        assert "List “Newsletter” deleted (1 contact left it)." in after.text
        assert (await _api(client, ws, "/api/v1/lists"))["lists"] == []

        other = await factory.workspace("pro")
        theirs = await client.post("/api/v1/lists", json={"name": "Theirs"}, headers=other.headers)
        foreign = await member.get(f"/app/lists/{theirs.json()['list']['id']}")
        assert foreign.status_code == 404 and "Theirs" not in foreign.text


async def test_tags_with_colours(app, client, db, settings, ws):
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        token = csrf_of((await admin.get("/app/tags")).text)
        made = await admin.post(
            "/app/tags", data={"csrf": token, "name": "VIP", "color": "#ff0000"}
        )
        assert made.status_code == 303
        [vip] = (await _api(client, ws, "/api/v1/tags"))["tags"]
        assert (vip["name"], vip["color"]) == ("VIP", "#ff0000")
        page = await admin.get("/app/tags")
        assert 'data-color="#ff0000"' in page.text and "Tag “VIP” created." in page.text
        bad = await admin.post(
            f"/app/tags/{vip['id']}", data={"csrf": token, "name": "VIP", "color": "red"}
        )
        assert bad.status_code == 303
        shown = await admin.get(f"/app/tags/{vip['id']}")
        assert "color" in shown.text.lower() and 'class="flash error"' in shown.text
        assert (await _api(client, ws, "/api/v1/tags"))["tags"][0]["color"] == "#ff0000"
