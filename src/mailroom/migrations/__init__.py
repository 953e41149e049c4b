"""Applying migrations from code (`mailroom db upgrade`, `mailroom serve`, the tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

HERE = Path(__file__).parent
# The advisory lock that lets one process at a time migrate a PostgreSQL database.
LOCK = 0x6D61696C726F6F6D  # "mailroom"


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(HERE))
    return config


async def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at `url` to `revision` (creating a SQLite file's folder if needed)."""
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            if connection.dialect.name == "postgresql":
                # Processes started together (servers and workers of a rollout) migrate one
                # at a time: the others wait here, then find the schema at head. The lock is
                # the session's, released when this connection closes.
                await connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": LOCK})
                await connection.commit()

            def run(sync_connection: Connection) -> None:
                config = alembic_config()
                config.attributes["connection"] = sync_connection
                command.upgrade(config, revision)

            await connection.run_sync(run)
            await connection.commit()
    finally:
        await engine.dispose()


async def current_revision(url: str) -> str | None:
    from alembic.runtime.migration import MigrationContext

    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:

            def read(sync_connection: Connection) -> str | None:
                return MigrationContext.configure(sync_connection).get_current_revision()

            return await connection.run_sync(read)
    finally:
        await engine.dispose()
