"""Test setup: a migrated database per test, the app over httpx's ASGI transport, factories.

The backend is chosen per run: `MAILROOM_TEST_BACKEND=sqlite` (default) or `postgresql`, which
uses `MAILROOM_TEST_DATABASE_URL` (`make test` runs the suite once for each). The schema always
comes from the migrations, never `create_all`:
- SQLite: migrated once into a template file, copied for each test (a fresh database each);
- PostgreSQL: the schema is rebuilt and migrated once per run; each test starts from empty
  tables.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
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
PG_URL = os.environ.get("MAILROOM_TEST_DATABASE_URL", "")
if BACKEND == "postgresql" and not PG_URL:
    raise RuntimeError("MAILROOM_TEST_BACKEND=postgresql needs MAILROOM_TEST_DATABASE_URL")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if BACKEND != "postgresql":
        # Row-lock behaviour exists only on PostgreSQL; `make test` runs those there.
        deselected = [i for i in items if i.get_closest_marker("postgresql_only")]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = [i for i in items if i not in deselected]


def pytest_report_header() -> str:
    return f"mailroom test backend: {BACKEND}"


async def _reset_postgres(url: str) -> None:
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


async def _empty_postgres(url: str) -> None:
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.execute(text(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE"))
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


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[Any]:
    application = create_app(settings)
    yield application
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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def server_url(app: Any) -> AsyncIterator[str]:
    """The test's app served by a real uvicorn on 127.0.0.1 (lifespan on: the MCP session
    manager runs), for clients that need a real socket."""
    import uvicorn

    port = _free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="on", log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    for _ in range(200):
        if server.started:
            break
        await asyncio.sleep(0.02)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    await task


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
