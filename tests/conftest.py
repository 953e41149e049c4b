"""Test setup: a migrated database per test, the app over httpx's ASGI transport, factories.

The backend is chosen per run: `MAILROOM_TEST_BACKEND=sqlite` (default) or `postgresql`, which
uses `MAILROOM_TEST_DATABASE_URL` (`make test` runs the suite once for each). The schema always
comes from the migrations, never `create_all`:
- SQLite: migrated once into a template file, copied for each test (a fresh database each);
- PostgreSQL: the schema is rebuilt and migrated once per run; each test starts from empty
  tables.

Parallel runs (pytest-xdist, `-n`): every worker process has its own databases. SQLite's files
are under the worker's own temporary directory; on PostgreSQL worker `gw0` uses the database
`<name>_gw0` next to the one the URL names, created through the server's `postgres` database
when it does not exist yet.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import iter_route_contexts
from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import create_async_engine

import mailroom.models  # noqa: F401  (all tables on the metadata)
from mailroom.accounts import service as accounts_service
from mailroom.app import create_app
from mailroom.db import Base, Database
from mailroom.events.catalog import EVENT_NAMES
from mailroom.migrations import upgrade
from mailroom.models import WebhookEndpoint
from mailroom.settings import Settings

BACKEND = os.environ.get("MAILROOM_TEST_BACKEND", "sqlite")
if BACKEND == "postgresql" and not os.environ.get("MAILROOM_TEST_DATABASE_URL"):
    raise RuntimeError("MAILROOM_TEST_BACKEND=postgresql needs MAILROOM_TEST_DATABASE_URL")
# The xdist worker this process is ("gw0", "gw1", ...), or "" when the run is not parallel.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")


def _worker_database_url(url: str) -> str:
    """`.../test` for a serial run, `.../test_gw0` for xdist worker gw0."""
    if not url or not WORKER:
        return url
    parsed = make_url(url)
    return parsed.set(database=f"{parsed.database}_{WORKER}").render_as_string(hide_password=False)


PG_URL = _worker_database_url(os.environ.get("MAILROOM_TEST_DATABASE_URL", ""))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if BACKEND != "postgresql":
        # Row-lock behaviour exists only on PostgreSQL; `make test` runs those there.
        deselected = [i for i in items if i.get_closest_marker("postgresql_only")]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = [i for i in items if i not in deselected]


def pytest_report_header() -> str:
    return f"mailroom test backend: {BACKEND}"


async def _create_database(url: str) -> None:
    """Create the database `url` names unless it exists (via the server's `postgres` one)."""
    name = make_url(url).database
    admin = create_async_engine(
        make_url(url).set(database="postgres"), isolation_level="AUTOCOMMIT"
    )
    try:
        async with admin.connect() as conn:
            found = await conn.scalar(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
            )
            if not found:
                await conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    finally:
        await admin.dispose()


async def _reset_postgres(url: str) -> None:
    await _create_database(url)
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))
    await engine.dispose()
    await upgrade(url)


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The migrated database every test starts from (SQLite file path or PostgreSQL URL)."""
    if BACKEND == "postgresql":
        asyncio.run(_reset_postgres(PG_URL))
        return PG_URL
    path = tmp_path_factory.mktemp("template") / "template.db"
    asyncio.run(upgrade(f"sqlite+aiosqlite:///{path}"))
    return str(path)


TABLES = [table.name for table in reversed(Base.metadata.sorted_tables)]
BIG_TABLE_ROWS = 10_000

# Emptying the tables between tests. TRUNCATE makes new files for every table it names and
# cascades over the whole schema (~150-300 ms a test, minutes a run), while a test leaves a
# few rows in a few tables: DELETE those (ms), with triggers and foreign-key checks off
# (session_replication_role = replica, so order does not matter and the contact counters'
# triggers do not refill what was just emptied), and restart the sequences. A test that left
# a big table gets the TRUNCATE, so no pile of dead rows slows the next ones.
_EMPTY_TABLES = f"""
DO $$
DECLARE
    t text;
    has_rows boolean;
    big boolean := false;
    filled text[] := '{{}}';
    s record;
BEGIN
    FOREACH t IN ARRAY ARRAY[{", ".join(f"'{name}'" for name in TABLES)}] LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I)', t) INTO has_rows;
        IF has_rows THEN
            filled := filled || t;
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I OFFSET {BIG_TABLE_ROWS})', t)
                INTO has_rows;
            big := big OR has_rows;
        END IF;
    END LOOP;
    IF big THEN
        EXECUTE 'TRUNCATE {", ".join(TABLES)} RESTART IDENTITY CASCADE';
        RETURN;
    END IF;
    SET LOCAL session_replication_role = replica;
    FOREACH t IN ARRAY filled LOOP
        EXECUTE format('DELETE FROM %I', t);
    END LOOP;
    FOR s IN SELECT schemaname, sequencename FROM pg_sequences
             WHERE schemaname = current_schema() LOOP
        PERFORM setval(format('%I.%I', s.schemaname, s.sequencename), 1, false);
    END LOOP;
