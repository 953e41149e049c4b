"""The `mailroom` command: serve, worker, db, admin (and more as capabilities arrive)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

from mailroom import API_VERSION, __version__
from mailroom.core.errors import ApiError
from mailroom.system.doctor_cli import doctor as doctor_command

if TYPE_CHECKING:
    from mailroom.core.context import Context
    from mailroom.db import Database
    from mailroom.settings import Settings

# Every command imports what it needs itself (the database layer, services, the app): `mailroom
# --help` or `mailroom admin set-plan` must not pay for FastAPI, SQLAlchemy and Alembic it
# does not use (tests/foundation/test_cli.py checks which modules a light command loads).

T = TypeVar("T")

app = typer.Typer(
    name="mailroom",
    help="Mailroom: self-hostable email marketing. Settings come from MAILROOM_* environment "
    "variables (see the README); the default database is SQLite under ./var/.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(help="Database schema.", no_args_is_help=True)
admin_app = typer.Typer(help="Accounts, workspaces and API keys.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(admin_app, name="admin")

out = Console()
err = Console(stderr=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
PermissionsOption = Annotated[
    str,
    typer.Option(
        "--permissions",
        help="`all`, or a comma-separated list such as contacts:read,contacts:write.",
    ),
]


def get_settings() -> Settings:
    """The process's settings (pydantic-settings loaded only by a command that reads them)."""
    from mailroom.settings import get_settings as load

    return load()


def _fail(message: str, code: int = 1) -> None:
    err.print(f"[red]Error:[/red] {message}", highlight=False)
    raise typer.Exit(code)


def _run(coro_factory: Callable[[], Awaitable[T]]) -> T:
    try:
        return asyncio.run(coro_factory())  # type: ignore[arg-type]
    except ApiError as exc:
        _fail(exc.message)
        raise AssertionError("unreachable") from exc


async def _with_db(work: Callable[[Database], Awaitable[T]], settings: Settings | None = None) -> T:
    """Open the database (migrated to the latest schema), run `work`, close."""
    from mailroom.db import Database
    from mailroom.migrations import upgrade

    settings = settings or get_settings()
    url = settings.resolved_database_url
    settings.prepare_storage()
    await upgrade(url)
    db = Database(url)
    try:
        return await work(db)
    finally:
        await db.dispose()


def _emit(data: dict[str, Any], as_json: bool, human: str) -> None:
    if as_json:
        sys.stdout.write(json.dumps(data) + "\n")
    else:
        out.print(human, highlight=False)


def _process_setup(settings: Settings) -> None:
    """A serving or working process: its log lines (text or JSON, redacted: core.logs) and its
    metrics shared with the installation's other processes (core.multiprocess), set before
    anything imports prometheus_client."""
    from mailroom.core import logs, multiprocess

    logs.configure(settings.log_format, settings.log_level)
    multiprocess.use_directory(settings.data_dir)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(help="Server processes.")] = 1,
    no_worker: Annotated[
        bool,
        typer.Option(
            "--no-worker",
            help="Do not run background loops in the server; run `mailroom worker` instead.",
        ),
    ] = False,
) -> None:
    """Apply pending migrations, then serve the API, subscriber pages and MCP.

    Background loops (webhook deliveries, sending, jobs) run inside the server unless
    --no-worker is given.
    """
    settings = get_settings()
    _process_setup(settings)
    import uvicorn

    from mailroom.migrations import upgrade

    settings.prepare_storage()
    asyncio.run(upgrade(settings.resolved_database_url))
    os.environ["MAILROOM_SERVE_WORKER"] = "0" if no_worker else "1"
    out.print(f"Mailroom {__version__} (API {API_VERSION}) on http://{host}:{port}")
    uvicorn.run(
        "mailroom.app:create_served_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        # Forwarded headers only from the proxies named in MAILROOM_TRUSTED_PROXIES (uvicorn
        # would otherwise believe any local client's X-Forwarded-For).
        proxy_headers=bool(settings.trusted_proxies),
        forwarded_allow_ips=",".join(settings.trusted_proxies) or None,
        log_level="info",
        # Logging as set up above (core.logs); each request's line comes from web.observe,
        # with its request id and the tokens of subscriber links redacted.
        log_config=None,
        access_log=False,
    )


