"""Applying migrations from code (`mailroom db upgrade`, `mailroom serve`, the tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

HERE = Path(__file__).parent


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
