"""`mailroom doctor` against real things on 127.0.0.1: an SMTP relay (aiosmtpd sink), a DNS
server serving the sending domain's records, the bounce listener, the app under uvicorn, a
worker heartbeat row. A good installation is all ok (exit 0); a broken one (DKIM record
altered, relay down, stale worker, world-readable secret file, listener gone) names each
problem with its fix (exit 1). The doctor changes nothing (the domain stays verified), holds
no database connection while it waits on the network, and never prints a password or the
secret."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import shutil
import socket
import ssl
from collections import namedtuple
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
import typer
from aiosmtpd.smtp import SMTP as SMTPServer
from aiosmtpd.smtp import AuthResult
from rich.console import Console
from sqlalchemy import select, text
from typer.testing import CliRunner

from mailroom.bounces import listener
from mailroom.core import logs
from mailroom.core.clock import utcnow
from mailroom.db import Database
from mailroom.models import SendingDomain, WorkerProcess
from mailroom.settings import get_settings
from mailroom.system import doctor
from mailroom.system.doctor_cli import doctor as doctor_command
from mailroom.worker import beat, new_worker_id
from tests.browser import live_server  # noqa: F401  (the app on a real port)
from tests.domains.conftest import BOUNCE_HOST, SPF_INCLUDE, add_domain, publish, verify
from tests.domains.dns_zone import DnsZone
from tests.sending.sink import Sink

DOMAIN = "news.acme.example"
Usage = namedtuple("Usage", "total used free")
HEALTHY_DISK = Usage(100 * 1024**3, 50 * 1024**3, 50 * 1024**3)


@pytest.fixture
def settings(settings: Any) -> Any:
    """The secret generated into the data directory (not given), and every advised record."""
    settings.secret_key = ""
    settings.spf_include = SPF_INCLUDE
    settings.return_path_domain = BOUNCE_HOST
    settings.return_path_subdomain = "rp"
    settings.dmarc_policy = "quarantine"
    return settings


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Installation:
    settings: Any
    db: Database
    zone: DnsZone
    sink: Sink
    bounces: asyncio.Server
    domain: dict[str, Any]

    @property
    def secret_file(self) -> Path:
        return Path(self.settings.data_dir) / "secret_key"

    def dkim(self) -> dict[str, Any]:
        [found] = [r for r in self.domain["records"] if r["purpose"] == "dkim"]
        return found


@pytest.fixture
async def installation(
    settings: Any,
    db: Database,
    client: Any,
    ws: Any,
    live_server: str,  # noqa: F811
) -> AsyncIterator[Installation]:
    """Everything as it should be (the public URL is `live_server`'s)."""
    async with DnsZone() as zone, Sink() as sink:
        settings.dns_nameservers = [zone.address]
        settings.smtp_url = sink.url
        settings.bounce_smtp = f"127.0.0.1:{_free_port()}"
        server, _handler = await listener.start(db, settings, settings.bounce_smtp)
        domain = await add_domain(client, ws, DOMAIN)
        publish(zone, domain)
        assert (await verify(client, ws, domain["id"]))["status"] == "verified"
        await beat(db, new_worker_id())
        try:
            yield Installation(settings, db, zone, sink, server, domain)
        finally:
            server.close()


def by_name(checks: list[doctor.Check]) -> dict[str, doctor.Check]:
    return {c.name: c for c in checks}


def not_ok(checks: list[doctor.Check]) -> list[tuple[str, str, str]]:
    return [(c.name, c.status, c.detail) for c in checks if c.status != "ok"]


# ------------------------------------------------------------------------- good and broken


async def test_a_good_installation_is_all_ok(installation, monkeypatch):
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: HEALTHY_DISK)
    checks = await doctor.run(installation.settings)
    assert not_ok(checks) == []
    assert [c.name for c in checks] == [
        "database",
        "migrations",
        "secret_key",
        "smtp_relay",
        f"domain:{DOMAIN}",
        "workers",
        "bounce_listener",
        "public_url",
        "disk_space",
    ]
    found = by_name(checks)
    assert found[f"domain:{DOMAIN}"].detail == (
        "verified; DKIM ok; SPF ok; DMARC ok; Return path ok"
    )
    assert found["smtp_relay"].detail.endswith(
        "EHLO ok, no STARTTLS (?starttls=never), no AUTH configured"
    )
    assert found["secret_key"].detail == f"{installation.secret_file} (mode 600, owner only)"
    assert found["workers"].detail.startswith("1 alive: ")
    assert "answered 200" in found["public_url"].detail
    assert "answered 220" in found["bounce_listener"].detail
    assert all(c.fix is None for c in checks)
    assert doctor.report(checks)["ok"] is True


