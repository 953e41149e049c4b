"""`/app/segments`: the builder counts as conditions are added (the API's preview), takes tags
and lists by name, nests a group, refuses what the API refuses with its message, saves a
segment the API reads back, opens it again as the same form, and deletes it."""

from __future__ import annotations

import re
from contextlib import aclosing

from tests.dashboard.helpers import csrf_of, signed_in


async def _contact(client, ws, email: str, **extra) -> str:
    made = await client.post("/api/v1/contacts", json={"email": email, **extra}, headers=ws.headers)
    assert made.status_code == 201, made.text
    return made.json()["contact"]["id"]


def _count(html: str) -> int:
    return int(re.search(r'<p class="figure">([\d,]+)', html).group(1).replace(",", ""))


async def test_build_count_save_reopen_and_delete(app, client, db, settings, ws):
    vip = (await client.post("/api/v1/tags", json={"name": "VIP"}, headers=ws.headers)).json()
    ann = await _contact(client, ws, "ann@mailtest.io", first_name="Ann")
    await _contact(client, ws, "bob@mailtest.io", first_name="Bob")
    await _contact(client, ws, "cy@other.io", first_name="Cy")
    tagged = await client.post(
        f"/api/v1/contacts/{ann}/tags", json={"tag_id": vip["tag"]["id"]}, headers=ws.headers
    )
    assert tagged.status_code in (200, 201), tagged.text
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        new = await member.get("/app/segments/new")
        token = csrf_of(new.text)
        form = {
            "csrf": token,
            "name": "Mailtest VIPs",
            "match_top": "all",
            "field_0": "email",
            "op_0": "ends_with",
            "value_0": "@mailtest.io",
            "group_0": "",
        }
        counted = await member.post(
            "/app/segments/builder", data=form, headers={"HX-Request": "true"}
        )
        assert counted.status_code == 200 and "<html" not in counted.text
        assert _count(counted.text) == 2
        added = await member.post("/app/segments/builder", data={**form, "add": "1"})
        assert 'name="field_1"' in added.text  # a new row, the whole page without script
        narrowed = {**form, "field_1": "tags", "op_1": "has_any", "value_1": "vip", "group_1": ""}
        assert _count((await member.post("/app/segments/builder", data=narrowed)).text) == 1

        unknown = {**narrowed, "value_1": "Nobody"}
        refused = await member.post("/app/segments/builder", data=unknown)
        assert "No tag is named Nobody" in refused.text
        bad_op = {**form, "op_0": "gt"}
        assert "conditions[0].op" in (await member.post("/app/segments/builder", data=bad_op)).text

        grouped = {
            **narrowed,
            "match_top": "any",
            "group_1": "g1",
            "gparent_g1": "",
            "match_g1": "all",
            "field_2": "first_name",
            "op_2": "eq",
            "value_2": "Cy",
            "group_2": "g1",
        }
        # (ends with @mailtest.io) OR (VIP AND first name Cy): 2 contacts.
        assert _count((await member.post("/app/segments/builder", data=grouped)).text) == 2

        saved = await member.post("/app/segments/save", data=narrowed)
        assert saved.status_code == 303
        segment_id = saved.headers["location"].rsplit("/", 1)[1]
        stored = await client.get(f"/api/v1/segments/{segment_id}", headers=ws.headers)
        rules = stored.json()["segment"]["rules"]
        assert rules["conditions"][1] == {
            "field": "tags",
            "op": "has_any",
            "value": [vip["tag"]["id"]],
        }
        reopened = await member.get(f"/app/segments/{segment_id}")
        assert 'value="VIP"' in reopened.text and "Segment “Mailtest VIPs” saved." in reopened.text
        assert _count(reopened.text) == 1
        listed = await member.get(f"/app/contacts?segment={segment_id}")
        assert "ann@mailtest.io" in listed.text and "bob@mailtest.io" not in listed.text

        clash = await member.post("/app/segments/save", data={**narrowed, "name": "mailtest vips"})
        assert clash.status_code == 409 and "already exists" in clash.text
        gone = await member.post(f"/app/segments/{segment_id}/delete", data={"csrf": token})
        assert gone.status_code == 303
        assert (
            await client.get(f"/api/v1/segments/{segment_id}", headers=ws.headers)
        ).status_code == 404


