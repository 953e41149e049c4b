"""An import job survives the process running it: it resumes after its last written chunk, or
ends `failed` saying how far it got; never half-applied silently."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import update

from mailroom.core.clock import utcnow
from mailroom.core.errors import ApiError
from mailroom.models import PlatformImport
from mailroom.platform_imports import runner, writer
from tests.platform_imports.helpers import mailchimp_zip, start, work


async def expire_lease(db: Any, job_id: str) -> None:
    """What time does for a worker that died: its lease runs out."""
    async with db.transaction() as session:
        await session.execute(
            update(PlatformImport)
            .where(PlatformImport.id == job_id)
            .values(locked_until=utcnow() - timedelta(seconds=1))
        )


async def job_of(client: Any, ws: Any, job_id: str) -> dict[str, Any]:
    answer = await client.get(f"/api/v1/imports/{job_id}", headers=ws.headers)
    found: dict[str, Any] = answer.json()["import"]
    return found


async def test_a_job_interrupted_mid_way_resumes_after_its_last_chunk(
    client: Any, db: Any, settings: Any, ws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "CHUNK", 2)
    real_write = writer.write_chunk
    calls = 0

    async def dies_on_the_third_chunk(*args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise RuntimeError("the process died here")
        await real_write(*args, **kwargs)

    monkeypatch.setattr(writer, "write_chunk", dies_on_the_third_chunk)
    started = await start(client, ws, "mailchimp", "export.zip", mailchimp_zip())
    job_id = started.json()["import"]["id"]
    await work(db, settings, "worker-a")
    halfway = await job_of(client, ws, job_id)
    assert halfway["status"] == "running"
    assert halfway["progress"] == {"done": 4, "total": 9}
    listed = await client.get("/api/v1/contacts?limit=1", headers=ws.headers)
    assert listed.json()["pagination"]["total"] == 4  # two chunks written, the third not

    await expire_lease(db, job_id)
    await work(db, settings, "worker-b")
    done = await job_of(client, ws, job_id)
    assert done["status"] == "done"
    result = done["result"]
    # The same counts as an uninterrupted run: nothing written twice, nothing lost.
    assert (result["created"], result["updated"], result["unchanged"]) == (9, 0, 0)
    assert result["suppressed"] == {"unsubscribed": 3, "bounced": 2, "complained": 0}
    assert "Resumed at contact 4 after an interruption" in result["warnings"]
    listed = await client.get("/api/v1/contacts?limit=1", headers=ws.headers)
    assert listed.json()["pagination"]["total"] == 9


async def test_a_job_interrupted_too_often_fails_saying_so(
    client: Any, db: Any, settings: Any, ws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "CHUNK", 4)
    real_write = writer.write_chunk
    calls = 0

    async def dies_after_the_first_chunk(*args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise RuntimeError("the process died here")
        await real_write(*args, **kwargs)

    monkeypatch.setattr(writer, "write_chunk", dies_after_the_first_chunk)
    started = await start(client, ws, "mailchimp", "export.zip", mailchimp_zip())
    job_id = started.json()["import"]["id"]
    for attempt in range(runner.MAX_ATTEMPTS + 1):
        await work(db, settings, f"worker-{attempt}")
        await expire_lease(db, job_id)
    failed = await job_of(client, ws, job_id)
    assert failed["status"] == "failed"
    assert failed["error"] == (
        "The import was interrupted 3 times (its process stopped or failed) and was given up; "
        "4 of 9 contacts had been written (the last error: RuntimeError: the process died here)"
    )
    # What was written is said, not hidden.
    assert failed["result"]["created"] == 4


async def test_a_refusal_part_way_stops_the_job_with_what_was_written(
    client: Any, db: Any, settings: Any, ws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "CHUNK", 4)
    real_write = writer.write_chunk
    calls = 0

    async def cap_reached_on_the_second_chunk(*args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            # Another request took the last contact slots meanwhile.
            raise ApiError(
                403, "Contact limit reached (500 on the Free plan). Upgrade to add more."
            )
        await real_write(*args, **kwargs)

    monkeypatch.setattr(writer, "write_chunk", cap_reached_on_the_second_chunk)
    started = await start(client, ws, "mailchimp", "export.zip", mailchimp_zip())
    await work(db, settings)
    failed = await job_of(client, ws, started.json()["import"]["id"])
    assert failed["status"] == "failed"
    assert failed["error"] == (
        "Stopped after 4 of 9 contacts: Contact limit reached (500 on the Free plan). "
        "Upgrade to add more."
    )
    assert failed["result"]["created"] == 4
    # Only what the committed chunk wrote is reported: the refused chunk's counts are not.
    written = await client.get("/api/v1/suppressions", headers=ws.headers)
    by_reason = written.json()["by_reason"]
    assert failed["result"]["suppressed"] == {
        "unsubscribed": by_reason["unsubscribed"],
        "bounced": by_reason["bounced"],
        "complained": by_reason["complained"],
    }
