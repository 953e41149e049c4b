"""`/app/campaigns`: a campaign written on the page with its audience counted as it is chosen,
a test sent to yourself through the SMTP sink, send refused until confirmed, sent by the
engine, then the report page (progress, rates, chart, recipients); schedule and back to draft;
duplicate and delete; the API's refusals shown."""

from __future__ import annotations

import re
from contextlib import aclosing
from datetime import timedelta

from mailroom.core.clock import utcnow
from tests.dashboard.helpers import csrf_of, signed_in
from tests.sending.conftest import driver, sink, verified_domain  # noqa: F401
from tests.sending.helpers import HTML, make_contacts, make_list


def _form(token: str, list_id: str, **extra) -> dict:
    return {
        "csrf": token,
        "name": "Spring sale",
        "subject": "Spring, {{ first_name | default('friend') }}",
        "preheader": "",
        "html_content": HTML,
        "text_content": "",
        "from_name": "Shop",
        "from_email": "news@shop.example",
        "reply_to": "",
        "list_ids": [list_id],
        "track_opens": "on",
        "track_clicks": "on",
        **extra,
    }


async def test_write_test_send_and_report(app, client, db, settings, ws, sink, driver):  # noqa: F811
    await verified_domain(client, db, ws)
    news = await make_list(client, ws)
    await make_contacts(client, ws, [f"r{n}@mailtest.io" for n in range(3)], news)
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        page = await member.get("/app/campaigns/new")
        assert page.status_code == 200 and "Choose who receives it." in page.text
        token = csrf_of(page.text)
        counted = await member.post("/app/campaigns/count", data={"csrf": token, "list_ids": news})
        assert "<strong>3</strong> subscribed contacts would receive it now." in counted.text
        vip = (await client.post("/api/v1/tags", json={"name": "VIP"}, headers=ws.headers)).json()
        excluded = await member.post(
            "/app/campaigns/count",
            data={
                "csrf": token,
                "list_ids": [news],
                "exclude_list_ids": [news],
                "exclude_tag_ids": [vip["tag"]["id"]],
            },
        )
        assert "<strong>0</strong> subscribed contacts" in excluded.text

        nameless = await member.post("/app/campaigns/save", data=_form(token, news, name=""))
        assert nameless.status_code == 400 and "name" in nameless.text
        saved = await member.post("/app/campaigns/save", data=_form(token, news))
        assert saved.status_code == 303
        campaign_id = saved.headers["location"].rsplit("/", 1)[1]
        stored = (await client.get(f"/api/v1/campaigns/{campaign_id}", headers=ws.headers)).json()
        assert stored["campaign"]["audience"]["list_ids"] == [news]
        draft = await member.get(f"/app/campaigns/{campaign_id}")
        assert "<strong>3</strong> subscribed contacts" in draft.text

        tested = await member.post(
            f"/app/campaigns/{campaign_id}/test", data={"csrf": token, "emails": ""}
        )
        assert tested.status_code == 303
        assert "Test sent to 1 address." in (await member.get(f"/app/campaigns/{campaign_id}")).text
        [test_mail] = [m.parsed() for m in sink.received]
        assert test_mail["To"] == "mo@shop.example" and test_mail["Subject"].startswith("[Test]")

        unsure = await member.post(f"/app/campaigns/{campaign_id}/send", data={"csrf": token})
        assert unsure.status_code == 303
        assert (
            "Tick “Send it now” to confirm."
            in (await member.get(f"/app/campaigns/{campaign_id}")).text
        )
        sent = await member.post(
            f"/app/campaigns/{campaign_id}/send", data={"csrf": token, "sure": "yes"}
        )
        assert sent.status_code == 303
        await driver.drain()
        report = await member.get(f"/app/campaigns/{campaign_id}")
        assert "3 of 3 sent" in report.text and 'value="100"' in report.text
        assert report.text.count("@mailtest.io</td>") == 3
        # Nothing opened yet: said in words, not an empty chart ("most in an hour: 1").
        assert "Nothing was opened or clicked yet." in report.text
        assert "most in an hour" not in report.text
        # The outcomes as bars scaled to the 3 sent, each with its figure in words.
        assert 'aria-label="What happened to the sent emails"' in report.text
        assert '<progress max="3" value="0" aria-label="Bounced">0 (0.0 %)</progress>' in (
            report.text
        )

        listed = await member.get("/app/campaigns")
        assert f'href="/app/campaigns/{campaign_id}">Spring sale</a>' in listed.text
        copied = await member.post(f"/app/campaigns/{campaign_id}/duplicate", data={"csrf": token})
        copy_id = copied.headers["location"].rsplit("/", 1)[1]
        later = (utcnow() + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
        assert (
            "“Copy of Spring sale” is a new draft."
            in (await member.get(f"/app/campaigns/{copy_id}")).text
        )

        too_far = await member.post(
            f"/app/campaigns/{copy_id}/schedule",
            data={"csrf": token, "send_at": "2099-01-01T09:30"},
        )
        assert too_far.status_code == 303
        refused = await member.get(f"/app/campaigns/{copy_id}")
        assert 'class="flash error"' in refused.text and "send_at" in refused.text
        scheduled = await member.post(
            f"/app/campaigns/{copy_id}/schedule", data={"csrf": token, "send_at": later}
        )
        assert scheduled.status_code == 303
        shown = await member.get(f"/app/campaigns/{copy_id}")
        assert f"Scheduled for {later.replace('T', ' ')} UTC." in shown.text
        assert "Back to draft" in shown.text
        assert (
            await member.post(f"/app/campaigns/{copy_id}/cancel", data={"csrf": token})
        ).status_code == 303
        gone = await member.post(f"/app/campaigns/{copy_id}/delete", data={"csrf": token})
        assert gone.status_code == 303
        assert (
            await client.get(f"/api/v1/campaigns/{copy_id}", headers=ws.headers)
        ).status_code == 404
        assert re.search(
            "Campaign “Copy of Spring sale” deleted.", (await member.get("/app/campaigns")).text
        )


async def test_the_campaign_list_pages(app, client, db, settings, ws):
    for n in range(27):
        made = await client.post(
            "/api/v1/campaigns",
            json={"name": f"Letter {n:02d}", "subject": "Hi", "html_content": "<p>Hi</p>"},
            headers=ws.headers,
        )
        assert made.status_code == 201, made.text
    member = await signed_in(app, db, settings, ws, "mo@shop.example", role="member")
    async with aclosing(member):
        first = await member.get("/app/campaigns")
        second = await member.get("/app/campaigns?page=2")
        beyond = await member.get("/app/campaigns?page=99")
    names = re.compile(r">Letter (\d\d)</a>")
    assert len(names.findall(first.text)) == 25 and "Page 1 of 2" in first.text
    assert names.findall(first.text)[0] == "26"  # newest first
    assert sorted(names.findall(second.text)) == ["00", "01"]
    assert names.findall(beyond.text) == [] and beyond.status_code == 200
