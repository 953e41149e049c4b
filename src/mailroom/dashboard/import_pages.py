"""Importing contacts from the dashboard: upload a CSV, see its columns with the mapping the
import's own aliases chose (change any), pick the options, then watch the progress and read
the result. The import itself is `contacts.importer.run_import`, the API's and the CLI's: one
transaction, all rows or none.

The upload waits between the two steps as a file in the data directory (named by a random
token, with a state file beside it naming its workspace; the file is removed when the import
ends, the upload and the state after a day). The import runs as a task of the server process that took
the "Import" click; its progress is written to the state file (atomically, a few times a
second), so any process of the server (`serve --workers N`) answers the progress page. Not
a database row: on SQLite a progress row could not be written while the import holds the
write lock. A run whose state has not moved for `STALE` seconds was in a server that died:
nothing was imported (all or nothing), and the page says so.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.datastructures import UploadFile

from mailroom.audit import service as audit
from mailroom.contacts import import_columns as columns
from mailroom.contacts import import_rows as rows_
from mailroom.contacts import importer
from mailroom.core.auth import Principal
from mailroom.core.context import Context
from mailroom.core.errors import ApiError
from mailroom.core.pagination import PageParams
from mailroom.dashboard import render
from mailroom.dashboard.frame import Visitor, as_visitor
from mailroom.db import Database
from mailroom.lists import service as lists
from mailroom.people import sessions
from mailroom.settings import Settings
from mailroom.web.deps import get_db, get_settings_dep

router = APIRouter(include_in_schema=False)
log = logging.getLogger("mailroom.dashboard.import")
PATH = "/app/import"
SAMPLES = 3
KEEP = 86_400.0  # seconds an upload waits for its "Import" click, and a result stays readable
STALE = 600.0  # seconds without progress after which a running import's server is gone
SAVE_EVERY = 0.25  # seconds between progress writes
DIED = (
    "The server stopped during this import, so nothing of the file was imported (an import "
    "is all or nothing): upload it again."
)
TARGETS = [t for t in columns.MAPPING_TARGETS if t != "custom"]
OPTION_FIELDS = (
    "default_status",
    "source",
    "skip_duplicates",
    "run_automations",
    "check_domains",
    "tags",
    "list_id",
)


@dataclass
class ImportRun:
    workspace_id: str
    step: str = "starting"
    done: int = 0
    total: int = 0
    status: str = "uploaded"  # uploaded | running | done | failed
    report: dict[str, Any] | None = None
    error: str | None = None
    updated: float = 0.0  # wall-clock time of the last write
    code: int = 0  # a refusal's status: 403 is the plan's contact cap
    details: dict[str, Any] | None = None  # a refusal's named extras (what was skipped)

    @property
    def title(self) -> str:
        """The page's title: the run finished, failed, or is still going."""
        return {"done": "Import finished", "failed": "Import failed"}.get(
            self.status, "Importing contacts"
        )

    @property
    def percent(self) -> int:
        if self.status != "running":
            return 100
        return int(self.done * 100 / self.total) if self.total else 0


# Running imports' tasks, held so they are not collected while they run.
TASKS: set[asyncio.Task[None]] = set()


def _folder(settings: Settings) -> Path:
    folder = Path(settings.data_dir) / "imports"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _upload_path(settings: Settings, token: str) -> Path | None:
    if not token.isalnum():
        return None
    path = _folder(settings) / f"{token}.csv"
    return path if path.exists() else None


def _state_path(settings: Settings, token: str) -> Path:
    return _folder(settings) / f"{token}.json"


def _save(settings: Settings, token: str, run: ImportRun) -> None:
    """Write the run's state whole (a reader never sees half a file)."""
    run.updated = time.time()
    path = _state_path(settings, token)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(asdict(run)))
    os.replace(partial, path)


