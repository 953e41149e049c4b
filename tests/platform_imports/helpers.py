"""Starting platform imports through the API and running their jobs as the worker does."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

from mailroom.platform_imports import runner
from mailroom.worker import WorkerContext, _contexts

FIXTURES = Path(__file__).parent / "fixtures"


def mailchimp_zip(files: dict[str, str] | None = None) -> bytes:
    """The Mailchimp audience export fixture (or `files`) as the .zip Mailchimp sends."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        if files is None:
            for path in sorted((FIXTURES / "mailchimp").glob("*.csv")):
                archive.writestr(path.name, path.read_bytes())
        else:
            for name, text in files.items():
                archive.writestr(name, text)
    return buffer.getvalue()


async def start(
    client: Any, ws: Any, platform: str, filename: str, content: bytes, **fields: str
) -> Any:
    return await client.post(
        "/api/v1/imports",
        headers=ws.headers,
        data={"platform": platform, **fields},
        files={"file": (filename, content, "application/octet-stream")},
    )


async def work(db: Any, settings: Any, worker_id: str = "test-worker") -> int:
    """Run due import jobs to their end, as the worker's loop does; returns how many ran."""
    ran = 0
    contexts = _contexts(WorkerContext(db, settings, worker_id))
    while await runner.run_due(db, contexts, settings, worker_id):
        ran += 1
    return ran


async def run_import(
    client: Any,
    db: Any,
    settings: Any,
    ws: Any,
    platform: str,
    filename: str,
    content: bytes,
    **fields: str,
) -> dict[str, Any]:
    """Start an import, run it, and answer `GET /imports/{id}`'s import."""
    started = await start(client, ws, platform, filename, content, **fields)
    assert started.status_code == 202, started.text
    await work(db, settings)
    answer = await client.get(
        f"/api/v1/imports/{started.json()['import']['id']}", headers=ws.headers
    )
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()["import"]
    return found
