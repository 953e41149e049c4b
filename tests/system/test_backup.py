"""`mailroom backup` / `mailroom restore`: a consistent copy taken while the installation keeps
writing, restored into a new directory that then serves the same data with the same secret;
damaged, foreign, unsafe and misdirected archives refused with nothing changed; PostgreSQL
through pg_dump / pg_restore."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import hashlib
import io
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tarfile
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image
from sqlalchemy import make_url

from mailroom.app import create_app
from mailroom.domains import keys
from mailroom.migrations import alembic_config, current_revision, upgrade
from mailroom.models import SendingDomain
from mailroom.settings import Settings
from mailroom.system import backup as backups
from tests.conftest import BACKEND
from tests.sending.helpers import campaign_body

SQLITE_ONLY = pytest.mark.skipif(
    BACKEND != "sqlite",
    reason="an installation on SQLite (its own data directory): runs with "
    "MAILROOM_TEST_BACKEND=sqlite",
)
POSTGRESQL_ONLY = pytest.mark.skipif(
    BACKEND != "postgresql",
    reason="needs the PostgreSQL server of MAILROOM_TEST_BACKEND=postgresql "
    "(MAILROOM_TEST_DATABASE_URL); the pg_dump refusal is tested on every backend",
)


# ---------------------------------------------------------------- helpers


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    """An operator's MAILROOM_* settings: the default SQLite database and a secret key
    generated into the data directory, the file outbox."""
    env: dict[str, str] = {}
    env.update(
        {
            "MAILROOM_DATA_DIR": str(data_dir),
            "MAILROOM_PUBLIC_URL": "http://testserver",
            "MAILROOM_SEND_PROCESSES": "0",
            "MAILROOM_WORKER_POLL_INTERVAL": "0.1",
        }
    )
    env.update(extra)
    return env


def _cli(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`mailroom <args>` as a user runs it, in its own process, with `env`'s MAILROOM_*
    settings and none of the test run's."""
    inherited = {key: value for key, value in os.environ.items() if not key.startswith("MAILROOM_")}
    return subprocess.run(
        [sys.executable, "-m", "mailroom", *args],
        capture_output=True,
        text=True,
        env={**inherited, **env},
        timeout=timeout,
        check=False,
    )


class _Ran:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def _invoke(*args: str, env: dict[str, str]) -> _Ran:
    """`mailroom <args>` run in this process (no interpreter start-up, for the many refusals),
    with exactly `env`'s MAILROOM_* settings."""
    from typer.testing import CliRunner

    from mailroom.cli import app
    from mailroom.settings import get_settings

    unset: dict[str, str | None] = {key: None for key in os.environ if key.startswith("MAILROOM_")}
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(app, list(args), env={**unset, **env, "COLUMNS": "200"})
    finally:
        get_settings.cache_clear()
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return _Ran(result.exit_code, result.stdout, result.stderr)


def _said(result: subprocess.CompletedProcess[str] | _Ran) -> str:
    """stdout and stderr as one line (the terminal wraps long messages)."""
    return " ".join((result.stdout + " " + result.stderr).split())


def _settings(data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "database_url": "",
        "secret_key": "",
        "media_dir": None,
        "media_backend": "local",
        "smtp_url": "",
        "public_url": "http://testserver",
    }
    values.update(overrides)
    return Settings(**values)


@contextlib.asynccontextmanager
async def _installation(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """An app on `settings` (as `mailroom serve` would open it), through its API."""
    app = create_app(settings)
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            c.app = app  # type: ignore[attr-defined]
            yield c
    finally:
        await app.state.hits.close()
        await app.state.db.dispose()


def _state(*folders: Path) -> dict[str, str]:
    """Every file under `folders` with its SHA-256: a target's state, to show it unchanged."""
    found = {}
    for folder in folders:
        if folder.is_dir():
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), (10, 120, 200)).save(buffer, format="PNG")
    return buffer.getvalue()


def _repack(
    source: Path,
    target: Path,
    change: Callable[[str, bytes], bytes] = lambda _name, data: data,
    extra: list[tarfile.TarInfo] | None = None,
) -> None:
    """`source` written again as `target`, each member's bytes through `change`, `extra`
    members added before the manifest (the manifest itself is kept as it was)."""
    with tarfile.open(source, "r:gz") as tar:
        members = [(info, tar.extractfile(info).read()) for info in tar.getmembers()]  # type: ignore[union-attr]
    with tarfile.open(target, "w:gz") as out:
        for info, data in members:
            if info.name == backups.MANIFEST:
                for added in extra or []:
                    out.addfile(added, io.BytesIO(b"x" * added.size) if added.isreg() else None)
            data = change(info.name, data)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))


def _members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive, "r:gz") as tar:
        return {info.name: tar.extractfile(info).read() for info in tar.getmembers()}  # type: ignore[union-attr]


