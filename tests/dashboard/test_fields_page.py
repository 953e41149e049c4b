"""`/app/fields`: the registry with usage, add a field, a type change over stored values that
do not fit asks again (the API's 409) and changes nothing until confirmed, then the values are
flagged; delete clears the key from contacts."""

from __future__ import annotations

from contextlib import aclosing

from tests.dashboard.helpers import csrf_of, signed_in


async def _fields(client, ws) -> dict:
    answer = await client.get("/api/v1/custom-fields", headers=ws.headers)
    return {f["key"]: f for f in answer.json()["fields"]}


async def test_fields_added_retyped_with_confirmation_and_deleted(app, client, db, settings, ws):
    made = await client.post(
        "/api/v1/contacts",
        json={"email": "a@shop.example", "custom_fields": {"age": "old"}},
        headers=ws.headers,
    )
    contact_id = made.json()["contact"]["id"]
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/app/fields")
        assert page.status_code == 200 and "<code>age</code>" in page.text
        token = csrf_of(page.text)

        added = await member.post(
            "/app/fields",
            data={
                "csrf": token,
                "key": "plan",
                "label": "Plan",
                "type": "dropdown",
                "options": "free\npro",
            },
        )
        assert added.status_code == 303
        plan = (await _fields(client, ws))["plan"]
        assert (plan["type"], plan["options"]) == ("dropdown", ["free", "pro"])

        asked = await member.post(
            "/app/fields/age", data={"csrf": token, "label": "Age", "type": "number"}
        )
        assert asked.status_code == 409
        assert "Stored values do not fit" in asked.text and "<code>old</code>" in asked.text
        assert (await _fields(client, ws))["age"]["type"] == "text"  # nothing changed yet
        confirmed = await member.post(
            "/app/fields/age",
            data={
                "csrf": csrf_of(asked.text),
                "label": "Age",
                "type": "number",
                "confirm_violations": "yes",
            },
        )
        assert confirmed.status_code == 303
        assert (await _fields(client, ws))["age"]["type"] == "number"
        contact = await client.get(f"/api/v1/contacts/{contact_id}", headers=ws.headers)
        assert contact.json()["contact"]["invalid_custom_fields"] == ["age"]
        assert (
            "1 stored value(s) do not fit and are flagged."
            in (await member.get("/app/fields")).text
        )

        bad = await member.post(
            "/app/fields", data={"csrf": token, "key": "bad key!", "type": "text"}
        )
        assert (
            bad.status_code == 400 and "key must be 1-64 letters, digits or underscores" in bad.text
        )

        gone = await member.post("/app/fields/age/delete", data={"csrf": token})
        assert gone.status_code == 303
        assert "age" not in await _fields(client, ws)
        contact = await client.get(f"/api/v1/contacts/{contact_id}", headers=ws.headers)
        assert "age" not in contact.json()["contact"]["custom_fields"]
        assert "cleared from 1 contact(s)" in (await member.get("/app/fields")).text