def _load(settings: Settings, token: str) -> ImportRun | None:
    if not token.isalnum():
        return None
    try:
        run = ImportRun(**json.loads(_state_path(settings, token).read_text()))
    except (OSError, ValueError, TypeError):
        return None
    if run.status == "running" and time.time() - run.updated > STALE:
        run.status, run.error = "failed", DIED
    return run


def _forget_old(settings: Settings) -> None:
    """Uploads never imported and results of imports, after a day."""
    now = time.time()
    for path in _folder(settings).iterdir():
        try:
            if now - path.stat().st_mtime > KEEP:
                path.unlink(missing_ok=True)
        except OSError:
            continue  # another process removed it first


@router.get(PATH)
async def import_page(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        return render.page(
            "import.html",
            title="Import contacts",
            section="contacts",
            visitor=visitor,
            flashes=sessions.take_flash(visitor.row),
        )

    return await as_visitor(request, work)


def _default_targets(headers: list[str]) -> list[dict[str, Any]]:
    """What the import would do with each column by itself (its aliases and rules)."""
    plan = columns.plan_from_headers(headers)
    chosen: dict[int, tuple[str, str]] = {i: (t, "") for t, i in plan.single.items()}
    for target, indexes in plan.dates.items():
        chosen.update({i: (target, "") for i in indexes})
    chosen.update({i: ("custom", key) for i, key in plan.custom})
    return [
        {
            "index": i,
            "header": h,
            "target": chosen.get(i, ("ignore", ""))[0],
            "key": chosen.get(i, ("", ""))[1] or columns.fold_header(h),
        }
        for i, h in enumerate(headers)
    ]


@router.post(PATH)
async def upload(request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        file = form.get("file")
        if not isinstance(file, UploadFile) or not file.filename:
            sessions.flash(visitor.row, "error", "Choose a CSV file to import.")
            return RedirectResponse(PATH, status_code=303)
        content = await file.read(importer.MAX_BYTES + 1)
        if len(content) > importer.MAX_BYTES:
            sessions.flash(visitor.row, "error", importer.TOO_LARGE)
            return RedirectResponse(PATH, status_code=303)
        try:
            headers, rows = await asyncio.to_thread(rows_.read_csv, content)
            samples = [next(rows, []) for _ in range(SAMPLES)]
        except ApiError as problem:
            sessions.flash(visitor.row, "error", problem.message)
            return RedirectResponse(PATH, status_code=303)
        token = secrets.token_urlsafe(18).replace("-", "x").replace("_", "y")
        path = _folder(ctx.settings) / f"{token}.csv"
        await asyncio.to_thread(path.write_bytes, content)
        await asyncio.to_thread(_save, ctx.settings, token, ImportRun(visitor.workspace_id))
        mapped = _default_targets(headers)
        for item in mapped:
            item["samples"] = [
                row[item["index"]] if item["index"] < len(row) else "" for row in samples
            ]
        all_lists, _ = await lists.list_lists(ctx, PageParams(1, 200))
        return render.page(
            "import_map.html",
            title="Match the columns",
            section="contacts",
            visitor=visitor,
            token=token,
            filename=file.filename,
            columns=mapped,
            targets=TARGETS,
            lists=[(m.id, m.name) for m in all_lists],
            flashes=sessions.take_flash(visitor.row),
        )

    return await as_visitor(request, work)


def _mapping(form: dict[str, Any], count: int) -> str:
    entries: list[dict[str, Any]] = []
    for i in range(count):
        target = str(form.get(f"col_{i}") or "ignore")
        entry: dict[str, Any] = {"column": i, "target": target}
        if target == "custom":
            entry["key"] = str(form.get(f"key_{i}") or "").strip()
        entries.append(entry)
    return json.dumps(entries)


async def _run(
    db: Database,
    settings: Settings,
    principal: Principal,
    token: str,
    run: ImportRun,
    path: Path,
    options: importer.ImportOptions,
    person_path: str,
) -> None:
    last_saved = 0.0

    def step(name: str, done: int, total: int) -> None:
        nonlocal last_saved
        run.step, run.done, run.total = name, done, total
        now = time.monotonic()
        if now - last_saved >= SAVE_EVERY:
            last_saved = now
            _save(settings, token, run)  # a few hundred bytes: cheaper than a thread hop

    try:
        content = await asyncio.to_thread(path.read_bytes)
        async with db.transaction() as session:
            ctx = Context(session, principal, settings)
            report = await importer.run_import(ctx, content, options, progress=step)
            session.add(
                audit.new_entry(
                    principal,
                    operation="import_contacts",
                    method="POST",
                    path=person_path,
                    target_id=None,
                    status=200,
                )
            )
        run.report, run.status = report.as_dict(), "done"
    except ApiError as problem:
        run.error, run.status = problem.message, "failed"
        run.code, run.details = problem.status, problem.extras
    except Exception:
        log.exception("dashboard import failed")
        run.error, run.status = "Import failed; nothing was imported", "failed"
    finally:
        await asyncio.to_thread(_save, settings, token, run)
        await asyncio.to_thread(path.unlink, missing_ok=True)


@router.post(f"{PATH}/{{token}}")
async def start(token: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        path = _upload_path(ctx.settings, token)
        state = _load(ctx.settings, token)
        if path is None or state is None or state.workspace_id != visitor.workspace_id:
            raise ApiError(404, "This upload is no longer here: upload the file again.")
        if state.status != "uploaded":  # started already (a second click, another tab)
            return RedirectResponse(f"{PATH}/{token}", status_code=303)
        headers, _rows = await asyncio.to_thread(
            rows_.read_csv, await asyncio.to_thread(path.read_bytes)
        )
        fields = {k: str(form.get(k) or "") for k in OPTION_FIELDS}
        for flag in ("skip_duplicates", "run_automations", "check_domains"):
            fields[flag] = "true" if form.get(flag) == "on" else "false"
        fields["mapping"] = _mapping(form, len(headers))
        try:
            options = importer.parse_options(fields)
            columns.plan_from_mapping(options.mapping or "[]", len(headers))
        except ApiError as problem:
            sessions.flash(visitor.row, "error", problem.message)
            return RedirectResponse(PATH, status_code=303)
        await asyncio.to_thread(_forget_old, ctx.settings)
        claimed = path.with_suffix(".importing")
        try:  # one start per upload, whichever process takes the click
            await asyncio.to_thread(os.rename, path, claimed)
        except FileNotFoundError:
            return RedirectResponse(f"{PATH}/{token}", status_code=303)
        path = claimed
        run = ImportRun(visitor.workspace_id, status="running")
        await asyncio.to_thread(_save, ctx.settings, token, run)
        task = asyncio.create_task(
            _run(
                get_db(request),
                get_settings_dep(request),
                visitor.principal,
                token,
                run,
                path,
                options,
                request.url.path,
            )
        )
        TASKS.add(task)
        task.add_done_callback(TASKS.discard)
        return RedirectResponse(f"{PATH}/{token}", status_code=303)

    return await as_visitor(request, work)


def _run_of(visitor: Visitor, settings: Settings, token: str) -> ImportRun | None:
    run = _load(settings, token)
    if run is None or run.workspace_id != visitor.workspace_id or run.status == "uploaded":
        return None
    return run


@router.get(f"{PATH}/{{token}}")
async def progress_page(token: str, request: Request) -> Response:
    async def work(visitor: Visitor, ctx: Context, form: dict[str, Any]) -> Response:
        run = await asyncio.to_thread(_run_of, visitor, ctx.settings, token)
        fragment = bool(request.headers.get("HX-Request"))
        template = "import_progress.html" if fragment else "import_run.html"
        return render.page(
            template,
            status=200 if run is not None else 404,
            title=run.title if run is not None else "Import not found",
            fragment=fragment,
            section="contacts",
            visitor=visitor,
            token=token,
            run=run,
            flashes=sessions.take_flash(visitor.row),
        )

    return await as_visitor(request, work)
