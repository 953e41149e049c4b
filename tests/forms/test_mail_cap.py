"""A form cannot be used to bomb an address: at most 3 confirmation emails go to one address
per workspace in a rolling day. Past that the submission is kept as usual, nothing is mailed,
and the page answers exactly as before (status and body), so the cap tells nothing. Counted
under the address's hash, never the address."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

from sqlalchemy import select, update

from mailroom.core.clock import utcnow
from mailroom.models import RateLimitHit
from tests.forms.helpers import make_form, make_list, sender, submit
from tests.sending.conftest import verified_domain
from tests.sending.helpers import ok

JANE = "jane@mail.example"
FORM_HEADERS = {"content-type": "application/x-www-form-urlencoded"}


def _mailed(sink, address):
    return [m for m in sink.received if m.recipients == [address]]


async def _double_opt_in_form(client, db, ws):
    await sender(client, db, ws)
    list_id = await make_list(client, ws, "Weekly")
    return await make_form(client, ws, list_ids=[list_id], double_opt_in=True)


async def test_three_confirmation_emails_a_day_and_the_same_answer_after(
    client, db, ws, sink, driver, settings
):
    settings.form_rate_per_minute = 100  # the per-IP limit is not what this is about
    form = await _double_opt_in_form(client, db, ws)
    answers = []
    for _ in range(5):
        answer = await submit(client, form["id"], email=JANE)
        answers.append((answer.status_code, answer.text))
    assert answers == [(200, '{"ok":true,"double_opt_in":true}')] * 5
    pages = []
    for address in ("bob@mail.example", JANE):  # the hosted page: mailed, then capped
        page = await client.post(
            f"/f/{form['id']}", content=urlencode({"email": address}), headers=FORM_HEADERS
        )
        pages.append((page.status_code, page.text))
    assert pages[0] == pages[1] and pages[0][0] == 200
    await driver.drain()
    assert len(_mailed(sink, JANE)) == 3
    assert len(_mailed(sink, "bob@mail.example")) == 1

    # Every submission was kept, as usual.
    read = await ok(await client.get(f"/api/v1/forms/{form['id']}", headers=ws.headers))
    assert read["form"]["stats"]["submissions"] == 7  # Jane six times, Bob once

    # Other addresses are not held back by Jane's cap.
    assert (await submit(client, form["id"], email="ann@mail.example")).status_code == 200
    await driver.drain()
    assert len(_mailed(sink, "ann@mail.example")) == 1

    # The count is kept under the address's hash: the address itself is stored nowhere there.
    async with db.session() as session:
        keys = (await session.scalars(select(RateLimitHit.key))).all()
    assert keys and not [k for k in keys if "jane" in k.lower()]


async def test_the_cap_is_per_workspace_and_per_day(client, db, factory, sink, driver, settings):
    settings.form_rate_per_minute = 100
    ws = await factory.workspace("pro")
    other = await factory.workspace("pro")
    form = await _double_opt_in_form(client, db, ws)
    for _ in range(4):
        assert (await submit(client, form["id"], email=JANE)).status_code == 200
    await driver.drain()
    assert len(_mailed(sink, JANE)) == 3

    # Another workspace's form mails Jane: its own count.
    await verified_domain(client, db, other, "other.example")
    identity = {"from_email": "news@other.example", "from_name": "Other"}
    await ok(await client.patch("/api/v1/sending", json=identity, headers=other.headers))
    other_form = await make_form(
        client, other, list_ids=[await make_list(client, other, "Daily")], double_opt_in=True
    )
    assert (await submit(client, other_form["id"], email=JANE)).status_code == 200
    await driver.drain()
    assert len(_mailed(sink, JANE)) == 4

    # A day later Jane may be asked again.
    async with db.transaction() as session:
        await session.execute(
            update(RateLimitHit).values(at=utcnow() - timedelta(days=1, seconds=1))
        )
    assert (await submit(client, form["id"], email=JANE)).status_code == 200
    await driver.drain()
    assert len(_mailed(sink, JANE)) == 5
