"""A/B tests on the campaign pages: the editor saves variants (empty slots and removed ones
are no variants; an empty field is not changed), shows the API's refusal and keeps what was
typed, previews each saved variant; the report shows the variants side by side, when the
test decides, and a winner picked by hand goes to the rest."""

from __future__ import annotations

from contextlib import aclosing

from tests.dashboard.helpers import csrf_of, signed_in
from tests.dashboard.test_campaigns_page import _form
from tests.sending.conftest import driver, sink, verified_domain  # noqa: F401
from tests.sending.helpers import make_contacts, make_list, ok


def _variants(token: str, news: str, **extra) -> dict:
    fields = {
        "ab_on": "on",
        "ab_0_name": "Short",
        "ab_0_subject": "Sale",
        "ab_1_name": "Long",
        "ab_1_subject": "Our spring sale starts today",
        "ab_1_from_name": "Ann at Shop",
        "ab_2_name": "",  # an empty slot: no variant
        "ab_test_share": "40",
        "ab_winner_by": "manual",
        "ab_decide_after_minutes": "60",
    }
    return _form(token, news, **(fields | extra))


async def test_variants_saved_refused_previewed_and_picked(
    app,
    client,
    db,
    settings,
    ws,
    sink,  # noqa: F811
    driver,  # noqa: F811
):
    await verified_domain(client, db, ws)
    news = await make_list(client, ws)
    await make_contacts(client, ws, [f"r{n:02d}@mailtest.io" for n in range(10)], news)
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/app/campaigns/new")
        assert "Test variants of this campaign" in page.text
        token = csrf_of(page.text)

        # The API's refusal, shown with what was typed; nothing saved.
        refused = await member.post(
            "/app/campaigns/save", data=_variants(token, news, ab_test_share="60")
        )
        assert refused.status_code == 400
        assert "ab_test.test_share must be between 10 and 50" in refused.text
        assert 'value="Our spring sale starts today"' in refused.text
        listed = await ok(await client.get("/api/v1/campaigns", headers=ws.headers))
        assert listed["campaigns"] == []
        nothing = await member.post(
            "/app/campaigns/save", data=_variants(token, news, ab_1_subject="", ab_1_from_name="")
        )
        assert nothing.status_code == 400
        assert "ab_test.variants[1] changes nothing" in nothing.text

        saved = await member.post("/app/campaigns/save", data=_variants(token, news))
        assert saved.status_code == 303
        campaign_id = saved.headers["location"].rsplit("/", 1)[1]
        stored = await ok(await client.get(f"/api/v1/campaigns/{campaign_id}", headers=ws.headers))
        test = stored["campaign"]["ab_test"]
        assert [(v["id"], v["name"], v["subject"], v["from_name"]) for v in test["variants"]] == [
            ("a", "Short", "Sale", None),
            ("b", "Long", "Our spring sale starts today", "Ann at Shop"),
        ]
        assert (test["test_share"], test["winner_by"], test["decide_after_minutes"]) == (
            40,
            "manual",
            60,
        )
        editor = await member.get(f"/app/campaigns/{campaign_id}")
        assert f"/app/campaigns/{campaign_id}/preview?variant=b" in editor.text
        preview = await member.get(f"/app/campaigns/{campaign_id}/preview?variant=b")
        assert preview.status_code == 200 and "spring sale" in preview.text

        # A third variant added, the first removed (ids kept), then the test sent.
        changed = await member.post(
            "/app/campaigns/save",
            data=_variants(
                token,
                news,
                campaign_id=campaign_id,
                ab_0_id="a",
                ab_0_remove="on",
                ab_1_id="b",
                ab_2_name="Emoji",
                ab_2_subject="🌷 Sale",
            ),
        )
        assert changed.status_code == 303
        stored = await ok(await client.get(f"/api/v1/campaigns/{campaign_id}", headers=ws.headers))
        variants = stored["campaign"]["ab_test"]["variants"]
        assert [(v["id"], v["name"]) for v in variants] == [("b", "Long"), ("a", "Emoji")]

        sent = await member.post(
            f"/app/campaigns/{campaign_id}/send", data={"csrf": token, "sure": "yes"}
        )
        assert sent.status_code == 303
        await driver.drain()
        report = await member.get(f"/app/campaigns/{campaign_id}")
        assert "Testing on 40 % of the audience" in report.text
        assert "You pick the winner." in report.text
        assert report.text.count('data-label="Variant"') == 2
        assert "Subject “🌷 Sale”" in report.text
        # A member sees the test; picking its winner is an admin's (issue 32).
        assert "An admin of this workspace can pick the winner now." in report.text
        refused = await member.post(
            f"/app/campaigns/{campaign_id}/ab-test/winner",
            data={"csrf": token, "variant_id": "a"},
        )
        assert refused.status_code == 403

    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        report = await admin.get(f"/app/campaigns/{campaign_id}")
        token = csrf_of(report.text)
        assert "Pick the winner" in report.text
        picked = await admin.post(
            f"/app/campaigns/{campaign_id}/ab-test/winner",
            data={"csrf": token, "variant_id": "a"},
        )
        assert picked.status_code == 303
        after = await admin.get(f"/app/campaigns/{campaign_id}")
        assert "“Emoji” won: it goes to the rest of the audience." in after.text
        assert "picked by hand" in after.text and "winner</span>" in after.text
        again = await admin.post(
            f"/app/campaigns/{campaign_id}/ab-test/winner",
            data={"csrf": token, "variant_id": "b"},
        )
        assert again.status_code == 303
        shown = await admin.get(f"/app/campaigns/{campaign_id}")
        assert "Campaign is not testing" in shown.text
    await driver.drain()
    assert len({m.recipients[0] for m in sink.received}) == len(sink.received) == 10
    done = await ok(await client.get(f"/api/v1/campaigns/{campaign_id}", headers=ws.headers))
    assert done["campaign"]["ab_test"]["winner_variant_id"] == "a"
