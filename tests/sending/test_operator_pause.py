"""Pausing and resuming a workspace's sending: by its own key (`/api/v1/sending/pause`,
`/resume`) and by the operator (`mailroom admin pause-sending` / `resume-sending`), whose pause
no key can lift. Both fire `workspace.paused` / `workspace.resumed`."""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.sending.helpers import events_of, make_contacts, ok

SEND = {"to": "jane@mailtest.io", "subject": "Hi", "text_content": "Hello"}


async def _ready(client, ws):
    await ok(
        await client.patch(
            "/api/v1/sending", json={"from_email": "news@shop.example"}, headers=ws.headers
        )
    )
    await make_contacts(client, ws, ["jane@mailtest.io"])


async def test_a_key_pauses_and_resumes(client, db, ws):
    await _ready(client, ws)
    paused = (await ok(await client.post("/api/v1/sending/pause", headers=ws.headers)))["sending"]
    assert (paused["paused"], paused["paused_by"], paused["reason"]) == (
        True,
        "workspace",
        "workspace",
    )
    assert paused["paused_at"] is not None
    refused = await client.post("/api/v1/send", json=SEND, headers=ws.headers)
    assert refused.status_code == 403
    assert refused.json() == {
        "error": "Sending is paused for this account (paused from the workspace). "
        "Resume with POST /api/v1/sending/resume."
    }
    shown = (await ok(await client.get("/api/v1/sending", headers=ws.headers)))["sending"]
    assert shown["paused"] is True

    resumed = (await ok(await client.post("/api/v1/sending/resume", headers=ws.headers)))["sending"]
    assert (resumed["paused"], resumed["paused_by"], resumed["paused_at"]) == (False, None, None)
    await ok(await client.post("/api/v1/send", json=SEND, headers=ws.headers), 202)
    types = [
        e.type
        for e in await events_of(db, ws.workspace_id, "workspace.paused", "workspace.resumed")
    ]
    assert types == ["workspace.paused", "workspace.resumed"]


async def test_pause_needs_campaigns_send(client, factory, ws):
    writer = await factory.key(ws, ["campaigns:read", "campaigns:write"])
    refused = await client.post("/api/v1/sending/pause", headers=writer)
    assert (refused.status_code, refused.json()) == (
        403,
        {"error": "Forbidden: campaigns:send permission required"},
    )


async def test_the_operators_pause_cannot_be_lifted_with_a_key(client, db, ws, cli_env):
    await _ready(client, ws)
    await ok(await client.post("/api/v1/sending/pause", headers=ws.headers))  # taken over
    done = run_cli(
        "admin",
        "pause-sending",
        ws.workspace_id,
        "--reason",
        "spam complaints",
        "--json",
        env=cli_env,
    )
    assert done.returncode == 0, done.stderr
    state = json.loads(done.stdout)
    assert (state["paused"], state["paused_by"], state["reason"], state["note"]) == (
        True,
        "operator",
        "operator",
        "spam complaints",
    )
    message = (
        "Sending is paused for this account by the operator of this service (spam complaints). "
        "An API key cannot resume it: contact the operator."
    )
    shown = (await ok(await client.get("/api/v1/sending", headers=ws.headers)))["sending"]
    assert (shown["paused_by"], shown["reason"]) == ("operator", "operator")
    lift = await client.post("/api/v1/sending/resume", headers=ws.headers)
    assert (lift.status_code, lift.json()) == (403, {"error": message})
    refused = await client.post("/api/v1/send", json=SEND, headers=ws.headers)
    assert (refused.status_code, refused.json()) == (403, {"error": message})

    done = run_cli("admin", "resume-sending", ws.workspace_id, env=cli_env)
    assert done.returncode == 0, done.stderr
    assert "is resumed (was paused by operator" in " ".join(done.stdout.split())
    again = run_cli("admin", "resume-sending", ws.workspace_id, env=cli_env)
    assert "was not paused; nothing changed" in " ".join(again.stdout.split())
    await ok(await client.post("/api/v1/send", json=SEND, headers=ws.headers), 202)
    paused = await events_of(db, ws.workspace_id, "workspace.paused")
    assert [e.data["paused_by"] for e in paused] == ["workspace", "operator"]
    assert paused[1].data["note"] == "spam complaints"
    [resumed] = await events_of(db, ws.workspace_id, "workspace.resumed")
    assert resumed.data["resumed_by"] == "operator"


async def test_an_unknown_workspace_is_a_clear_error(cli_env):
    done = run_cli("admin", "pause-sending", "nope", "--reason", "x", env=cli_env)
    assert done.returncode != 0
    assert "Workspace not found" in done.stdout + done.stderr


async def test_pausing_again_replaces_the_reason_only(client, db, ws, cli_env):
    await _ready(client, ws)
    first = run_cli("admin", "pause-sending", ws.workspace_id, "--reason", "abuse", env=cli_env)
    assert first.returncode == 0, first.stderr
    since = (await ok(await client.get("/api/v1/sending", headers=ws.headers)))["sending"]
    second = run_cli(
        "admin", "pause-sending", ws.workspace_id, "--reason", "unpaid   invoice\n", env=cli_env
    )
    assert second.returncode == 0, second.stderr
    assert "was already paused by the operator" in " ".join(second.stdout.split())
    shown = (await ok(await client.get("/api/v1/sending", headers=ws.headers)))["sending"]
    assert (shown["note"], shown["paused_at"]) == ("unpaid invoice", since["paused_at"])
    assert len(await events_of(db, ws.workspace_id, "workspace.paused")) == 1


async def test_the_reason_is_required_and_bounded(client, ws, cli_env):
    await _ready(client, ws)
    blank = run_cli("admin", "pause-sending", ws.workspace_id, "--reason", "  ", env=cli_env)
    assert blank.returncode != 0
    assert "needs a reason" in " ".join((blank.stdout + blank.stderr).split())
    long = run_cli("admin", "pause-sending", ws.workspace_id, "--reason", "x" * 501, env=cli_env)
    assert long.returncode != 0
    assert "500 characters or fewer" in " ".join((long.stdout + long.stderr).split())
    shown = (await ok(await client.get("/api/v1/sending", headers=ws.headers)))["sending"]
    assert shown["paused"] is False
