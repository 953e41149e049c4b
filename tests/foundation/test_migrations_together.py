"""Processes started together (the servers and workers of a rollout) each apply pending
migrations at start: on PostgreSQL they take turns (an advisory lock), so none fails or waits
forever on another's half-made schema, and the database ends at head."""

from __future__ import annotations

import asyncio

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import create_async_engine

from mailroom.migrations import alembic_config, current_revision, upgrade
from tests.conftest import BACKEND, PG_URL

pytestmark = pytest.mark.skipif(
    BACKEND != "postgresql", reason="the migration lock is PostgreSQL's (SQLite has one writer)"
)


async def test_three_processes_migrate_a_new_database_together():
    fresh = make_url(PG_URL).set(database=f"{make_url(PG_URL).database}_together")
    admin = create_async_engine(
        make_url(PG_URL).set(database="postgres"), isolation_level="AUTOCOMMIT"
    )
    async with admin.connect() as connection:
        await connection.execute(text(f'DROP DATABASE IF EXISTS "{fresh.database}"'))
        await connection.execute(text(f'CREATE DATABASE "{fresh.database}"'))
    url = fresh.render_as_string(hide_password=False)
    try:
        outcomes = await asyncio.wait_for(
            asyncio.gather(*(upgrade(url) for _ in range(3)), return_exceptions=True), 120
        )
        assert [o for o in outcomes if o is not None] == []
        head = ScriptDirectory.from_config(alembic_config()).get_current_head()
        assert await current_revision(url) == head
    finally:
        async with admin.connect() as connection:
            await connection.execute(
                text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :d"),
                {"d": fresh.database},
            )
            await connection.execute(text(f'DROP DATABASE IF EXISTS "{fresh.database}"'))
        await admin.dispose()
