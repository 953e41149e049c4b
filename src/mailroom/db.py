"""Engine, sessions, the declarative Base, and the claim-due-rows helper for background work.

SQLite (the embedded default) allows one writer at a time. Rather than letting concurrent writers
collide and fail with `database is locked`, write transactions start with `BEGIN IMMEDIATE` on a
dedicated one-connection engine: writers in this process queue for that connection, writers in
other processes wait on SQLite's busy timeout, and reads (WAL) never wait for either.
PostgreSQL uses one pooled engine for both.

Read sessions never write. A deferred (read) transaction that has read and then writes is
refused at once when another connection committed in between (SQLITE_BUSY_SNAPSHOT: no busy
wait can help, its snapshot is stale), which under a busy worker was a 500 `database is
locked`; and whatever it wrote was rolled back with it anyway. So read sessions do not
autoflush, and on SQLite their connections are `query_only`: a write there fails loudly in
every test instead of now and then under load. Whatever a read path needs to record goes
through `Database.transaction()` afterwards.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from itertools import chain
from typing import Any, TypeVar

import orjson
from sqlalchemy import (
    JSON,
    ColumnElement,
    MetaData,
    String,
    Text,
    bindparam,
    cast,
    event,
    func,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, configure_mappers, mapped_column
from sqlalchemy.pool import AsyncAdaptedQueuePool

from mailroom.core import metrics
from mailroom.core.clock import utcnow
from mailroom.core.dbtypes import UTCDateTime

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


SQLITE_BUSY_TIMEOUT_MS = 30_000


def _measured_pool(name: str) -> type[AsyncAdaptedQueuePool]:
    """The engine's pool, timing each wait for a connection (core.metrics, label `name`)."""

    class MeasuredPool(AsyncAdaptedQueuePool):
        def _do_get(self) -> Any:
            started = time.perf_counter()
            try:
                return super()._do_get()
            finally:
                metrics.DB_CONNECTION_WAIT.labels(name).observe(time.perf_counter() - started)

    return MeasuredPool


def _count_in_use(engine: AsyncEngine, name: str) -> None:
    """Checked-out connections; a check-in counts only after its check-out (SQLAlchemy also
    checks in a connection whose reconnect failed, which was never out)."""
    gauge = metrics.DB_CONNECTIONS_IN_USE.labels(name)

    def checked_out(_connection: Any, record: Any, _proxy: Any) -> None:
        record.info["mailroom_out"] = True
        gauge.inc()

    def checked_in(_connection: Any, record: Any) -> None:
        if record.info.pop("mailroom_out", False):
            gauge.dec()

    event.listen(engine.sync_engine, "checkout", checked_out)
    event.listen(engine.sync_engine, "checkin", checked_in)


def _sqlite_engine(url: str, *, immediate: bool, pool_size: int) -> AsyncEngine:
    """`immediate`: the write engine (`BEGIN IMMEDIATE`); otherwise the read engine, whose
    connections refuse to write (`query_only`)."""
    name = "sqlite_write" if immediate else "sqlite_read"
    engine = create_async_engine(
        url,
        poolclass=_measured_pool(name),
        pool_size=pool_size,
        max_overflow=0 if immediate else 10,
        pool_timeout=120,
    )
    _count_in_use(engine, name)
    begin_sql = "BEGIN IMMEDIATE" if immediate else "BEGIN"

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event decide how transactions start (see module docstring).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        if not immediate:
            cursor.execute("PRAGMA query_only=ON")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql(begin_sql)

    return engine