END $$
"""


async def _empty_postgres(url: str) -> None:
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.exec_driver_sql(_EMPTY_TABLES)
    await engine.dispose()


@pytest.fixture
async def database_url(migrated_template: str, tmp_path: Path) -> str:
    if BACKEND == "postgresql":
        await _empty_postgres(migrated_template)
        return migrated_template
    target = tmp_path / "mailroom.db"
    shutil.copyfile(migrated_template, target)
    return f"sqlite+aiosqlite:///{target}"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "var",
        secret_key="test-secret-key",
        public_url="http://testserver",
        worker_poll_interval=0.05,
    )


# FastAPI builds an app's route table (dependants, parameter models) on its first request:
# ~0.1-0.3 s of CPU, per app, for every test, the biggest single cost of the suite. The routes
# of the routers in `mailroom.app.ROUTERS` are the same for every app, so each test's app gets
# the ones a first app of this process built once; its own routes (OpenAPI, docs, /mcp), its
# database and its settings stay its own. The shared routes' dependency overrides are the
# first app's (no test overrides dependencies). Without FastAPI's lazily built included
# routers, every app builds its own, as before.
try:
    from fastapi.routing import _IncludedRouter
except ImportError:  # pragma: no cover - another FastAPI
    _IncludedRouter = None

_built_routes: dict[int, Any] = {}


def _with_built_routes(application: Any) -> Any:
    if _IncludedRouter is None:
        return application
    if not _built_routes:
        # Only its routes are kept: its database is never connected.
        unused = Path(tempfile.gettempdir()) / "mailroom-routes-never-opened"
        first = create_app(
            Settings(
                database_url=f"sqlite+aiosqlite:///{unused}.db",
                data_dir=unused,
                secret_key="routes",
            )
        )
        list(iter_route_contexts(first.router.routes))  # builds every included route
        for route in first.router.routes:
            if isinstance(route, _IncludedRouter):
                route.effective_low_priority_routes()
                _built_routes[id(route.original_router)] = route
    routes = application.router.routes
    for i, route in enumerate(routes):
        if isinstance(route, _IncludedRouter):
            routes[i] = _built_routes.get(id(route.original_router), route)
    return application


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[Any]:
    application = _with_built_routes(create_app(settings))
    yield application
    await application.state.hits.close()
    await application.state.db.dispose()


@pytest.fixture
def db(app: Any) -> Database:
    database: Database = app.state.db
    return database


@pytest.fixture
async def client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


@dataclass
class Workspace:
    account_id: str
    workspace_id: str
    key_id: str
    api_key: str
    plan: str
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.headers = {"x-api-key": self.api_key}


class Factory:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def workspace(
        self,
        plan: str = "pro",
        *,
        permissions: str | list[str] = "all",
        account_id: str | None = None,
        name: str = "",
        listen: bool = True,
    ) -> Workspace:
        """A workspace with a key. `listen` (default) registers a catch-all webhook endpoint
        (nothing answers it): the outbox writes events only when someone subscribes, and
        most tests inspect those events. Webhook tests pass listen=False."""
        async with self.db.transaction() as session:
            account, workspace = await accounts_service.create_workspace(
                session, plan=None if account_id else plan, account_id=account_id, name=name
            )
            created = await accounts_service.create_key(
                session, workspace.id, permissions=permissions
            )
            if listen:
                session.add(
                    WebhookEndpoint(
                        workspace_id=workspace.id,
                        url="http://127.0.0.1:9/recorder",
                        event_types=list(EVENT_NAMES),
                        filters={},
                        secret="whsec_recorder",
                    )
                )
        return Workspace(account.id, workspace.id, created.key.id, created.secret, account.plan)

    async def key(self, workspace: Workspace, permissions: str | list[str]) -> dict[str, str]:
        """Headers for another key of the same workspace with other permissions."""
        async with self.db.transaction() as session:
            created = await accounts_service.create_key(
                session, workspace.workspace_id, permissions=permissions
            )
        return {"x-api-key": created.secret}


@pytest.fixture
def factory(db: Database) -> Factory:
    return Factory(db)


@pytest.fixture
async def ws(factory: Factory) -> Workspace:
    """A Pro workspace (no write limit) with an all-permissions key."""
    return await factory.workspace("pro")


@asynccontextmanager
async def serve(app: Any, *, send_buffer: int | None = None) -> AsyncIterator[str]:
    """`app` served by a real uvicorn on 127.0.0.1 (lifespan on: the MCP session manager
    runs); yields its base URL. The port is the kernel's pick on a socket bound here, so
    parallel tests never race for one. `send_buffer` fixes the kernel's send buffer of every
    accepted connection (bytes), so that a client that stops reading stalls the response
    after a known, small amount instead of megabytes."""
    import uvicorn

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if send_buffer is not None:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
    listener.bind(("127.0.0.1", 0))
    port = int(listener.getsockname()[1])
    # A failed test may leave client sockets open: never wait for them forever at shutdown.
    config = uvicorn.Config(app, lifespan="on", log_level="warning", timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        for _ in range(500):
            if server.started or task.done():
                break
            await asyncio.sleep(0.01)
        assert server.started, "uvicorn did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        listener.close()


@pytest.fixture
async def server_url(app: Any) -> AsyncIterator[str]:
    """The test's app served by a real uvicorn (see `serve`), for clients that need a real
    socket."""
    async with serve(app) as url:
        yield url


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> Any:
    """Run `python -m mailroom ...` as a user would; returns the CompletedProcess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "mailroom", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def cli_env(settings: Settings) -> Iterator[dict[str, str]]:
    yield {
        "MAILROOM_DATABASE_URL": settings.resolved_database_url,
        "MAILROOM_DATA_DIR": str(settings.data_dir),
        "MAILROOM_SECRET_KEY": settings.secret_key,
    }