async def _all_contacts(client: httpx.AsyncClient, headers: dict[str, str]) -> set[str]:
    emails: set[str] = set()
    page = 1
    while True:
        response = await client.get(
            "/api/v1/contacts", params={"limit": 100, "page": page}, headers=headers
        )
        assert response.status_code == 200, response.text
        contacts = response.json()["contacts"]
        if not contacts:
            return emails
        emails.update(contact["email"] for contact in contacts)
        page += 1


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.asynccontextmanager
async def _serving(env: dict[str, str], log_path: Path) -> AsyncIterator[str]:
    """`mailroom serve` (its worker loops in-process) on the installation of `env`."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "mailroom", "serve", "--port", str(port)],
            env={
                **{k: v for k, v in os.environ.items() if not k.startswith("MAILROOM_")},
                **env,
                "MAILROOM_PUBLIC_URL": base,
            },
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:
            async with httpx.AsyncClient(base_url=base) as probe:
                deadline = time.monotonic() + 60
                while True:
                    if process.poll() is not None:
                        raise AssertionError(log_path.read_text()[-3000:])
                    with contextlib.suppress(httpx.TransportError):
                        if (await probe.get("/healthz")).status_code == 200:
                            break
                    assert time.monotonic() < deadline, "mailroom serve did not answer"
                    await asyncio.sleep(0.1)
            yield base
        finally:
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def _ok(response: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    return body


# ---------------------------------------------------------------- SQLite, while serving


@SQLITE_ONLY
async def test_a_backup_taken_while_serving_restores_into_a_new_directory(
    tmp_path: Path, migrated_template: str
) -> None:
    source, target = tmp_path / "source", tmp_path / "restored"
    source.mkdir(mode=0o700)
    shutil.copyfile(migrated_template, source / "mailroom.db")
    env = _env(source)
    made = _cli("admin", "create-workspace", "--plan", "pro", "--json", env=env)
    assert made.returncode == 0, made.stderr
    headers = {"x-api-key": json.loads(made.stdout)["api_key"]}
    archive = tmp_path / "mailroom.tar.gz"
    image = _png()
    before: set[str] = set()  # created (answered) before the backup started
    attempted: set[str] = set()
    after: set[str] = set()  # asked for after the backup had finished
    overlapped = 0

    async with (
        _serving(env, tmp_path / "serve.log") as base,
        httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as api,
    ):
        list_id = (await _ok(await api.post("/api/v1/lists", json={"name": "News"}), 201))["list"][
            "id"
        ]

        async def create(email: str) -> str:
            attempted.add(email)
            body = await _ok(await api.post("/api/v1/contacts", json={"email": email}), 201)
            return str(body["contact"]["id"])

        ids = []
        for start in range(0, 150, 10):
            ids += await asyncio.gather(
                *(create(f"before-{i}@example.com") for i in range(start, start + 10))
            )
        await _ok(
            await api.post(
                f"/api/v1/lists/{list_id}/contacts",
                json={"contact_ids": ids, "status": "confirmed"},
            )
        )
        uploaded = await _ok(
            await api.post("/api/v1/media", files={"file": ("logo.png", image, "image/png")}),
            201,
        )
        media_id = uploaded["file"]["id"]
        domain = (
            await _ok(await api.post("/api/v1/domains", json={"domain": "shop.example"}), 201)
        )["domain"]
        await _ok(
            await api.post(
                "/api/v1/suppressions",
                json={"entries": ["gone@example.com"], "reason": "unsubscribed"},
            )
        )
        campaign = (
            await _ok(await api.post("/api/v1/campaigns", json=campaign_body(list_id)), 201)
        )["campaign"]
        await _ok(await api.post(f"/api/v1/campaigns/{campaign['id']}/send"), 202)
        before |= attempted

        # Writes go on through the whole backup: contact creations one after another, and the
        # campaign's send, which the server's worker is making meanwhile.
        window: dict[str, float] = {}
        stop = asyncio.Event()

        async def writer() -> None:
            nonlocal overlapped
            i = 0
            while not stop.is_set():
                email = f"during-{i}@example.com"
                asked = time.monotonic()
                if "ended" in window:
                    after.add(email)
                await create(email)
                answered = time.monotonic()
                if "started" in window and asked > window["started"] and "ended" not in window:
                    overlapped += answered > asked
                i += 1

        async def until(check: Callable[[], bool]) -> None:
            deadline = time.monotonic() + 60
            while not check():
                assert not writing.done(), writing.exception()
                assert time.monotonic() < deadline, "the writer stalled"
                await asyncio.sleep(0.05)

        writing = asyncio.create_task(writer())
        await until(lambda: len(attempted) >= len(before) + 3)
        window["started"] = time.monotonic()
        made_backup = await asyncio.to_thread(_cli, "backup", str(archive), env=env)
        window["ended"] = time.monotonic()
        await until(lambda: len(after) >= 2)  # one asked for after the end, and answered
        stop.set()
        await writing
        assert made_backup.returncode == 0, made_backup.stderr
        said = _said(made_backup)
        assert "Backed up the SQLite database" in said
        assert "the secret key, 1 media file" in said
        assert overlapped > 0, "no write went on while the backup ran"
        assert after, "no write after the backup"

        # A running installation is never restored over, --force or not.
        over = _cli("restore", str(archive), "--force", env=env)
        assert over.returncode == 1
        assert "Mailroom is running on the target database" in _said(over)

    # The archive: the database copy, the secret, the image; no live database file, no outbox.
    members = _members(archive)
    assert set(members) == {
        backups.SQLITE_MEMBER,
        backups.SECRET_MEMBER,
        f"media/{media_id}",
        backups.MANIFEST,
    }
    assert (source / "outbox").is_dir()  # the send wrote there, and it is left out
    manifest = json.loads(members[backups.MANIFEST])
    assert manifest["format"] == "mailroom-backup"
    assert manifest["format_version"] == 1
    assert manifest["database"]["kind"] == "sqlite"
    assert manifest["database"]["revision"] == await current_revision(
        _settings(source).resolved_database_url
    )
    assert manifest["created_at"].endswith("Z")
    for entry in manifest["files"]:
        data = members[entry["path"]]
        assert (entry["size"], entry["sha256"]) == (len(data), hashlib.sha256(data).hexdigest())
    assert oct(archive.stat().st_mode & 0o777) == "0o600"  # it holds the secret key

    # The stopped installation holds data: not restored over without --force, untouched.
    untouched = _state(source)
    refused = _cli("restore", str(archive), env=env)
    assert refused.returncode == 1
    assert "The target is not empty" in _said(refused)
    assert "Pass --force" in _said(refused)
    assert _state(source) == untouched

    # Restored into a new, empty directory.
    restored = _cli("restore", str(archive), env=_env(target))
    assert restored.returncode == 0, restored.stderr
    said = _said(restored)
    assert "every checksum matches" in said
    assert "Restored the secret key" in said
    assert "Restored 1 media file" in said
    assert (target / "secret_key").read_bytes() == (source / "secret_key").read_bytes()
    assert oct((target / "secret_key").stat().st_mode & 0o777) == "0o600"
    copy = sqlite3.connect(target / "mailroom.db")
    try:
        assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        # The serving process's heartbeat was in the copy; it runs nowhere here.
        assert copy.execute("SELECT count(*) FROM workers").fetchone() == (0,)
    finally:
        copy.close()
    # So restoring again at once is not taken for a running installation.
    again = _cli("restore", str(archive), "--force", env=_env(target))
    assert again.returncode == 0, _said(again)

    settings = _settings(target)
    async with _installation(settings) as client:
        # The same contacts, through the API with a key made before the backup: everything
        # answered before it started, nothing asked for after it ended.
        emails = await _all_contacts(client, headers)
        assert before <= emails
        assert not emails & after
        assert emails <= attempted
        # The image's bytes.
        served = await client.get(f"/media/{media_id}")
        assert served.status_code == 200
        assert served.content == image
        # The same secret: the suppressed address's HMAC matches, the DKIM key opens.
        check = await _ok(
            await client.get(
                "/api/v1/suppressions", params={"email": "gone@example.com"}, headers=headers
            )
        )
        assert check["suppressed"] is True
        async with client.app.state.db.session() as session:  # type: ignore[attr-defined]
            row = await session.get(SendingDomain, domain["id"])
        assert row is not None
        private = keys.unseal(settings.resolved_secret_key, row.id, row.dkim_private_key)
        assert keys.load_private(private).key_size == 2048
        with pytest.raises(keys.KeyUnavailable):
            keys.unseal("another secret", row.id, row.dkim_private_key)
        shown = await _ok(await client.get(f"/api/v1/campaigns/{campaign['id']}", headers=headers))
        assert shown["campaign"]["id"] == campaign["id"]


@SQLITE_ONLY
async def test_the_copy_is_one_snapshot_while_another_connection_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows written between the online backup's steps are not in the copy, and the steps
    never restart (without the read transaction each write restarts the copy)."""
    path = tmp_path / "live.db"
    live = sqlite3.connect(path, isolation_level=None)
    live.execute("PRAGMA journal_mode=WAL")
    live.execute("CREATE TABLE t (n INTEGER, pad BLOB)")
    live.execute("BEGIN")
    live.executemany("INSERT INTO t VALUES (?, randomblob(400))", [(n,) for n in range(3000)])
    live.execute("COMMIT")
    writer = sqlite3.connect(path, isolation_level=None)
    steps = 0

    class Writing:
        def update(self, completed: int, total: int | None = None) -> None:
            nonlocal steps
            steps += 1
            writer.execute("INSERT INTO t VALUES (-1, randomblob(400))")

    class Quiet(backups.Report):
        @contextlib.contextmanager
        def bar(
            self, description: str, total: int | None, *, spinner: bool = False
        ) -> Iterator[Any]:
            yield Writing()

    monkeypatch.setattr(backups, "SQLITE_STEP_PAGES", 8)
    from rich.console import Console

    report = Quiet(Console(file=io.StringIO()), Console(file=io.StringIO()))
    copy = tmp_path / "copy.db"
    backups.snapshot_sqlite(path, copy, report)
    pages = live.execute("PRAGMA page_count").fetchone()[0]
    assert steps <= pages // 8 + 2  # no restart
    copied = sqlite3.connect(copy)
    try:
        assert copied.execute("SELECT count(*), min(n) FROM t").fetchone() == (3000, 0)
        assert copied.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert copied.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    finally:
        copied.close()
    assert live.execute("SELECT count(*) FROM t WHERE n = -1").fetchone() == (steps,)
    assert oct(copy.stat().st_mode & 0o777) == "0o600"
    live.close()
    writer.close()


