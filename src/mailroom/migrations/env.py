"""Alembic environment: async engines, batch mode on SQLite (its ALTER TABLE is limited).

`mailroom.migrations.upgrade()` hands in an open connection; the `alembic` command line makes
its own engine from MAILROOM_DATABASE_URL.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

import mailroom.models  # noqa: F401  (registers every table)
from mailroom.db import Base
from mailroom.settings import Settings

config = context.config
target_metadata = Base.metadata


def _include(obj, name, type_, reflected, compare_to):
    """Autogenerate: skip indexes declared for the other dialect (Index(...).ddl_if)."""
    ddl_if = getattr(obj, "_ddl_if", None)
    if type_ == "index" and ddl_if is not None and ddl_if.dialect:
        return ddl_if.dialect == context.get_bind().dialect.name
    return True


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_object=_include,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_with_own_engine() -> None:
    url = config.get_main_option("sqlalchemy.url") or Settings().resolved_database_url
    engine = create_async_engine(url)
    async with engine.connect() as connection:
        await connection.run_sync(_run)
        await connection.commit()
    await engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; run against a database")

shared = config.attributes.get("connection")
if shared is not None:
    _run(shared)
else:
    asyncio.run(_run_with_own_engine())