async def test_a_broken_installation_fails_each_problem_with_its_fix(installation):
    settings, db = installation.settings, installation.db
    # The DKIM record altered at the DNS host (another key).
    dkim = installation.dkim()
    installation.zone.txt(dkim["host"], dkim["value"].replace("p=MII", "p=XXMII"))
    # The relay gone: its port closed.
    await installation.sink.stop()
    # The only worker died 10 minutes ago (a stale heartbeat), the live one is gone.
    async with db.transaction() as session:
        await session.execute(text("DELETE FROM workers"))
        session.add(
            WorkerProcess(
                id="box:4242:deadbeef",
                host="box",
                pid=4242,
                started_at=utcnow() - dt.timedelta(hours=1),
                heartbeat_at=utcnow() - dt.timedelta(minutes=10),
            )
        )
    # The secret readable by everyone; the bounce listener stopped.
    installation.secret_file.chmod(0o644)
    installation.bounces.close()
    await installation.bounces.wait_closed()
    async with db.session(write=False) as session:
        before = (await session.scalars(select(SendingDomain))).one()
        before = (before.status, before.record_status, before.last_checked_at)

    checks = await doctor.run(settings)
    found = by_name(checks)
    failures = {c.name for c in checks if c.status == "fail"}
    assert failures == {
        f"domain:{DOMAIN}",
        "smtp_relay",
        "workers",
        "secret_key",
        "bounce_listener",
    }
    assert all(found[name].fix for name in failures)

    domain = found[f"domain:{DOMAIN}"]
    assert f"the DKIM record at {dkim['host']} has another public key" in domain.detail
    assert domain.fix == f"publish TXT {dkim['host']} = {dkim['value']}"

    relay = found["smtp_relay"]
    assert relay.detail.startswith(f"{installation.sink.url}: could not connect (")
    assert "check the host and port in MAILROOM_SMTP_URL" in relay.fix

    workers = found["workers"]
    assert workers.detail.startswith(
        "no worker is alive: box:4242:deadbeef (last beat 10 min ago) stopped beating"
    )
    assert workers.fix == "run `mailroom worker`, or `mailroom serve` without --no-worker"

    secret = found["secret_key"]
    assert secret.detail.startswith(
        f"{installation.secret_file} is open to group and others (mode 644)"
    )
    assert secret.fix == f"chmod 600 {installation.secret_file}"

    assert "nothing answers SMTP at 127.0.0.1:" in found["bounce_listener"].detail
    assert found["database"].status == found["migrations"].status == "ok"
    assert found["public_url"].status == "ok"
    assert doctor.report(checks)["ok"] is False

    # Read-only: the domain is as the last real check left it (the daily re-check decides).
    async with db.session(write=False) as session:
        row = (await session.scalars(select(SendingDomain))).one()
        assert (row.status, row.record_status, row.last_checked_at) == before


