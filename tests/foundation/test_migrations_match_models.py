"""The migrations build exactly the schema the models declare: a model change without its
migration (or a migration that drifts from the model) fails here, on the backend of the run."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.ext.asyncio import create_async_engine

import mailroom.models  # noqa: F401  (every table on the metadata)
from mailroom.db import Base


def _differences(connection) -> list:
    def include(obj, name, type_, reflected, compare_to):
        ddl_if = getattr(obj, "_ddl_if", None)  # indexes declared for one dialect only
        if type_ == "index" and ddl_if is not None and ddl_if.dialect:
            return ddl_if.dialect == connection.dialect.name
        return True

    context = MigrationContext.configure(
        connection, opts={"compare_type": True, "include_object": include}
    )
    return compare_metadata(context, Base.metadata)


async def test_the_migrated_schema_is_the_models_schema(database_url):
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            differences = await connection.run_sync(_differences)
    finally:
        await engine.dispose()
    assert differences == []
