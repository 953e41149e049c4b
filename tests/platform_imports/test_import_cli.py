"""`mailroom import FILE --platform P --workspace ID`: the same job as POST /api/v1/imports, run
by the command with a progress bar."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import run_cli
from tests.platform_imports.helpers import mailchimp_zip


async def test_cli_platform_import(client: Any, ws: Any, cli_env: Any, tmp_path: Any) -> None:
    path = tmp_path / "members_export_5f3e2a1b9c.zip"
    path.write_bytes(mailchimp_zip())
    args = ("import", str(path), "--platform", "mailchimp", "--workspace", ws.workspace_id)
    dry = run_cli(*args, "--dry-run", env=cli_env)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith(
        "Would create 9, updated 0, unchanged 0; suppressed 3 unsubscribed"
    )
    listed = await client.get("/api/v1/contacts?limit=1", headers=ws.headers)
    assert listed.json()["pagination"]["total"] == 0

    real = run_cli(*args, "--json", env=cli_env)
    assert real.returncode == 0, real.stderr
    job = json.loads(real.stdout)
    assert (job["status"], job["result"]["created"]) == ("done", 9)
    assert job["result"]["suppressed"] == {"unsubscribed": 3, "bounced": 2, "complained": 0}
    listed = await client.get("/api/v1/contacts?limit=1", headers=ws.headers)
    assert listed.json()["pagination"]["total"] == 9
    # The same job the API shows.
    shown = await client.get(f"/api/v1/imports/{job['id']}", headers=ws.headers)
    assert shown.json()["import"]["status"] == "done"


async def test_cli_platform_import_refusals(ws: Any, cli_env: Any, tmp_path: Any) -> None:
    path = tmp_path / "people.csv"
    path.write_bytes(b"name,phone\nAda,123\n")
    wrong = run_cli(
        "import", str(path), "--platform", "kit", "--workspace", ws.workspace_id, env=cli_env
    )
    assert wrong.returncode == 1
    assert 'Not a Kit subscribers export: expected an "email_address" column' in wrong.stderr
    unknown = run_cli(
        "import", str(path), "--platform", "aweber", "--workspace", ws.workspace_id, env=cli_env
    )
    assert unknown.returncode == 1
    assert "platform must be one of mailchimp, listmonk, brevo, kit, mautic" in unknown.stderr