async def test_groups_open_nest_and_come_back_as_saved(app, client, db, settings, ws):
    """A row asks for a new group, then a group inside it; a rule the API saved three levels
    deep with an activity condition on one campaign opens as the same form and saves back the
    same rule."""
    campaign = await client.post(
        "/api/v1/campaigns",
        json={"name": "Spring sale", "subject": "Hi", "html": "<p>Hi</p>"},
        headers=ws.headers,
    )
    assert campaign.status_code == 201, campaign.text
    campaign_id = campaign.json()["campaign"]["id"]
    await _contact(client, ws, "ann@mailtest.io", first_name="Ann")
    await _contact(client, ws, "bob@mailtest.io", first_name="Bob")
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        token = csrf_of((await member.get("/app/segments/new")).text)
        form = {
            "csrf": token,
            "name": "Nested",
            "match_top": "all",
            "field_0": "email",
            "op_0": "ends_with",
            "value_0": "@mailtest.io",
            "group_0": "",
            "field_1": "first_name",
            "op_1": "eq",
            "value_1": "Ann",
            "group_1": "new",
        }
        opened = await member.post("/app/segments/builder", data=form)
        assert 'name="gparent_g1" value=""' in opened.text
        assert '<option value="g1" selected>group 1</option>' in opened.text
        assert '<option value="new:g1">a new group in group 1</option>' in opened.text
        assert _count(opened.text) == 1
        inner = {
            **form,
            "group_1": "g1",
            "gparent_g1": "",
            "match_g1": "any",
            "field_2": "first_name",
            "op_2": "eq",
            "value_2": "Bob",
            "group_2": "new:g1",
        }
        nested = await member.post("/app/segments/builder", data=inner)
        assert 'name="gparent_g2" value="g1"' in nested.text
        assert "Group 1.1 (in group 1) matches" in nested.text
        # mailtest AND (Ann OR (Bob)): both.
        assert _count(nested.text) == 2

        emptied = {**inner, "group_1": "g1", "group_2": "g2", "gparent_g2": "g1"}
        emptied["remove_2"] = "on"
        assert (
            'name="gparent_g2"'
            not in (await member.post("/app/segments/builder", data=emptied)).text
        )  # a group left without conditions is gone

    rule = {
        "match": "any",
        "conditions": [
            {"field": "email", "op": "ends_with", "value": "@other.io"},
            {
                "match": "all",
                "conditions": [
                    {"field": "first_name", "op": "eq", "value": "Ann"},
                    {
                        "match": "any",
                        "conditions": [
                            {
                                "field": "activity",
                                "op": "not_opened",
                                "value": {"campaign_id": campaign_id, "within_days": 30},
                            },
                            {"field": "last_name", "op": "is_not_set"},
                        ],
                    },
                ],
            },
        ],
    }
    made = await client.post(
        "/api/v1/segments", json={"name": "Deep", "rules": rule}, headers=ws.headers
    )
    assert made.status_code == 201, made.text
    segment_id = made.json()["segment"]["id"]
    member = await signed_in(app, db, settings, ws, "al@shop.example", role="member")
    async with aclosing(member):
        page = await member.get(f"/app/segments/{segment_id}")
        assert f'<option value="{campaign_id}" selected>Spring sale</option>' in page.text
        assert 'name="gparent_g2" value="g1"' in page.text
        form = {"csrf": csrf_of(page.text), "segment_id": segment_id}
        form.update(
            re.findall(
                r'<input type="(?:text|hidden)" [^>]*?name="([^"]+)" value="([^"]*)"', page.text
            )
        )
        for name, options in re.findall(
            r'<select id="[^"]*" name="([^"]+)">(.*?)</select>', page.text, re.S
        ):
            form[name] = re.search(r'<option value="([^"]*)" selected', options).group(1)
        form["csrf"] = csrf_of(page.text)
        saved = await member.post("/app/segments/save", data=form)
        assert saved.status_code == 303, saved.text
    stored = await client.get(f"/api/v1/segments/{segment_id}", headers=ws.headers)
    assert stored.json()["segment"]["rules"] == rule


async def test_a_new_segment_opens_without_an_error_and_reads_in_words(
    app, client, db, settings, ws
):
    """Issue 25: the new-segment page opened with "conditions[0].value: must be a non-empty
    string" (its first, empty row was counted), and operators read `eq`, `neq`."""
    await _contact(client, ws, "ann@mailtest.io", first_name="Ann")
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        new = await member.get("/app/segments/new")
        assert new.status_code == 200
        assert 'class="flash error"' not in new.text
        assert "the number of contacts who match shows here" in new.text
        assert '<option value="contains" selected>contains</option>' in new.text
        assert '<option value="eq">is</option>' in new.text
        assert '<option value="neq">is not</option>' in new.text
        assert ">eq<" not in new.text and ">neq<" not in new.text
        form = {
            "csrf": csrf_of(new.text),
            "name": "Ann",
            "match_top": "all",
            "field_0": "first_name",
            "op_0": "eq",
            "value_0": "Ann",
            "group_0": "",
        }
        # A condition just added (still blank) is not counted, and is no error yet...
        added = await member.post("/app/segments/builder", data={**form, "add": "1"})
        assert 'name="field_1"' in added.text and 'class="flash error"' not in added.text
        assert _count(added.text) == 1
        days = await member.post(
            "/app/segments/builder",
            data={
                **form,
                "field_1": "created_at",
                "op_1": "within_last",
                "value_1": "",
                "group_1": "",
            },
        )
        assert '<option value="within_last" selected>within the last (days)</option>' in days.text
        # ...but saving judges every row, with the API's message, and saves nothing.
        blank = {**form, "field_1": "email", "op_1": "contains", "value_1": "", "group_1": ""}
        refused = await member.post("/app/segments/save", data=blank)
        assert refused.status_code == 400
        assert "conditions[1].value: must be a non-empty string" in refused.text
        listed = await client.get("/api/v1/segments", headers=ws.headers)
        assert listed.json()["segments"] == []