# ---------------------------------------------------------------- refusals


def _installed(data_dir: Path, template: str) -> dict[str, str]:
    """A stopped installation with a workspace (its database from the migrated template);
    its environment."""
    data_dir.mkdir(mode=0o700, parents=True)
    shutil.copyfile(template, data_dir / "mailroom.db")
    env = _env(data_dir)
    made = _invoke("admin", "create-workspace", "--json", env=env)
    assert made.returncode == 0, made.stderr
    return env


@pytest.fixture(scope="module")
def small_backup(
    tmp_path_factory: pytest.TempPathFactory, migrated_template: str
) -> tuple[Path, Path]:
    """An installation with a workspace, a secret key and an image, and its backup (shared:
    no test changes either)."""
    tmp_path = tmp_path_factory.mktemp("small")
    source = tmp_path / "source"
    env = _installed(source, migrated_template)
    (source / "secret_key").write_text("a-secret-of-the-source-installation")
    os.chmod(source / "secret_key", 0o600)
    (source / "media").mkdir()
    (source / "media" / "abcdefghijklmnopqrstuvwx.png").write_bytes(_png())
    archive = tmp_path / "small.tar.gz"
    made = _invoke("backup", str(archive), env=env)
    assert made.returncode == 0, made.stderr
    return source, archive