async def test_the_cli_prints_json_and_exits_0_when_all_is_well(installation, monkeypatch):
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: HEALTHY_DISK)
    result = await _invoke(installation.settings, "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["ok"] is True
    assert {tuple(c) for c in shown["checks"]} == {("name", "status", "detail", "fix")}
    assert {c["status"] for c in shown["checks"]} == {"ok"}
    assert f"domain:{DOMAIN}" in [c["name"] for c in shown["checks"]]


async def test_the_cli_table_names_each_failure_and_exits_1(installation):
    settings = installation.settings
    await installation.sink.stop()
    settings.smtp_url = installation.sink.url.replace("//", "//relay-user:pw-never-shown@")
    installation.secret_file.chmod(0o640)
    result = await _invoke(settings)
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())  # the table wraps long cells
    assert "Mailroom doctor" in output
    assert "FAIL" in output and "failure(s)" in output
    assert "smtp://relay-user:***@127.0.0.1:" in output
    assert "secret_key" in output and "chmod 600" in output
    assert "pw-never-shown" not in result.output
    assert installation.secret_file.read_text().strip() not in result.output

    as_json = await _invoke(settings, "--json")
    assert as_json.exit_code == 1
    shown = json.loads(as_json.output)
    assert shown["ok"] is False
    found = {c["name"]: c for c in shown["checks"]}
    assert found["smtp_relay"]["status"] == "fail" and found["smtp_relay"]["fix"]
    assert found["smtp_relay"]["detail"].startswith("smtp://relay-user:***@127.0.0.1:")
    assert found["secret_key"]["status"] == "fail"
    assert found["secret_key"]["detail"].endswith(
        "(mode 640): anyone who reads it can forge subscriber and sign-in links"
    )
    assert found["secret_key"]["fix"] == f"chmod 600 {installation.secret_file}"
    assert "pw-never-shown" not in as_json.output


async def _invoke(settings: Any, *args: str) -> Any:
    """`mailroom doctor` as a command, its settings from the environment (as a user runs it),
    in a thread: the relay, DNS server and app it checks run in this test's event loop."""
    app = typer.Typer()
    app.command()(doctor_command)
    env = {
        "MAILROOM_DATABASE_URL": settings.resolved_database_url,
        "MAILROOM_DATA_DIR": str(settings.data_dir),
        "MAILROOM_SECRET_KEY": "",
        "MAILROOM_PUBLIC_URL": settings.public_url,
        "MAILROOM_SMTP_URL": settings.smtp_url,
        "MAILROOM_DNS_NAMESERVERS": ",".join(settings.dns_nameservers),
        "MAILROOM_SPF_INCLUDE": settings.spf_include,
        "MAILROOM_RETURN_PATH_DOMAIN": settings.return_path_domain,
        "MAILROOM_RETURN_PATH_SUBDOMAIN": settings.return_path_subdomain,
        "MAILROOM_DMARC_POLICY": settings.dmarc_policy,
        "MAILROOM_BOUNCE_SMTP": settings.bounce_smtp,
    }
    get_settings.cache_clear()
    # A wide table, its cells read whole whatever terminal runs the tests (the CLI's console
    # takes its width when mailroom.cli is first imported).
    try:
        with patch("mailroom.cli.out", Console(width=200)):
            return await asyncio.to_thread(CliRunner().invoke, app, list(args), env=env)
    finally:
        get_settings.cache_clear()