class Database:
    """The process's engines and session factories for one database URL."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.dialect = "sqlite" if url.startswith("sqlite") else "postgresql"
        if self.dialect == "sqlite":
            self.engine = _sqlite_engine(url, immediate=False, pool_size=5)
            self.write_engine = _sqlite_engine(url, immediate=True, pool_size=1)
        else:
            self.engine = create_async_engine(
                url,
                poolclass=_measured_pool("postgresql"),
                pool_size=10,
                max_overflow=20,
                pool_pre_ping=True,
                # JIT compiling costs 100s of ms on every statement that touches thousands of
                # rows (bulk actions, imports) and buys nothing for short OLTP statements.
                connect_args={"server_settings": {"jit": "off"}},
            )
            _count_in_use(self.engine, "postgresql")
            self.write_engine = self.engine
        # No autoflush: a change made to a row read here stays a pending change of that
        # object (the caller may write it in a transaction of its own), never a write here.
        self._read = async_sessionmaker(self.engine, expire_on_commit=False, autoflush=False)
        self._write = async_sessionmaker(self.write_engine, expire_on_commit=False)

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    def session(self, *, write: bool = True) -> AsyncSession:
        return (self._write if write else self._read)()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """One short write unit of work: commits on success, rolls back on any error."""
        async with self.session(write=True) as session:
            try:
                yield session
                await session.commit()
            except BaseException:
                await session.rollback()
                raise

    async def warm(self) -> None:
        """Open a first connection on each engine, so the first request does not pay for
        connecting (and, on PostgreSQL, asyncpg's type introspection: ~50 ms with the event
        loop busy). A database that is not up yet is only logged: requests retry it. The ORM's
        mappers are configured here too, for the same reason (tens of ms on first use)."""
        configure_mappers()
        try:
            for engine in {self.engine, self.write_engine}:
                async with engine.connect() as connection:
                    await connection.exec_driver_sql("SELECT 1")
        except Exception as problem:
            logging.getLogger("mailroom.db").warning("database not reachable yet: %s", problem)

    async def dispose(self) -> None:
        await self.engine.dispose()
        if self.write_engine is not self.engine:
            await self.write_engine.dispose()


def insert_ignoring_conflicts(session: AsyncSession, model: Any) -> Any:
    """`INSERT ... ON CONFLICT DO NOTHING` in the session's dialect: a concurrent duplicate
    is skipped instead of failing the transaction (add `.returning(...)` to see what went in)."""
    if session.get_bind().dialect.name == "postgresql":
        return postgresql_insert(model).on_conflict_do_nothing()
    return sqlite_insert(model).on_conflict_do_nothing()


# Worker hosts refresh their heartbeat this often (worker.py), and one silent for
# HEARTBEAT_STALE_SECONDS is dead: three missed beats, so a slow beat is not a death.
HEARTBEAT_SECONDS = 5
HEARTBEAT_STALE_SECONDS = 15


async def serialise(session: AsyncSession, *keys: str) -> None:
    """Until this transaction ends, one transaction at a time holds each of `keys`: "count,
    then insert" under a cap becomes one step. PostgreSQL takes transaction-scoped advisory
    locks (READ COMMITTED would let two writers both count N and both insert); SQLite's write
    transaction is exclusive already. Re-entrant within a transaction.

    Lock order, to never wait crosswise: an account's `contact-cap:<account>` before a
    workspace's `custom-fields:<workspace>` (imports and contact creates register fields); a
    store's `ecommerce-store:<store>` before its workspace's `ecommerce-totals:<workspace>`."""
    if session.get_bind().dialect.name != "postgresql":
        return
    for key in keys:
        await session.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"), {"key": key}
        )


class DueWork:
    """Columns of a row that background work picks up when due (see `claim_due`)."""

    status: Mapped[str] = mapped_column(String(20), default="pending")
    run_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    locked_by: Mapped[str | None] = mapped_column(String(64), default=None)


DueRow = TypeVar("DueRow", bound=DueWork)


def due_work_models() -> list[Any]:
    """Every mapped table carrying `DueWork` columns (once `mailroom.models` is imported)."""
    return [m for m in DueWork.__subclasses__() if hasattr(m, "__table__")]


def dead_workers(dialect: str, now: datetime) -> Any:
    """`SELECT id FROM workers` whose heartbeat is stale.

    PostgreSQL judges by its own clock (heartbeats are written with `now()` there too), so
    workers on machines whose clocks disagree never take each other for dead; SQLite has one
    machine and one clock.
    """
    workers = Base.metadata.tables["workers"]
    stale = timedelta(seconds=HEARTBEAT_STALE_SECONDS)
    before: Any = func.now() - stale if dialect == "postgresql" else now - stale
    return select(workers.c.id).where(workers.c.heartbeat_at < before)


async def claim_due(
    session: AsyncSession,
    model: type[DueRow],
    *,
    worker_id: str,
    limit: int,
    lease_seconds: int,
    where: Sequence[ColumnElement[bool]] = (),
    order_by: Sequence[Any] = (),
    now: datetime | None = None,
) -> list[DueRow]:
    """Lease up to `limit` due rows of `model` to `worker_id` and return them.

    A row is due when it is `pending`, its `run_at` has come, and no live claim holds it: no
    lease, a lease that has run out, or a lease held by a worker whose heartbeat is stale
    (worker.py keeps one per running host). So a killed worker's rows come back within
    seconds, and the lease is the backstop for claimers without a heartbeat row (tests,
    one-off commands) or when the workers table was emptied (at-least-once either way).

    Why a condition here rather than a reaper clearing dead workers' locks: it covers every
    DueWork table with no extra loop, no index on `locked_by` and no reaper delay, and it
    costs one uncorrelated subquery over the handful of worker rows, which PostgreSQL hashes
    once per statement (SQLite builds it once too); the scan still walks the
    `(status, run_at)` index, so the claim stays one index-ordered statement.
    On PostgreSQL, `FOR UPDATE SKIP LOCKED` lets many workers claim concurrently without ever
    taking the same row; on SQLite the write transaction itself is exclusive.
    `order_by` picks which due rows go first (default: the longest due).
    The caller commits right after claiming, then works the rows in later transactions.
    """
    now = now or utcnow()
    table: Any = model
    dialect = session.get_bind().dialect.name
    due = (
        select(table.id)
        .where(*due_condition(model, dialect, now), *where)
        .order_by(*(order_by or (table.run_at,)))
        .limit(limit)
    )
    if dialect == "postgresql":
        due = due.with_for_update(skip_locked=True)
    stmt = (
        update(table)
        .where(table.id.in_(due.scalar_subquery()))
        .values(locked_until=now + timedelta(seconds=lease_seconds), locked_by=worker_id)
        .returning(table)
        .execution_options(synchronize_session=False)
    )
    rows = list((await session.scalars(stmt)).all())
    # RETURNING has no order: put them back in the claim's.
    keys = [getattr(column, "key", "run_at") for column in order_by or (table.run_at,)]
    rows.sort(key=lambda row: tuple(getattr(row, key) for key in keys))
    return rows


def due_condition(model: type[DueWork], dialect: str, now: datetime) -> list[ColumnElement[bool]]:
    """What makes a row of `model` due for `claim_due`: pending, its time come, no live lease.
    Also for a read-only look whether a claim would find anything (webhooks.delivery)."""
    table: Any = model
    return [
        table.status == "pending",
        table.run_at <= now,
        or_(
            table.locked_until.is_(None),
            table.locked_until < now,
            table.locked_by.in_(dead_workers(dialect, now)),
        ),
    ]


def chunks(session: AsyncSession, values: Sequence[Any], sqlite_size: int = 900) -> list[list[Any]]:
    """Values split for `among()`: SQLite caps bound parameters, PostgreSQL takes one array."""
    if session.get_bind().dialect.name == "postgresql":
        return [list(values)] if values else []
    return [list(values[i : i + sqlite_size]) for i in range(0, len(values), sqlite_size)]


AMONG = "among_values"  # the parameter `among()` reads its values from


def among(session: AsyncSession, column: Any) -> ColumnElement[bool]:
    """`column IN <values>`, planned well for thousands of values, which the caller passes
    at execution as `{AMONG: values}`.

    On PostgreSQL a long IN list is checked value by value for every row the planner scans
    (and right after a bulk load its statistics may say "scan"); `IN (SELECT unnest(array))`
    is a semi-join the planner hashes. SQLite turns an IN list into an index on its own.
    The values are an execution parameter, never part of the statement: a cached compiled
    statement would keep the values it was first built with alive, and 50,000 strings left
    scattered over the heap keep ~100 MB of it from ever being given back.
    """
    if session.get_bind().dialect.name == "postgresql":
        array = cast(bindparam(AMONG, type_=ARRAY(Text)), ARRAY(Text))
        return cast(column, Text).in_(select(func.unnest(array)))
    return column.in_(bindparam(AMONG, expanding=True))


def sql_uuid(dialect: str) -> str:
    """A SQL expression making a random (version 4) UUID string, for INSERT ... SELECT."""
    if dialect == "postgresql":
        return "gen_random_uuid()::text"
    return (
        "lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || "
        "substr(lower(hex(randomblob(2))), 2) || '-' || "
        "substr('89ab', 1 + abs(random()) % 4, 1) || substr(lower(hex(randomblob(2))), 2) || "
        "'-' || lower(hex(randomblob(6)))"
    )


ANALYZE_AFTER = 5000
BULK_CHUNK = 10_000


async def bulk_insert(session: AsyncSession, model: Any, rows: Iterable[dict[str, Any]]) -> int:
    """Insert many rows in as few statements as the database allows; returns how many.

    PostgreSQL: COPY (~10x faster than INSERTs, and a statement-level trigger fires once per
    chunk instead of once per row). SQLite: executemany of plain tuples, values converted here
    once per column rather than by the ORM per row. `rows` may be a generator: it is consumed
    in chunks, so memory stays bounded. Rows carry every column the table needs (Python-side
    column defaults do not run).
    """
    iterator = iter(rows)
    first = next(iterator, None)
    if first is None:
        return 0
    table = model.__table__
    columns = list(first)
    dialect = session.get_bind().dialect.name
    converters = [(i, _converter(table.c[c].type, dialect)) for i, c in enumerate(columns)]
    converters = [(i, f) for i, f in converters if f is not None]

    def record(row: dict[str, Any]) -> tuple[Any, ...]:
        values = [row[c] for c in columns]
        for i, convert in converters:
            values[i] = convert(values[i])
        return tuple(values)

    connection = await session.connection()
    total = 0
    if dialect == "postgresql":
        # One COPY fed as rows are made: the server indexes what it has received while
        # Python makes the next rows (two cores busy instead of taking turns).
        async def records() -> AsyncIterator[tuple[Any, ...]]:
            nonlocal total
            for row in chain((first,), iterator):
                total += 1
                yield record(row)

        raw = await connection.get_raw_connection()
        copy = raw.driver_connection.copy_records_to_table  # type: ignore[union-attr]
        await copy(table.name, records=records(), columns=columns)
    else:
        placeholders = ", ".join("?" for _ in columns)
        sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({placeholders})"
        for chunk in _chunked(chain((first,), iterator), BULK_CHUNK):
            total += len(chunk)
            await connection.exec_driver_sql(sql, [record(row) for row in chunk])
    if dialect == "postgresql" and total >= ANALYZE_AFTER:
        # Right after a bulk load the planner's statistics still describe the table as it
        # was (often empty), and it picks nested loops that take minutes; refresh them.
        await connection.exec_driver_sql(f"ANALYZE {table.name} ({_planned_columns(table)})")
    return total


def _planned_columns(table: Any) -> str:
    """The columns plans are estimated from: all but JSON and unbounded text, whose sampling
    is most of ANALYZE's time (~0.3 s of 50,000 contacts) and which no plan needs statistics
    for; autovacuum analyzes them later."""
    return ", ".join(
        column.name for column in table.columns if not isinstance(column.type, JSON | Text)
    )


def _chunked(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _converter(column_type: Any, dialect: str) -> Any:
    """Python value -> what the driver stores for this column (as the ORM would bind it), or
    None when the value goes as it is."""
    if isinstance(column_type, JSON):
        return _json_text
    if isinstance(column_type, UTCDateTime) and dialect != "postgresql":
        return _sqlite_time
    return None


def _json_text(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


@lru_cache(maxsize=4096)
def _sqlite_time(value: datetime | None) -> str | None:
    # Memoised: a bulk insert mostly repeats one "now".
    return None if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