@SQLITE_ONLY
@pytest.mark.parametrize(
    "member", [backups.SQLITE_MEMBER, "media/abcdefghijklmnopqrstuvwx.png", backups.SECRET_MEMBER]
)
def test_a_damaged_member_is_refused_and_nothing_changes(
    small_backup: tuple[Path, Path], tmp_path: Path, member: str
) -> None:
    source, archive = small_backup
    damaged = tmp_path / "damaged.tar.gz"

    def flip(name: str, data: bytes) -> bytes:
        if name != member:
            return data
        middle = len(data) // 2
        return data[:middle] + bytes([data[middle] ^ 0x01]) + data[middle + 1 :]

    _repack(archive, damaged, flip)
    empty = tmp_path / "empty"
    result = _invoke("restore", str(damaged), env=_env(empty))
    assert result.returncode == 1
    said = _said(result)
    assert f"is damaged: {member} does not match its checksum in the manifest" in said
    assert "nothing was changed" in said
    assert not empty.exists()
    # Into an installation with --force: refused before anything is touched.
    untouched = _state(source)
    result = _invoke("restore", str(damaged), "--force", env=_env(source))
    assert result.returncode == 1
    assert "does not match its checksum" in _said(result)
    assert _state(source) == untouched


@SQLITE_ONLY
def test_damaged_foreign_and_unsafe_archives_are_refused(
    small_backup: tuple[Path, Path], tmp_path: Path
) -> None:
    _source, archive = small_backup
    target = tmp_path / "target"
    env = _env(target)

    def refused(path: Path) -> str:
        result = _invoke("restore", str(path), env=env)
        assert result.returncode == 1, result.stdout
        assert not target.exists()
        return _said(result)

    # A byte flipped in the compressed stream: where it changes what the stream holds (a few
    # bytes of a deflate block header describe codes no data uses: flipping one of those
    # damages nothing, and such an archive is rightly restored).
    original = archive.read_bytes()
    flipped = tmp_path / "flipped.tar.gz"
    for position in range(len(original) // 2, len(original)):
        raw = bytearray(original)
        raw[position] ^= 0xFF
        try:
            if gzip.decompress(bytes(raw)) == gzip.decompress(original):
                continue
        except (OSError, EOFError, zlib.error):
            pass
        break
    flipped.write_bytes(bytes(raw))
    assert "is damaged" in refused(flipped)
    # Cut short: no manifest.
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    assert "nothing was changed" in refused(cut)
    # Another program's archive.
    foreign = tmp_path / "foreign.tar.gz"
    with tarfile.open(foreign, "w:gz") as tar:
        info = tarfile.TarInfo("notes/todo.txt")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"todo"))
    assert "is not a Mailroom backup" in refused(foreign)
    # Not even a tar.gz.
    text = tmp_path / "text.tar.gz"
    text.write_text("hello")
    assert "nothing was changed" in refused(text)
    # Members that would land outside the target: `..`, absolute, a link.
    escape = tarfile.TarInfo("media/../../escaped.txt")
    escape.size = 1
    absolute = tarfile.TarInfo(str(tmp_path / "absolute.txt"))
    absolute.size = 1
    link = tarfile.TarInfo("media/link.png")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    for bad in (escape, absolute, link):
        unsafe = tmp_path / "unsafe.tar.gz"
        _repack(archive, unsafe, extra=[bad])
        said = refused(unsafe)
        assert "holds an unsafe member" in said, said
        assert not (tmp_path / "escaped.txt").exists()
        assert not (tmp_path / "absolute.txt").exists()