@app.command()
def worker() -> None:
    """Run the background loops alone (for servers started with --no-worker).

    Stops cleanly on SIGTERM or Ctrl-C; several workers may share one PostgreSQL database.
    """
    settings = get_settings()
    _process_setup(settings)
    from mailroom.migrations import upgrade
    from mailroom.worker import run_forever

    settings.prepare_storage()
    asyncio.run(upgrade(settings.resolved_database_url))
    asyncio.run(run_forever(settings))


@app.command()
def bounces(
    listen: Annotated[
        str,
        typer.Option(
            "--listen",
            help="host:port to receive on (default: MAILROOM_BOUNCE_SMTP, else 127.0.0.1:2525).",
        ),
    ] = "",
) -> None:
    """Run the inbound SMTP listener alone: bounces (RFC 3464), complaint reports (RFC 5965)
    and List-Unsubscribe mails sent back to the return path. Point the return-path domain's
    MX (or your MTA's transport for it) here. Stops on SIGTERM or Ctrl-C."""
    settings = get_settings()
    _process_setup(settings)
    from mailroom.bounces import listener
    from mailroom.db import Database
    from mailroom.migrations import upgrade

    settings.prepare_storage()
    address = listen or settings.bounce_smtp or "127.0.0.1:2525"
    asyncio.run(upgrade(settings.resolved_database_url))

    async def run() -> None:
        db = Database(settings.resolved_database_url)
        await db.warm()
        server, _handler = await listener.start(db, settings, address)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        out.print(f"Receiving bounces and complaints on {address}")
        try:
            await stop.wait()
        finally:
            server.close()
            await db.dispose()

    asyncio.run(run())