async def test_unverified_domains_and_silent_dns_are_warnings(installation, client, ws):
    """A domain not verified yet is a warning with what to publish, then how to verify; a
    verified domain whose DNS does not answer is a warning too (nothing definite is wrong)."""
    other = await add_domain(client, ws, "other.acme.example")
    dkim = installation.dkim()
    installation.zone.zones[dkim["host"]] = {"servfail": True}
    found = by_name(await doctor.run(installation.settings))
    pending = found["domain:other.acme.example"]
    assert pending.status == "warn"
    assert pending.detail.startswith(
        "pending, not verified: mail from it is held while a relay is set; DKIM: "
    )
    [other_dkim] = [r for r in other["records"] if r["purpose"] == "dkim"]
    assert f"publish TXT {other_dkim['host']} = {other_dkim['value']}" in pending.fix
    assert pending.fix.endswith(
        f"then verify it (POST /api/v1/domains/{other['id']}/verify, or Verify on the "
        f"dashboard's Sending page of workspace {ws.workspace_id})"
    )
    silent = found[f"domain:{DOMAIN}"]
    assert silent.status == "warn"
    assert "no DNS server answered" in silent.detail
    assert "the DNS did not answer" in silent.fix

    publish(installation.zone, other)
    now_right = by_name(await doctor.run(installation.settings))["domain:other.acme.example"]
    assert now_right.status == "warn"
    assert "its records are right now" in now_right.detail
    assert now_right.fix.startswith("verify it (POST /api/v1/domains/")


# -------------------------------------------------------------- no connection held on I/O


async def test_no_database_connection_is_open_while_the_network_is_asked(installation, monkeypatch):
    """The database is read and closed before the first DNS query (held here) goes out."""
    disposed: list[str] = []
    original = Database.dispose

    async def dispose(self: Database) -> None:
        await original(self)
        disposed.append(self.url)

    monkeypatch.setattr(Database, "dispose", dispose)
    installation.zone.hold()
    running = asyncio.create_task(doctor.run(installation.settings))
    await asyncio.wait_for(installation.zone.waiting.wait(), 10)
    assert disposed == [installation.settings.resolved_database_url]
    installation.zone.release()
    checks = await asyncio.wait_for(running, 20)
    assert by_name(checks)[f"domain:{DOMAIN}"].status == "ok"


# ------------------------------------------------------------ the relay's TLS and AUTH


def _self_signed(folder: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "relay.test")])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("relay.test")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert, private = folder / "relay.crt", folder / "relay.key"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert, private


@pytest.fixture
def server_tls(tmp_path: Path) -> ssl.SSLContext:
    cert, key = _self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


@pytest.fixture
async def tls_relay(server_tls: ssl.SSLContext) -> AsyncIterator[int]:
    """A relay offering STARTTLS (self-signed) and AUTH after it: user `sender`, password
    `right p@ss`."""
    context = server_tls

    def authenticate(server, session, envelope, mechanism, data):
        granted = (data.login, data.password) == (b"sender", b"right p@ss")
        return AuthResult(success=granted, handled=False)  # not handled: aiosmtpd says 535

    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: SMTPServer(
            object(),
            hostname="relay.test",
            tls_context=context,
            authenticator=authenticate,
            auth_require_tls=True,
        ),
        "127.0.0.1",
        0,
    )
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        server.close()


async def test_starttls_and_auth_are_checked_as_configured(settings, tls_relay):
    base = f"127.0.0.1:{tls_relay}"
    settings.smtp_url = f"smtp://sender:right%20p%40ss@{base}?starttls=require&verify=false"
    relay = await doctor.check_smtp(settings)
    assert (relay.status, relay.fix) == ("ok", None)
    assert relay.detail == (
        f"smtp://sender:***@{base}?starttls=require&verify=false: connected (220), EHLO ok, "
        "STARTTLS ok, AUTH ok as sender"
    )

    settings.smtp_url = f"smtp://sender:wrong@{base}?verify=false"
    refused = await doctor.check_smtp(settings)
    assert refused.status == "fail"
    assert "the relay refused the user name and password of sender (535" in refused.detail
    assert "check the user and password in MAILROOM_SMTP_URL" in refused.fix
    assert "wrong" not in refused.detail.replace("sender:***", "")

    settings.smtp_url = f"smtp://sender:right%20p%40ss@{base}"  # certificates verified
    unverified = await doctor.check_smtp(settings)
    assert unverified.status == "fail"
    assert "STARTTLS failed" in unverified.detail and "CERTIFICATE_VERIFY_FAILED" in (
        unverified.detail
    )
    assert "?verify=false" in unverified.fix