@SQLITE_ONLY
def test_a_link_in_the_target_is_never_followed(
    small_backup: tuple[Path, Path], tmp_path: Path
) -> None:
    """tarfile's `data` filter: a media file of the target that is a link to elsewhere makes
    the restore stop before anything is put in place."""
    _source, archive = small_backup
    target = tmp_path / "target"
    (target / "media").mkdir(parents=True)
    outside = tmp_path / "outside.png"
    outside.write_bytes(b"not Mailroom's")
    (target / "media" / "abcdefghijklmnopqrstuvwx.png").symlink_to(outside)
    result = _invoke("restore", str(archive), "--force", env=_env(target))
    assert result.returncode == 1
    assert "holds an unsafe member 'media/abcdefghijklmnopqrstuvwx.png'" in _said(result)
    assert outside.read_bytes() == b"not Mailroom's"
    assert sorted(p.name for p in target.rglob("*")) == ["abcdefghijklmnopqrstuvwx.png", "media"]


@SQLITE_ONLY
def test_a_non_empty_target_needs_force_and_another_secret_is_refused(
    small_backup: tuple[Path, Path], tmp_path: Path, migrated_template: str
) -> None:
    source, archive = small_backup
    other = tmp_path / "other"
    env = _installed(other, migrated_template)
    (other / "secret_key").write_text("the-other-installation's-secret")
    untouched = _state(other)
    result = _invoke("restore", str(archive), env=env)
    assert result.returncode == 1
    said = _said(result)
    assert "The target is not empty: the database" in said
    assert "holds another secret key" in said
    assert _state(other) == untouched
    # --check says so too, changing nothing.
    checked = _invoke("restore", str(archive), "--check", env=env)
    assert checked.returncode == 1
    assert _state(other) == untouched

    # A MAILROOM_SECRET_KEY that is not the backup's: refused even with --force.
    wrong = _invoke("restore", str(archive), "--force", env={**env, "MAILROOM_SECRET_KEY": "nope"})
    assert wrong.returncode == 1
    assert "sealed with another secret key than MAILROOM_SECRET_KEY" in _said(wrong)
    assert _state(other) == untouched

    # With --force: the backup's database, secret and image replace the other installation's.
    forced = _invoke("restore", str(archive), "--force", env=env)
    assert forced.returncode == 0, forced.stderr
    assert (other / "secret_key").read_text() == (source / "secret_key").read_text()
    assert (
        not (other / "mailroom.db-wal").exists() or (other / "mailroom.db-wal").stat().st_size == 0
    )
    listed = _invoke("admin", "list-workspaces", "--json", env=env)
    from_source = _invoke("admin", "list-workspaces", "--json", env=_env(source))
    assert json.loads(listed.stdout) == json.loads(from_source.stdout)