app.command(
    "doctor",
    help="Check this installation: the database and its migrations, the secret key, the SMTP "
    "relay, each sending domain's DNS records, the workers, the bounce listener, the public "
    "URL and the data directory's disk space. Prints a table of what it found, with how to "
    "fix each problem; exits 1 when a check fails (warnings do not). Changes nothing. With "
    '--json prints {"ok", "checks": [{"name", "status", "detail", "fix"}]}.',
)(doctor_command)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply every pending migration to the database in MAILROOM_DATABASE_URL."""
    from mailroom.migrations import upgrade

    settings = get_settings()
    settings.prepare_storage()
    asyncio.run(upgrade(settings.resolved_database_url))
    out.print("Database is up to date.")


@admin_app.command("create-workspace")
def create_workspace(
    plan: Annotated[
        str | None,
        typer.Option(help="free, starter, pro or business (default free for a new account)."),
    ] = None,
    account: Annotated[
        str | None,
        typer.Option(help="Add the workspace to this existing account (shares its plan)."),
    ] = None,
    name: Annotated[str, typer.Option(help="Workspace name.")] = "",
    permissions: PermissionsOption = "all",
    blueprint: Annotated[
        str,
        typer.Option(
            help="Set the workspace up from this blueprint: starter-newsletter, starter-shop, "
            "or a blueprint id of --account (see GET /api/v1/blueprints).",
        ),
    ] = "",
    as_json: JsonFlag = False,
) -> None:
    """Create a workspace (in a new account, or in --account) and a first API key, optionally
    set up from a blueprint.

    With --json prints {"account_id", "workspace_id", "key_id", "api_key"} (and "blueprint":
    the apply's plan and any new webhook secrets). The key is shown only now; it is stored
    hashed.
    """

    async def work(db: Database) -> dict[str, Any]:
        from mailroom.accounts import service as accounts_service

        async with db.transaction() as session:
            acct, workspace = await accounts_service.create_workspace(
                session, plan=plan, account_id=account, name=name
            )
            created = await accounts_service.create_key(
                session, workspace.id, permissions=permissions, name="admin"
            )
        result: dict[str, Any] = {
            "account_id": acct.id,
            "workspace_id": workspace.id,
            "key_id": created.key.id,
            "api_key": created.secret,
            "plan": acct.plan,
        }
        if blueprint:
            try:
                result["blueprint"] = await _apply_blueprint(db, workspace.id, blueprint)
            except ApiError as exc:  # the workspace and its key exist: show them first
                result["blueprint_error"] = exc.message
        return result

    result = _run(lambda: _with_db(work))
    shown = {k: result[k] for k in ("account_id", "workspace_id", "key_id", "api_key")}
    human = (
        f"Account   {result['account_id']} ({result['plan']} plan)\n"
        f"Workspace {result['workspace_id']}\n"
        f"Key id    {result['key_id']}\n"
        f"API key   {result['api_key']}   (shown once; keep it safe)"
    )
    if "blueprint" in result:
        applied = result["blueprint"]
        shown["blueprint"] = applied
        made = sum(row["action"] == "create" for row in applied["plan"])
        human += f"\nBlueprint {blueprint}: {made} object(s) created"
        for secret in applied.get("secrets", []):
            human += f"\nWebhook   {secret['name']} secret {secret['secret']}   (shown once)"
    if "blueprint_error" in result:
        shown["blueprint_error"] = result["blueprint_error"]
    _emit(shown, as_json, human)
    if "blueprint_error" in result:
        _fail(result["blueprint_error"])


async def _apply_blueprint(db: Database, workspace_id: str, blueprint_id: str) -> dict[str, Any]:
    """Apply a blueprint to a new workspace (as `POST /blueprints/{id}/apply` does, with its
    admin principal): the document read first, webhook URLs checked before the transaction."""
    from mailroom.accounts import service as accounts_service
    from mailroom.blueprints import service as blueprints
    from mailroom.core.context import Context

    settings = get_settings()
    async with db.session(write=False) as session:
        principal = await accounts_service.principal_for_workspace(session, workspace_id)
    try:
        async with db.session(write=False) as session:
            document = await blueprints.read_document(
                db, Context(session, principal, settings), blueprint_id
            )
        async with db.transaction() as session:
            ctx = Context(session, principal, settings)
            return await blueprints.apply_blueprint(ctx, blueprint_id, {"dry_run": False}, document)
    except ApiError as exc:
        raise ApiError(
            exc.status,
            f"Workspace {workspace_id} was created, but the blueprint was not applied: "
            f"{exc.message}",
        ) from None


@admin_app.command("create-key")
def create_key(
    workspace: Annotated[
        str, typer.Option(help="Workspace id the key belongs to (mailroom admin list-workspaces).")
    ],
    permissions: PermissionsOption = "all",
    name: Annotated[str, typer.Option(help="A label to recognise the key by.")] = "",
    as_json: JsonFlag = False,
) -> None:
    """Create an API key for a workspace. With --json prints {"key_id", "api_key"}."""

    async def work(db: Database) -> dict[str, Any]:
        from mailroom.accounts import service as accounts_service

        async with db.transaction() as session:
            created = await accounts_service.create_key(
                session, workspace, permissions=permissions, name=name
            )
        return {"key_id": created.key.id, "api_key": created.secret}

    result = _run(lambda: _with_db(work))
    _emit(
        result,
        as_json,
        f"Key id  {result['key_id']}\nAPI key {result['api_key']}   (shown once; keep it safe)",
    )


@admin_app.command("create-user")
def create_user(
    account: Annotated[
        str,
        typer.Option(help="Account id of the workspace below (mailroom admin list-workspaces)."),
    ],
    email: Annotated[str, typer.Option(help="Their email address (their sign-in name).")],
    workspace: Annotated[
        str | None, typer.Option(help="A workspace of the account to give them a role in.")
    ] = None,
    role: Annotated[str, typer.Option(help="Their role there: admin or member.")] = "admin",
    as_json: JsonFlag = False,
) -> None:
    """Add a person who signs in to the dashboard (the first admin of an installation), and
    print a one-time sign-in link (valid 3 days) where they choose their password. A person
    is one per address across the installation; admins give existing people roles in their
    workspaces by inviting them from the People page."""

    async def work(db: Database) -> dict[str, Any]:
        from mailroom.people import service as people_service

        settings = get_settings()
        async with db.transaction() as session:
            person = await people_service.create_person(
                session, account, email, workspace_id=workspace, role=role
            )
            link = people_service.sign_in_link(settings, person)
        return {"person_id": person.id, "email": person.email, "sign_in_link": link}

    result = _run(lambda: _with_db(work))
    _emit(
        result,
        as_json,
        f"Person {result['person_id']} ({result['email']})\n"
        f"Sign-in link (works once, for 3 days):\n{result['sign_in_link']}",
    )


@admin_app.command("sign-in-link")
def sign_in_link(
    email: Annotated[str, typer.Option(help="The person's email address.")],
    as_json: JsonFlag = False,
) -> None:
    """Print a new one-time sign-in link for a person (a forgotten password when the
    installation has no MAILROOM_SYSTEM_FROM to email one). Earlier links stop working."""

    async def work(db: Database) -> dict[str, Any]:
        from mailroom.people import service as people_service

        settings = get_settings()
        async with db.transaction() as session:
            person = await people_service.by_email(session, email)
            if person is None:
                raise ApiError(404, "Person not found")
            person.link_nonce = secrets.token_hex(8)
            link = people_service.sign_in_link(settings, person)
        return {"person_id": person.id, "email": person.email, "sign_in_link": link}

    result = _run(lambda: _with_db(work))
    _emit(
        result,
        as_json,
        f"Sign-in link for {result['email']} (works once, for 3 days):\n{result['sign_in_link']}",
    )


@admin_app.command("revoke-key")
def revoke_key(
    key_id: Annotated[str, typer.Argument(help="Id of the key to revoke.")],
    as_json: JsonFlag = False,
) -> None:
    """Revoke an API key: it answers 401 from the next request on. Revoking twice is fine."""

    async def work(db: Database) -> dict[str, Any]:
        from mailroom.accounts import service as accounts_service

        async with db.transaction() as session:
            key = await accounts_service.revoke_key(session, key_id)
        assert key.revoked_at is not None
        return {"key_id": key.id, "revoked_at": key.revoked_at.isoformat()}

    result = _run(lambda: _with_db(work))
    _emit(result, as_json, f"Revoked key {result['key_id']}")


@admin_app.command("list-workspaces")
def list_workspaces(as_json: JsonFlag = False) -> None:
    """List every workspace: its account id, workspace id, name and plan (the ids that
    set-plan, create-key, create-user and pause-sending take). With --json prints a list of
    {"account_id", "workspace_id", "name", "plan"}."""

    async def work(db: Database) -> list[dict[str, str]]:
        from mailroom.accounts import service as accounts_service

        async with db.session(write=False) as session:
            return await accounts_service.list_workspaces(session)

    rows = _run(lambda: _with_db(work))
    if as_json:
        sys.stdout.write(json.dumps(rows) + "\n")
        return
    if not rows:
        out.print("No workspace yet: mailroom admin demo, or mailroom admin create-workspace")
        return
    lines = [f"{'Account id':36}  {'Workspace id':36}  {'Plan':8}  Name"]
    lines += [
        f"{r['account_id']:36}  {r['workspace_id']:36}  {r['plan']:8}  {r['name']}" for r in rows
    ]
    out.print("\n".join(lines), highlight=False, soft_wrap=True)


@admin_app.command("set-plan")
def set_plan(
    account_id: Annotated[str, typer.Argument(help="Account id (mailroom admin list-workspaces).")],
    plan: Annotated[str, typer.Argument(help="free, starter, pro or business.")],
    as_json: JsonFlag = False,
) -> None:
    """Move an account (all its workspaces) to another plan."""

    async def work(db: Database) -> dict[str, Any]:
        from mailroom.accounts import service as accounts_service

        async with db.transaction() as session:
            account = await accounts_service.set_plan(session, account_id, plan)
        return {"account_id": account.id, "plan": account.plan}

    result = _run(lambda: _with_db(work))
    _emit(result, as_json, f"Account {result['account_id']} is now on the {result['plan']} plan")


def _sending_state(row: Any) -> dict[str, Any]:
    return {
        "paused": row.paused,
        "paused_by": row.paused_by,
        "reason": row.pause_reason,
        "note": row.pause_note,
        "paused_at": row.paused_at.isoformat() if row.paused_at else None,
    }


async def _sending_switch(
    db: Database, workspace_id: str, change: Callable[[Context], Awaitable[Any]]
) -> dict[str, Any]:
    """Run `change` on the workspace's sending in one transaction; its state before and after."""
    from mailroom.accounts import service as accounts_service
    from mailroom.core.context import Context
    from mailroom.sending import service as sending_service

    async with db.transaction() as session:
        principal = await accounts_service.principal_for_workspace(session, workspace_id)
        ctx = Context(session, principal, get_settings())
        before = _sending_state(await sending_service.settings_of(ctx))
        row = await change(ctx)
        return {"workspace_id": workspace_id, **_sending_state(row), "before": before}


@admin_app.command("pause-sending")
def pause_sending(
    workspace_id: Annotated[
        str, typer.Argument(help="Workspace id (mailroom admin list-workspaces).")
    ],
    reason: Annotated[
        str,
        typer.Option(
            "--reason",
            help="Why, in a line (up to 500 characters). Kept as the pause's `note`; the "
            "workspace reads it in GET /api/v1/sending and in every 403.",
        ),
    ],
    as_json: JsonFlag = False,
) -> None:
    """Stop a workspace's sending as the operator (abuse, complaints, unpaid bills).

    Nothing of the workspace is claimed (campaigns stay `sending`, their queue waits), `/send`
    and campaign starts are refused 403 with the reason, and its API keys cannot resume it.
    Fires `workspace.paused`. A pause the workspace or the health check made becomes the
    operator's; pausing again replaces the reason only. With --json prints
    {"workspace_id", "paused", "paused_by", "reason", "note", "paused_at"}.
    """

    async def change(ctx: Context) -> Any:
        from mailroom.sending import service as sending_service

        return await sending_service.pause(ctx, by="operator", reason="operator", note=reason)

    result = _run(lambda: _with_db(lambda db: _sending_switch(db, workspace_id, change)))
    before = result.pop("before")
    if before["paused_by"] == "operator":
        human = f"Sending of workspace {workspace_id} was already paused by the operator"
        human += f" (since {before['paused_at']}); reason now: {result['note']}"
    else:
        human = f"Sending of workspace {workspace_id} is paused by the operator: {result['note']}"
        if before["paused"]:
            human += f" (it was paused by {before['paused_by']})"
    _emit(result, as_json, human)


@admin_app.command("resume-sending")
def resume_sending(
    workspace_id: Annotated[
        str, typer.Argument(help="Workspace id (mailroom admin list-workspaces).")
    ],
    as_json: JsonFlag = False,
) -> None:
    """Lift a workspace's pause, whoever made it (the operator, the workspace or the health
    check). Fires `workspace.resumed`; its queued messages go out again. Not paused: nothing
    changes. With --json prints the same fields as pause-sending."""

    async def change(ctx: Context) -> Any:
        from mailroom.sending import service as sending_service

        return await sending_service.resume(ctx, by="operator")

    result = _run(lambda: _with_db(lambda db: _sending_switch(db, workspace_id, change)))
    before = result.pop("before")
    if before["paused"]:
        human = f"Sending of workspace {workspace_id} is resumed (was paused by "
        human += f"{before['paused_by']} since {before['paused_at']})"
    else:
        human = f"Sending of workspace {workspace_id} was not paused; nothing changed"
    _emit(result, as_json, human)


@admin_app.command("demo")
def demo(
    port: Annotated[int, typer.Option(help="Port the server will use, for the curl line.")] = 8000,
    email: Annotated[
        str, typer.Option(help="Address of the demo admin who signs in to the dashboard.")
    ] = "admin@example.com",
) -> None:
    """First run only: create a demo account on the Business plan (no plan limit gets in the
    way of trying things), its workspace, an all-permissions key and a dashboard admin, and
    print a ready curl line and the admin's one-time sign-in link. Does nothing when a
    workspace already exists."""

    async def work(db: Database) -> dict[str, Any] | None:
        from mailroom.accounts import service as accounts_service
        from mailroom.people import service as people_service

        settings = get_settings()
        async with db.transaction() as session:
            if await accounts_service.any_workspace(session):
                return None
            acct, workspace = await accounts_service.create_workspace(
                session, plan="business", name="Demo"
            )
            created = await accounts_service.create_key(session, workspace.id, name="demo")
            person = await people_service.create_person(
                session, acct.id, email, workspace_id=workspace.id, role="admin"
            )
            link = people_service.sign_in_link(settings, person)
        return {
            "account_id": acct.id,
            "workspace_id": workspace.id,
            "api_key": created.secret,
            "email": person.email,
            "sign_in_link": link,
        }

    result = _run(lambda: _with_db(work))
    if result is None:
        out.print(
            "A workspace exists already (mailroom admin list-workspaces).\n"
            "A new dashboard sign-in link: mailroom admin sign-in-link --email <address>\n"
            "A new API key: mailroom admin create-key --workspace <workspace id>",
            highlight=False,
            soft_wrap=True,
        )
        return
    # The link stands alone on its line so a terminal makes it one clickable, copyable URL.
    out.print(
        f"Demo workspace {result['workspace_id']} (Business plan, "
        f"account {result['account_id']})\n"
        f"API key (shown once): {result['api_key']}\n\n"
        f"Try it:\n  curl -s http://127.0.0.1:{port}/api/v1/account "
        f"-H 'x-api-key: {result['api_key']}'\n\n"
        f"Dashboard: http://127.0.0.1:{port}/app. Open this link (works once, for 3 days) "
        f"to choose the password of its admin, {result['email']}:\n"
        f"{result['sign_in_link']}\n",
        highlight=False,
        soft_wrap=True,
    )


@app.command("import")
def import_contacts(
    file: Annotated[
        Path, typer.Argument(help="UTF-8 CSV file (5 MB at most).", exists=True, dir_okay=False)
    ],
    workspace: Annotated[
        str, typer.Option(help="Workspace id to import into (mailroom admin list-workspaces).")
    ],
    default_status: Annotated[
        str, typer.Option(help="subscribed or unsubscribed, for blank status cells.")
    ] = "subscribed",
    source: Annotated[str, typer.Option(help="Source for rows without a source cell.")] = "import",
    skip_duplicates: Annotated[
        bool, typer.Option(help="Keep names and status of existing contacts.")
    ] = True,
    tags: Annotated[str, typer.Option(help="Tags for every row, separated by ; or |.")] = "",
    list_id: Annotated[
        str, typer.Option("--list", help="Add every subscribed contact to this list id.")
    ] = "",
    check_domains: Annotated[
        bool, typer.Option(help="Skip rows whose domain cannot receive mail.")
    ] = False,
    mapping: Annotated[
        str, typer.Option(help="JSON mapping of column index to target (see the API).")
    ] = "",
    platform: Annotated[
        str,
        typer.Option(
            help="Import another platform's export instead of a Mailroom CSV: mailchimp (the "
            "audience export .zip or one of its CSV files), listmonk, brevo, kit or mautic. "
            "Only --list, --check-domains and --dry-run apply then.",
        ),
    ] = "",
    dry_run: Annotated[
        bool, typer.Option(help="With --platform: count what would happen, write nothing.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Import contacts from a CSV file: the same rules as POST /api/v1/contacts/import, in one
    transaction (all rows or none), with a progress display. With --platform, another
    platform's export, as POST /api/v1/imports does, with a progress bar."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from mailroom.accounts import service as accounts
    from mailroom.contacts import importer
    from mailroom.core.context import Context

    if platform:
        _platform_import(file, workspace, platform, list_id, check_domains, dry_run, as_json)
        return
    content = file.read_bytes()
    if len(content) > importer.MAX_BYTES:
        _fail(importer.TOO_LARGE)
    try:
        options = importer.parse_options(
            {
                "default_status": default_status,
                "source": source,
                "skip_duplicates": str(skip_duplicates).lower(),
                "tags": tags,
                "list_id": list_id,
                "check_domains": str(check_domains).lower(),
                "mapping": mapping,
            }
        )
    except ApiError as exc:
        _fail(exc.message)
        return
    settings = get_settings()

    async def work(db: Database) -> dict[str, Any]:
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=err,
            transient=as_json,
        ) as progress:
            task = progress.add_task("starting", total=None)

            def step(name: str, done: int, total: int) -> None:
                progress.update(task, description=f"{name} ({total:,} rows)" if total else name)

            async with db.transaction() as session:
                principal = await accounts.principal_for_workspace(session, workspace)
                ctx = Context(session, principal, settings)
                report = await importer.run_import(ctx, content, options, progress=step)
            progress.update(task, description="done")
        return report.as_dict()

    result = _run(lambda: _with_db(work, settings))
    _emit(
        result,
        as_json,
        f"Imported {result['imported']:,}, updated {result['updated']:,}, "
        f"skipped {result['skipped']:,} (invalid {result['invalid']:,}, "
        f"unconfirmed {result['skipped_unconfirmed']:,}, duplicates {result['skipped_duplicates']:,}, "
        f"placeholders {result['skipped_placeholder']:,}, undeliverable {result['skipped_undeliverable']:,}).",
    )


INTERRUPTED = (
    "The import {id} was interrupted ({error}); a worker (mailroom worker, or mailroom serve) "
    "resumes it where it stopped: follow it with GET /api/v1/imports/{id}"
)


def _platform_import(
    file: Path,
    workspace: str,
    platform: str,
    list_id: str,
    check_domains: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """`mailroom import FILE --platform P`: the job POST /api/v1/imports starts, run here (or,
    when a worker took it first, followed) with a progress bar."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from mailroom.accounts import service as accounts
    from mailroom.contacts import importer
    from mailroom.core.context import Context
    from mailroom.models import PlatformImport
    from mailroom.platform_imports import runner
    from mailroom.platform_imports import service as platform_imports
    from mailroom.worker import WorkerContext, _contexts, new_worker_id

    content = file.read_bytes()
    if len(content) > importer.MAX_BYTES:
        _fail(platform_imports.TOO_LARGE)
    settings = get_settings()
    fields = {
        "platform": platform,
        "list_id": list_id,
        "dry_run": str(dry_run).lower(),
        "check_domains": str(check_domains).lower(),
    }

    async def work(db: Database) -> dict[str, Any]:
        async with db.session(write=False) as session:
            principal = await accounts.principal_for_workspace(session, workspace)
        # The file is read before this transaction's first statement (start_file_import):
        # no write lock is held through seconds of parsing.
        async with db.transaction() as session:
            ctx = Context(session, principal, settings)
            job = await platform_imports.start_file_import(
                ctx, filename=file.name, content=content, fields=fields
            )
            job_id = job.id
        worker_id = new_worker_id()
        contexts = _contexts(WorkerContext(db, settings, worker_id))
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        with Progress(*columns, TimeElapsedColumn(), console=err, transient=as_json) as bar:
            task = bar.add_task(f"{platform} import", total=None)
            running = asyncio.create_task(runner.run_job(db, contexts, settings, worker_id, job_id))
            while True:
                async with db.session(write=False) as session:
                    ctx = Context(session, principal, settings)
                    shown = platform_imports.as_dict(await platform_imports.get_import(ctx, job_id))
                progress = shown["progress"]
                bar.update(task, completed=progress["done"], total=progress["total"] or None)
                if shown["status"] in ("done", "failed"):
                    break
                if running.done() and running.result():
                    async with db.session(write=False) as session:
                        row = await session.get(PlatformImport, job_id)
                        status = row.status if row else "failed"
                        last = (row.state or {}).get("last_error") if row else None
                    if status in ("done", "failed"):
                        continue  # it ended since the read above: shown on the next turn
                    # This process ran it and it is still pending: an unexpected error
                    # interrupted it (logged); a worker resumes it after a pause.
                    raise ApiError(500, INTERRUPTED.format(id=job_id, error=last or "see the log"))
                await asyncio.sleep(0.2)
            await running
        return shown

    shown = _run(lambda: _with_db(work, settings))
    if shown["status"] == "failed":
        if as_json:
            sys.stdout.write(json.dumps(shown, default=str) + "\n")
        _fail(shown["error"] or "The import failed")
    result = shown["result"]
    suppressed = result["suppressed"]
    verb = "Would create" if dry_run else "Created"
    _emit(
        json.loads(json.dumps(shown, default=str)),
        as_json,
        f"{verb} {result['created']:,}, updated {result['updated']:,}, unchanged "
        f"{result['unchanged']:,}; suppressed {suppressed['unsubscribed']:,} unsubscribed, "
        f"{suppressed['bounced']:,} bounced, {suppressed['complained']:,} complained; "
        f"{result['tags_created']:,} tags, {len(result['fields_created']):,} fields and "
        f"{result['lists_created']:,} lists created; skipped {result['skipped_total']:,}."
        + "".join(f"\nWarning: {w}" for w in result["warnings"]),
    )


@app.command("mcp")
def mcp_stdio() -> None:
    """Serve the API's operations as MCP tools over stdin/stdout, for desktop agent clients.

    The API key comes from the MAILROOM_API_KEY environment variable; every tool call runs with
    it, with its permissions and its workspace. The same tools are served over HTTP at /mcp by
    `mailroom serve` (send the key in the x-api-key header there). Webhook deliveries and other
    background work need a running `mailroom serve` or `mailroom worker`.
    """
    # The tools are the whole API, so this command needs the app itself, not one service.
    from mailroom.app import create_app
    from mailroom.mcp.server import key_is_valid, serve_stdio
    from mailroom.migrations import upgrade

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    api_key = os.environ.get("MAILROOM_API_KEY", "").strip()
    if not api_key:
        _fail("Set MAILROOM_API_KEY to a workspace API key (mailroom admin create-key).")
    settings = get_settings()

    async def work() -> None:
        settings.prepare_storage()
        await upgrade(settings.resolved_database_url)
        api = create_app(settings)
        try:
            if not await key_is_valid(api.state.db, api_key):
                _fail("MAILROOM_API_KEY is not a valid, unrevoked API key.")
            await serve_stdio(api, api_key)
        finally:
            await api.state.db.dispose()

    asyncio.run(work())


@app.command("backup")
def backup_command(
    file: Annotated[
        Path,
        typer.Argument(
            help="The archive to write, e.g. mailroom-2026-05-01.tar.gz (readable by you only).",
            dir_okay=False,
        ),
    ],
    force: Annotated[bool, typer.Option("--force", help="Replace FILE if it exists.")] = False,
) -> None:
    """Back the installation up into one .tar.gz archive while it keeps running: the database
    (SQLite: a consistent copy made with SQLite's online backup API; PostgreSQL: pg_dump, whose
    command is printed), the secret key file and the hosted media files, with a manifest of
    every file's SHA-256. Restore it with `mailroom restore FILE`."""
    from mailroom.system import backup as backups

    report = backups.Report(out, err)
    try:
        backups.backup(get_settings(), file, report, force=force)
    except backups.BackupError as exc:
        _fail(str(exc))


@app.command("restore")
def restore_command(
    file: Annotated[
        Path, typer.Argument(help="An archive made by `mailroom backup`.", dir_okay=False)
    ],
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace a database that holds data, another secret key and existing media "
            "files (stop `mailroom serve` and `mailroom worker` first).",
        ),
    ] = False,
    check: Annotated[
        bool,
        typer.Option("--check", help="Only check the archive and the target; change nothing."),
    ] = False,
) -> None:
    """Restore a `mailroom backup` archive into the database and data directory the MAILROOM_*
    settings name, then migrate the database to this Mailroom's schema.

    Every checksum is checked before anything changes: a damaged or foreign archive is refused.
    A target that is not empty is refused without --force, and one where Mailroom runs (a fresh
    server or worker heartbeat) always. PostgreSQL: replaces everything in the database's
    Mailroom schema in one transaction (runs and prints `pg_restore --no-owner --file=...` and
    `psql --single-transaction`); MAILROOM_DATABASE_URL must name an existing database
    (createdb)."""
    from mailroom.system import backup as backups
    from mailroom.system import restore as restores

    report = backups.Report(out, err)
    try:
        restores.restore(get_settings(), file, report, force=force, check=check)
    except backups.BackupError as exc:
        _fail(str(exc))


def main() -> None:
    app()