async def test_smtps_speaks_tls_from_the_first_byte(settings, server_tls):
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: SMTPServer(object(), hostname="relay.test"), "127.0.0.1", 0, ssl=server_tls
    )
    port = int(server.sockets[0].getsockname()[1])
    try:
        settings.smtp_url = f"smtps://127.0.0.1:{port}?verify=false"
        relay = await doctor.check_smtp(settings)
        assert (relay.status, relay.detail) == (
            "ok",
            f"{settings.smtp_url}: connected (220 TLS), EHLO ok, no AUTH configured",
        )
        settings.smtp_url = f"smtps://127.0.0.1:{port}"
        unverified = await doctor.check_smtp(settings)
    finally:
        server.close()
    assert unverified.status == "fail"
    assert unverified.detail.startswith(
        f"{settings.smtp_url}: TLS failed (SSLCertVerificationError"
    )
    assert "?verify=false" in unverified.fix


async def test_a_relay_without_starttls_when_required_fails(settings):
    async with Sink() as sink:
        settings.smtp_url = f"smtp://127.0.0.1:{sink.port}?starttls=require"
        check = await doctor.check_smtp(settings)
    assert check.status == "fail"
    assert "does not offer STARTTLS, and MAILROOM_SMTP_URL requires it" in check.detail


async def test_no_relay_is_a_warning_that_mail_goes_to_the_outbox(settings):
    check = await doctor.check_smtp(settings)
    assert check.status == "warn"
    assert f"{settings.data_dir / 'outbox'}/*.eml" in check.detail


# ----------------------------------------------------------------- database and migrations


async def test_migrations_behind_or_unknown_fail_with_the_fix(settings, db):
    async with db.transaction() as session:
        head = await session.scalar(text("SELECT version_num FROM alembic_version"))
    from alembic.script import ScriptDirectory

    from mailroom.migrations import alembic_config

    script = ScriptDirectory.from_config(alembic_config())
    previous = script.get_revision(head).down_revision
    try:
        async with db.transaction() as session:
            await session.execute(
                text("UPDATE alembic_version SET version_num = :v"), {"v": previous}
            )
        behind = doctor.check_migrations(await doctor.read_facts(settings))
        assert (behind.status, behind.detail) == (
            "fail",
            f"the database is at {previous}, 1 migration(s) behind head {head}",
        )
        assert behind.fix.startswith("run `mailroom db upgrade`")

        async with db.transaction() as session:
            await session.execute(
                text("UPDATE alembic_version SET version_num = 'from_the_future'")
            )
        ahead = doctor.check_migrations(await doctor.read_facts(settings))
        assert ahead.status == "fail"
        assert "a revision this Mailroom does not know" in ahead.detail
    finally:  # on PostgreSQL the next test of this worker uses the same database
        async with db.transaction() as session:
            await session.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": head})


async def test_an_unreachable_database_fails_without_showing_its_password(settings, tmp_path):
    settings.database_url = "postgresql+asyncpg://mailroom:db-secret@127.0.0.1:1/mailroom"
    facts = await doctor.read_facts(settings)
    checks = [doctor.check_database(facts), doctor.check_migrations(facts)]
    checks += [doctor.check_workers(facts), *await doctor.check_domains(settings, facts)]
    database = checks[0]
    assert database.status == "fail"
    assert database.detail.startswith("postgresql+asyncpg://mailroom:***@127.0.0.1:1/mailroom: ")
    assert "db-secret" not in json.dumps(doctor.report(checks))
    assert {c.detail for c in checks[1:]} == {"not checked: the database could not be read"}

    settings.database_url = f"sqlite+aiosqlite:///{tmp_path / 'nowhere' / 'mailroom.db'}"
    missing = doctor.check_database(await doctor.read_facts(settings))
    assert missing.status == "fail" and "mailroom db upgrade" in missing.fix
    assert not (tmp_path / "nowhere").exists()  # the doctor creates nothing


