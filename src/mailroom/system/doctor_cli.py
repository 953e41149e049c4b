"""The `mailroom doctor` command (registered in `mailroom.cli`); the checks are `system.doctor`.

Only Typer is imported here at module level: `mailroom --help` must not load the database
layer for a command it does not run.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from mailroom.system.doctor import Check

JsonFlag = Annotated[
    bool,
    typer.Option("--json", help='Print {"ok", "checks": [{"name", "status", "detail", "fix"}]}.'),
]

STYLES = {"ok": ("ok", "green"), "warn": ("warn", "yellow"), "fail": ("FAIL", "bold red")}


def doctor(as_json: JsonFlag = False) -> None:
    """Check this installation: the database and its migrations, the secret key, the SMTP
    relay, each sending domain's DNS records, the workers, the bounce listener, the public
    URL and the data directory's disk space. Prints what it found and how to fix each
    problem; exits 1 when a check fails (warnings do not). Changes nothing. With --json prints
    {"ok", "checks": [{"name", "status", "detail", "fix"}]}."""
    from pydantic import ValidationError

    from mailroom.cli import _run, get_settings
    from mailroom.system import doctor as checks_module
    from mailroom.system.doctor import Check

    try:
        settings = get_settings()
    except ValidationError as exc:
        found: list[Check] = [
            Check(
                "settings",
                "fail",
                "; ".join(
                    f"MAILROOM_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}"
                    for e in exc.errors()
                ),
                "fix the MAILROOM_* variables named (see the README's settings table)",
            )
        ]
    else:
        found = _run(lambda: checks_module.run(settings))
    if as_json:
        sys.stdout.write(json.dumps(checks_module.report(found)) + "\n")
    else:
        _print_table(found)
    if checks_module.failed(found):
        raise typer.Exit(1)


def _print_table(found: list[Check]) -> None:
    from rich.table import Table
    from rich.text import Text

    from mailroom.cli import out

    table = Table(title="Mailroom doctor", title_justify="left", show_lines=True)
    table.add_column("check", no_wrap=True)
    table.add_column("status", no_wrap=True)
    # Folded, never cut: a record to publish must be shown whole.
    table.add_column("found", ratio=3, overflow="fold")
    table.add_column("fix", ratio=2, overflow="fold")
    for check in found:
        label, style = STYLES.get(check.status, (check.status, ""))
        # Text, not markup: details hold brackets ([::1]:25) that are not style tags.
        table.add_row(
            Text(check.name), Text(label, style=style), Text(check.detail), Text(check.fix or "")
        )
    out.print(table)
    counts = {status: sum(c.status == status for c in found) for status in STYLES}
    summary = f"{counts['ok']} ok, {counts['warn']} warning(s), {counts['fail']} failure(s)"
    out.print(Text(summary, style="bold red" if counts["fail"] else "bold"))