@SQLITE_ONLY
def test_a_server_started_while_the_archive_is_unpacked_stops_the_restore(
    small_backup: tuple[Path, Path],
    tmp_path: Path,
    migrated_template: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The target is checked again once the archive is unpacked, before anything is replaced:
    a server that started meanwhile is found there, not left writing into a replaced file."""
    from mailroom.db import Database
    from mailroom.system import restore as restores
    from mailroom.worker import SERVER, beat

    _source, archive = small_backup
    other = tmp_path / "other"
    env = _installed(other, migrated_template)
    unpack = restores._stage

    def unpack_while_a_server_starts(*args: Any, **kwargs: Any) -> Any:
        staged = unpack(*args, **kwargs)

        async def start() -> None:
            db = Database(f"sqlite+aiosqlite:///{other / 'mailroom.db'}")
            try:
                await beat(db, "web-1:4242:cafe", SERVER)
            finally:
                await db.dispose()

        asyncio.run(start())
        return staged

    monkeypatch.setattr(restores, "_stage", unpack_while_a_server_starts)
    untouched = _state(other)
    refused = _invoke("restore", str(archive), "--force", env=env)
    assert refused.returncode == 1
    assert "Mailroom is running on the target database (server pid 4242 on web-1)" in _said(refused)
    changed = {path for path, digest in _state(other).items() if untouched.get(path) != digest}
    assert changed <= {str(other / "mailroom.db"), str(other / "mailroom.db-wal")}  # the beat
    copy = sqlite3.connect(other / "mailroom.db")
    try:  # the other installation's own data, not the backup's
        assert copy.execute("SELECT count(*) FROM workers").fetchone() == (1,)
    finally:
        copy.close()
    assert not list(other.glob("*.restoring*")) and not list(other.glob(".mailroom-*"))


@SQLITE_ONLY
def test_a_backup_of_an_older_schema_is_migrated_on_restore(tmp_path: Path) -> None:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    head = script.get_current_head()
    assert head is not None
    older = script.get_revision(head).down_revision
    assert isinstance(older, str)
    source = tmp_path / "old"
    asyncio.run(upgrade(_settings(source).resolved_database_url, older))
    archive = tmp_path / "old.tar.gz"
    assert _invoke("backup", str(archive), env=_env(source)).returncode == 0
    assert json.loads(_members(archive)[backups.MANIFEST])["database"]["revision"] == older

    target = tmp_path / "new"
    checked = _invoke("restore", str(archive), "--check", env=_env(target))
    assert checked.returncode == 0, checked.stderr
    assert "The archive can be restored here" in _said(checked)
    assert not target.exists()
    result = _invoke("restore", str(archive), env=_env(target))
    assert result.returncode == 0, result.stderr
    assert f"Migrated the database from {older} to {head} (head)" in _said(result)
    assert asyncio.run(current_revision(_settings(target).resolved_database_url)) == head


@SQLITE_ONLY
def test_a_backup_of_a_newer_mailroom_or_another_database_kind_is_refused(
    small_backup: tuple[Path, Path], tmp_path: Path
) -> None:
    _source, archive = small_backup
    target = tmp_path / "target"

    def manifest(change: Callable[[dict[str, Any]], None]) -> Path:
        changed = tmp_path / "changed.tar.gz"

        def edit(name: str, data: bytes) -> bytes:
            if name != backups.MANIFEST:
                return data
            document = json.loads(data)
            change(document)
            return json.dumps(document).encode()

        _repack(archive, changed, edit)
        return changed

    newer = manifest(lambda m: m["database"].update(revision="29991231_01"))
    result = _invoke("restore", str(newer), env=_env(target))
    assert result.returncode == 1
    assert "made by a newer Mailroom" in _said(result)
    later_format = manifest(lambda m: m.update(format_version=99))
    result = _invoke("restore", str(later_format), env=_env(target))
    assert result.returncode == 1
    assert "upgrade Mailroom first" in _said(result)
    url = "postgresql+asyncpg://mailroom@127.0.0.1:9/mailroom"
    result = _invoke("restore", str(archive), env=_env(target, MAILROOM_DATABASE_URL=url))
    assert result.returncode == 1
    assert "The backup holds a sqlite database" in _said(result)
    assert not target.exists()


def test_backup_file_is_not_replaced_without_force(tmp_path: Path) -> None:
    existing = tmp_path / "taken.tar.gz"
    existing.write_text("an older backup")
    result = _invoke("backup", str(existing), env=_env(tmp_path / "var"))
    assert result.returncode == 1
    assert "exists: choose another name, or pass --force" in _said(result)
    assert existing.read_text() == "an older backup"


# ---------------------------------------------------------------- PostgreSQL


def test_without_pg_dump_the_command_is_printed_and_refused(tmp_path: Path) -> None:
    """Whatever this machine has installed: a PATH without pg_dump."""
    url = "postgresql+asyncpg://mailroom:never-printed-pw@db.invalid:5433/mailroom"
    env = _env(tmp_path / "var", MAILROOM_DATABASE_URL=url, PATH=str(tmp_path / "empty-bin"))
    archive = tmp_path / "pg.tar.gz"
    result = _invoke("backup", str(archive), env=env)
    assert result.returncode == 1
    said = _said(result)
    assert (
        "Running: pg_dump --format=custom --no-owner --host=db.invalid --port=5433 "
        "--username=mailroom --dbname=mailroom --file=" in said
    )
    assert "(password passed in PGPASSWORD)" in said
    assert "pg_dump is not installed (or not on PATH)" in said
    assert "apt install postgresql-client" in said
    assert "never-printed-pw" not in said
    assert not archive.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".mailroom-backup")] == []


def _with_database(url: str, name: str, password: str | None = None) -> str:
    parsed = make_url(url).set(database=name)
    if password is not None and not parsed.password:
        parsed = parsed.set(password=password)
    return parsed.render_as_string(hide_password=False)


@POSTGRESQL_ONLY
async def test_postgresql_backup_and_restore_into_another_database(
    client: httpx.AsyncClient, ws: Any, settings: Settings, tmp_path: Path
) -> None:
    from tests.conftest import _create_database

    if shutil.which("pg_dump") is None or shutil.which("pg_restore") is None:
        # Not silent: the refusal is what this machine can show (asserted in
        # test_without_pg_dump_the_command_is_printed_and_refused); say why the rest is not run.
        pytest.skip("pg_dump/pg_restore are not installed here (Debian: postgresql-client)")
    source_url = settings.resolved_database_url
    # Trust authentication ignores a password: one is added when the URL has none, to show
    # that it is never printed (a URL with a password keeps its own).
    password = make_url(source_url).password or "never-printed-pw"
    source_url = _with_database(source_url, str(make_url(source_url).database), password)
    target_name = f"{make_url(source_url).database}_bk_dst"
    target_url = _with_database(source_url, target_name)

    image = _png()
    media_dir = settings.resolved_media_dir
    created = await client.post(
        "/api/v1/media", files={"file": ("logo.png", image, "image/png")}, headers=ws.headers
    )
    media_id = (await _ok(created, 201))["file"]["id"]
    for i in range(25):
        response = await client.post(
            "/api/v1/contacts", json={"email": f"pg-{i}@example.com"}, headers=ws.headers
        )
        assert response.status_code == 201, response.text
    await _ok(
        await client.post(
            "/api/v1/suppressions", json={"entries": ["gone@example.com"]}, headers=ws.headers
        )
    )

    env = _env(
        settings.data_dir,
        MAILROOM_DATABASE_URL=source_url,
        MAILROOM_SECRET_KEY=settings.secret_key,
        MAILROOM_MEDIA_DIR=str(media_dir),
    )
    archive = tmp_path / "pg.tar.gz"
    made = _cli("backup", str(archive), env=env)
    assert made.returncode == 0, made.stderr
    said = _said(made)
    assert "Running: pg_dump --format=custom --no-owner" in said
    assert "(password passed in PGPASSWORD)" in said
    assert password not in said
    assert "The secret key comes from MAILROOM_SECRET_KEY and is not in the archive" in said
    members = _members(archive)
    assert backups.PGDUMP_MEMBER in members
    assert members[backups.PGDUMP_MEMBER][:5] == b"PGDMP"  # pg_dump's custom format

    # A second database of our own, created empty as an operator would (createdb).
    from sqlalchemy.ext.asyncio import create_async_engine

    admin = create_async_engine(
        make_url(target_url).set(database="postgres"), isolation_level="AUTOCOMMIT"
    )
    async with admin.connect() as connection:
        await connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{target_name}" WITH (FORCE)')
    await _create_database(target_url)
    try:
        target_dir = tmp_path / "restored"
        target_env = _env(
            target_dir, MAILROOM_DATABASE_URL=target_url, MAILROOM_SECRET_KEY=settings.secret_key
        )
        wrong = _cli(
            "restore", str(archive), env={**target_env, "MAILROOM_SECRET_KEY": "another one"}
        )
        assert wrong.returncode == 1
        assert "sealed with another secret key" in _said(wrong)

        restored = _cli("restore", str(archive), env=target_env)
        assert restored.returncode == 0, restored.stderr
        said = _said(restored)
        assert "Running: pg_restore --no-owner --file=" in said  # the dump as SQL, no database
        assert (
            "Running: psql --no-psqlrc --quiet --single-transaction --set=ON_ERROR_STOP=1 "
            f"--host={make_url(target_url).host}" in said
        )
        assert f"--dbname={target_name}" in said
        assert "(password passed in PGPASSWORD)" in said
        assert password not in said

        again = _cli("restore", str(archive), env=target_env)
        assert again.returncode == 1
        assert "The target is not empty: the database (MAILROOM_DATABASE_URL)" in _said(again)

        target_settings = _settings(
            target_dir, database_url=target_url, secret_key=settings.secret_key
        )
        async with _installation(target_settings) as restored_client:
            emails = await _all_contacts(restored_client, ws.headers)
            assert {f"pg-{i}@example.com" for i in range(25)} <= emails
            check = await _ok(
                await restored_client.get(
                    "/api/v1/suppressions", params={"email": "gone@example.com"}, headers=ws.headers
                )
            )
            assert check["suppressed"] is True
            served = await restored_client.get(f"/media/{media_id}")
            assert served.status_code == 200
            assert served.content == image
        assert await current_revision(target_url) == await current_revision(source_url)
    finally:
        async with admin.connect() as connection:
            await connection.exec_driver_sql(
                f'DROP DATABASE IF EXISTS "{target_name}" WITH (FORCE)'
            )
        await admin.dispose()


async def _database_contents(url: str) -> dict[str, list[str]]:
    """Every table of the database (its default schema) with its rows, sorted, as text."""
    from sqlalchemy import inspect
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            tables = await connection.run_sync(lambda sync: inspect(sync).get_table_names())
            found: dict[str, list[str]] = {}
            for table in tables:
                rows = await connection.exec_driver_sql(f'SELECT * FROM "{table}"')
                found[table] = sorted(repr(tuple(row)) for row in rows)
            return found
    finally:
        await engine.dispose()


async def _run_sql(url: str, *statements: str) -> None:
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    try:
        async with engine.begin() as connection:
            for statement in statements:
                await connection.exec_driver_sql(statement)
    finally:
        await engine.dispose()


async def _scalar(url: str, query: str) -> Any:
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            return (await connection.exec_driver_sql(query)).scalar()
    finally:
        await engine.dispose()


@POSTGRESQL_ONLY
async def test_postgresql_restore_over_a_newer_schema_leaves_only_the_backup(
    client: httpx.AsyncClient, ws: Any, settings: Settings, tmp_path: Path
) -> None:
    """An older backup restored with --force over a database that a newer Mailroom upgraded:
    what the backup does not know (a table with rows and a foreign key to one of the backup's
    tables, its enum type, a function) is dropped, and every table then holds exactly the
    backup's rows. A restore that fails half-way changes nothing (one transaction)."""
    from tests.conftest import _create_database

    if any(shutil.which(tool) is None for tool in ("pg_dump", "pg_restore", "psql")):
        pytest.skip("pg_dump/pg_restore/psql are not installed here (Debian: postgresql-client)")
    for i in range(5):
        response = await client.post(
            "/api/v1/contacts", json={"email": f"old-{i}@example.com"}, headers=ws.headers
        )
        assert response.status_code == 201, response.text
    source_url = settings.resolved_database_url
    env = _env(
        settings.data_dir, MAILROOM_DATABASE_URL=source_url, MAILROOM_SECRET_KEY=settings.secret_key
    )
    archive = tmp_path / "older.tar.gz"
    made = _cli("backup", str(archive), env=env)
    assert made.returncode == 0, made.stderr
    backed_up = await _database_contents(source_url)
    assert "newer_feature" not in backed_up
    assert len(backed_up["contacts"]) == 5

    target_name = f"{make_url(source_url).database}_bk_newer"
    target_url = _with_database(source_url, target_name)
    from sqlalchemy.ext.asyncio import create_async_engine

    admin = create_async_engine(
        make_url(target_url).set(database="postgres"), isolation_level="AUTOCOMMIT"
    )
    async with admin.connect() as connection:
        await connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{target_name}" WITH (FORCE)')
    await _create_database(target_url)
    try:
        target_env = _env(
            tmp_path / "restored",
            MAILROOM_DATABASE_URL=target_url,
            MAILROOM_SECRET_KEY=settings.secret_key,
        )
        first = _cli("restore", str(archive), env=target_env)
        assert first.returncode == 0, first.stderr
        # What a newer Mailroom's migrations and use would leave: a table the backup does not
        # know, whose foreign key pins one of the backup's tables, and a changed row.
        await _run_sql(
            target_url,
            "CREATE TYPE newer_kind AS ENUM ('a', 'b')",
            "CREATE TABLE newer_feature (id serial PRIMARY KEY, workspace_id varchar(36) "
            "NOT NULL REFERENCES workspaces (id), kind newer_kind NOT NULL)",
            "INSERT INTO newer_feature (workspace_id, kind) SELECT id, 'a' FROM workspaces",
            "CREATE FUNCTION newer_touch() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RETURN NEW; END $$",
            "UPDATE workspaces SET name = 'renamed since the backup'",
        )
        upgraded = await _database_contents(target_url)
        assert len(upgraded["newer_feature"]) == 1

        # Failing half-way, after the drops: an event trigger (of a schema of its own, which
        # restore leaves alone) refuses the backup's first CREATE TABLE.
        await _run_sql(
            target_url,
            "CREATE SCHEMA guard",
            "CREATE FUNCTION guard.refuse() RETURNS event_trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'no new tables today'; END $$",
            "CREATE EVENT TRIGGER refuse_tables ON ddl_command_end WHEN TAG IN ('CREATE TABLE') "
            "EXECUTE FUNCTION guard.refuse()",
        )
        failed = _cli("restore", str(archive), "--force", env=target_env)
        assert failed.returncode == 1
        said = _said(failed)
        assert "psql failed (exit 3)" in said
        assert "no new tables today" in said
        assert "(one transaction: the database was left as it was; nothing was changed)" in said
        assert await _database_contents(target_url) == upgraded
        await _run_sql(target_url, "DROP EVENT TRIGGER refuse_tables", "DROP SCHEMA guard CASCADE")

        restored = _cli("restore", str(archive), "--force", env=target_env)
        assert restored.returncode == 0, restored.stderr
        assert "Restored the PostgreSQL database." in _said(restored)
        assert await _database_contents(target_url) == backed_up
        assert await _scalar(target_url, "SELECT to_regtype('newer_kind')") is None
        assert (
            await _scalar(target_url, "SELECT count(*) FROM pg_proc WHERE proname = 'newer_touch'")
            == 0
        )
        # The backup's own function, trigger and extension are back.
        assert (
            await _scalar(
                target_url,
                "SELECT count(*) FROM pg_proc WHERE proname = 'contact_counts_on_delete'",
            )
            == 1
        )
        assert (
            await _scalar(target_url, "SELECT count(*) FROM pg_extension WHERE extname = 'pg_trgm'")
            == 1
        )
        assert await current_revision(target_url) == await current_revision(source_url)
    finally:
        async with admin.connect() as connection:
            await connection.exec_driver_sql(
                f'DROP DATABASE IF EXISTS "{target_name}" WITH (FORCE)'
            )
        await admin.dispose()
