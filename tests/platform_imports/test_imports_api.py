"""POST /api/v1/imports with each platform's export file, run by the worker's job."""

from __future__ import annotations

from typing import Any

from tests.platform_imports.helpers import mailchimp_zip, run_import, start


async def test_mailchimp_archive_imports(client: Any, db: Any, settings: Any, ws: Any) -> None:
    job = await run_import(client, db, settings, ws, "mailchimp", "members_export.zip", mailchimp_zip())
    print(job)
    assert job["status"] == "done", job
