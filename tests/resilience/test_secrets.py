"""The data directory, the SQLite database (it holds webhook signing secrets) and the
generated installation secret are private from the moment they exist, whatever the umask."""

from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mailroom.settings import Settings
from tests.conftest import run_cli


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask():
    """umask 000: whatever is not created private on purpose comes out world-writable."""
    previous = os.umask(0)
    yield
    os.umask(previous)


@pytest.fixture
def no_chmod(monkeypatch):
    """Making a file private after writing it leaves a moment when it is not: forbid it."""

    def refuse(*args, **kwargs):
        raise AssertionError("created open, then chmod-ed")

    monkeypatch.setattr(os, "chmod", refuse)
    monkeypatch.setattr(Path, "chmod", refuse)


def test_first_start_creates_a_private_data_dir_and_database(tmp_path, open_umask):
    data_dir = tmp_path / "fresh" / "var"
    result = run_cli(
        "admin",
        "create-workspace",
        "--plan",
        "pro",
        "--json",
        env={"MAILROOM_DATA_DIR": str(data_dir), "MAILROOM_DATABASE_URL": ""},
    )
    assert result.returncode == 0, result.stderr
    assert mode(data_dir) == 0o700
    assert mode(data_dir / "mailroom.db") == 0o600
    for path in data_dir.iterdir():  # -wal/-shm if still there: same mode as the database
        assert mode(path) & 0o077 == 0, path


def test_an_explicit_sqlite_file_is_created_private(tmp_path, open_umask):
    database = tmp_path / "elsewhere" / "mail.db"
    result = run_cli(
        "db",
        "upgrade",
        env={
            "MAILROOM_DATA_DIR": str(tmp_path / "var"),
            "MAILROOM_DATABASE_URL": f"sqlite+aiosqlite:///{database}",
        },
    )
    assert result.returncode == 0, result.stderr
    assert mode(database.parent) == 0o700
    assert mode(database) == 0o600


def test_an_existing_database_keeps_its_mode(tmp_path):
    database = tmp_path / "mail.db"
    database.touch()
    database.chmod(0o640)  # the operator's choice (e.g. a backup group)
    Settings(data_dir=tmp_path / "var", database_url=f"sqlite:///{database}").prepare_storage()
    assert mode(database) == 0o640


def test_the_generated_secret_is_never_readable_by_others(tmp_path, open_umask, no_chmod):
    data_dir = tmp_path / "var"
    secret = Settings(data_dir=data_dir, secret_key="").resolved_secret_key
    assert len(secret) >= 48
    assert mode(data_dir) == 0o700
    assert mode(data_dir / "secret_key") == 0o600
    assert sorted(p.name for p in data_dir.iterdir()) == ["secret_key"]  # no temporary left
    assert Settings(data_dir=data_dir, secret_key="").resolved_secret_key == secret


def test_processes_starting_together_agree_on_one_secret(tmp_path):
    data_dir = tmp_path / "var"

    def generate(_: int) -> str:
        return Settings(data_dir=data_dir, secret_key="").resolved_secret_key

    with ThreadPoolExecutor(8) as pool:
        keys = set(pool.map(generate, range(32)))
    assert len(keys) == 1
    assert (data_dir / "secret_key").read_text() == keys.pop()
