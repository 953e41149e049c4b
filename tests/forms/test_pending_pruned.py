"""A pending submission (the address and answers of someone who never confirmed) lives for its
link's 7 days: the worker host's `prune-form-submissions` loop then removes it. Confirmed
submissions stay (the form's counts)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from mailroom.core.clock import utcnow
from mailroom.forms.mailing import confirm_url
from mailroom.models import FormSubmission
from mailroom.worker import WorkerContext, default_loops
from tests.forms.helpers import make_form, make_list, sender, submit

JANE = "jane@mail.example"
ANN = "ann@mail.example"


async def _rows(db, form_id):
    async with db.session() as session:
        found = await session.scalars(
            select(FormSubmission).where(FormSubmission.form_id == form_id)
        )
        return {row.email or row.contact_id: row for row in found.all()}


async def _age(db, submission_id, days):
    async with db.transaction() as session:
        await session.execute(
            update(FormSubmission)
            .where(FormSubmission.id == submission_id)
            .values(created_at=utcnow() - timedelta(days=days))
        )


async def test_pending_submissions_are_pruned_after_their_7_days(client, db, ws, settings):
    await sender(client, db, ws)
    double = await make_form(
        client, ws, name="Double", list_ids=[await make_list(client, ws)], double_opt_in=True
    )
    single = await make_form(client, ws, name="Single")
    for address in (JANE, ANN):
        assert (await submit(client, double["id"], email=address)).status_code == 200
    assert (await submit(client, single["id"], email="bo@mail.example")).status_code == 200
    pending = await _rows(db, double["id"])
    [confirmed] = (await _rows(db, single["id"])).values()
    await _age(db, pending[JANE].id, days=7.01)  # past its 7 days
    await _age(db, pending[ANN].id, days=6.9)  # not yet
    await _age(db, confirmed.id, days=30)  # confirmed: kept whatever its age

    [loop] = [lp for lp in default_loops(settings) if lp.name == "prune-form-submissions"]
    assert loop.idle_seconds == 3600
    await loop.tick(WorkerContext(db, settings, "test-worker"))

    assert set(await _rows(db, double["id"])) == {ANN}
    assert list(await _rows(db, single["id"])) == [confirmed.contact_id]
    read = await client.get(f"/api/v1/forms/{double['id']}", headers=ws.headers)
    assert read.json()["form"]["stats"]["submissions"] == 1
    jane_link = "/f/" + confirm_url(settings, pending[JANE]).split("/f/", 1)[1]
    assert (await client.post(jane_link)).status_code == 404
    ann_link = "/f/" + confirm_url(settings, pending[ANN]).split("/f/", 1)[1]
    assert (await client.post(ann_link)).status_code == 200