# ------------------------------------------------------------------ secret, disk, workers


async def test_the_secret_is_never_created_and_a_missing_one_fails_when_data_exists(settings, ws):
    facts = await doctor.read_facts(settings)
    found = doctor.check_secret(settings, facts)
    assert found.status == "fail"
    assert "the database holds 1 workspace(s)" in found.detail
    assert not (Path(settings.data_dir) / "secret_key").exists()

    settings.secret_key = "short"
    assert doctor.check_secret(settings, facts).status == "warn"
    settings.secret_key = "x" * 48
    shown = doctor.check_secret(settings, facts)
    assert shown.status == "ok" and "x" * 48 not in shown.detail


@pytest.mark.parametrize(
    ("free", "total", "status"),
    [
        (50 * 1024**3, 100 * 1024**3, "ok"),
        (900 * 1024**2, 2 * 1024**3, "warn"),  # under 1 GiB
        (4 * 1024**3, 100 * 1024**3, "warn"),  # under 5 %
        (150 * 1000**2, 100 * 1024**3, "fail"),  # under 200 MB
    ],
)
def test_disk_thresholds(settings, free, total, status):
    check = doctor.check_disk(settings, lambda _path: Usage(total, total - free, free))
    assert check.status == status
    assert "warn under 1 GiB or 5 % free, fail under 200 MB" in check.detail
    assert (check.fix is None) == (status == "ok")


async def test_a_live_worker_beside_a_dead_one_is_ok(settings, db):
    await beat(db, new_worker_id())
    async with db.transaction() as session:
        session.add(
            WorkerProcess(
                id="old:1:cafe", host="old", pid=1, heartbeat_at=utcnow() - dt.timedelta(hours=2)
            )
        )
    workers = doctor.check_workers(await doctor.read_facts(settings))
    assert workers.status == "ok"
    assert "1 alive" in workers.detail and "old:1:cafe (last beat 2 h ago)" in workers.detail


def test_urls_are_shown_with_the_password_masked():
    assert logs.mask_url("smtp://u:p%40ss@relay.example:587?starttls=require") == (
        "smtp://u:***@relay.example:587?starttls=require"
    )
    assert logs.mask_url("smtps://relay.example") == "smtps://relay.example"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("smtp://mailer:2024#Secret@relay.example:587", "smtp://mailer:***@relay.example:587"),
        (
            "smtp://mailer:a/b?c@relay:587?starttls=require",
            "smtp://mailer:***@relay:587?starttls=require",
        ),
        ("postgresql+asyncpg://pg:P@w@127.0.0.1/db", "postgresql+asyncpg://pg:***@127.0.0.1/db"),
        ("smtp://relay.example:25", "smtp://relay.example:25"),
    ],
)
def test_a_password_is_hidden_whatever_it_holds(url, shown):
    assert logs.mask_url(url) == shown
    # A log line holding the URL hides the same part.
    assert logs.redact(f"relay {url} refused") == f"relay {logs.redact(shown)} refused"
    assert "***" in logs.redact(url) or "***" not in shown


async def test_every_relay_of_several_is_checked(settings, tls_relay):
    good = f"smtp://sender:right%20p%40ss@127.0.0.1:{tls_relay}?starttls=require&verify=false"
    settings.smtp_url = f"{good},{good}&weight=2"
    both = await doctor.check_smtp(settings)
    assert both.status == "ok"
    assert both.detail.count("AUTH ok as sender") == 2
    # One relay down: the check fails naming it, whatever the other says.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    settings.smtp_url = f"{good},smtp://127.0.0.1:{port}"
    one_down = await doctor.check_smtp(settings)
    assert one_down.status == "fail"
    assert f"smtp://127.0.0.1:{port}: could not connect" in one_down.detail
