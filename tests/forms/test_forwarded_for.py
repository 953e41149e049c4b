"""Which client address the rate limits count by, against a real `mailroom serve`: a client's
own `X-Forwarded-For` changes nothing by default (it would otherwise pick a fresh address for
every request and never meet the per-IP form limit), and is believed only from a proxy named
in `MAILROOM_TRUSTED_PROXIES`."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from tests.forms.helpers import contact_by_email, make_form


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@asynccontextmanager
async def _serve(cli_env: dict[str, str], **extra: str) -> AsyncIterator[httpx.AsyncClient]:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **{k: v for k, v in os.environ.items() if k != "MAILROOM_TRUSTED_PROXIES"},
        **cli_env,
        "MAILROOM_PUBLIC_URL": base,
        "MAILROOM_FORM_RATE_PER_MINUTE": "2",
        **extra,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "mailroom", "serve", "--no-worker", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            deadline = time.monotonic() + 60
            while True:
                if process.poll() is not None:
                    raise AssertionError(process.stderr.read().decode()[-2000:])  # type: ignore[union-attr]
                try:
                    if (await client.get("/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "mailroom serve did not answer"
                await asyncio.sleep(0.1)
            yield client
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def _post(server, form_id, email, forwarded):
    return await server.post(
        f"/f/{form_id}", json={"email": email}, headers={"x-forwarded-for": forwarded}
    )


async def test_a_clients_forwarded_for_is_not_believed_by_default(client, ws, cli_env):
    form = await make_form(client, ws)
    async with _serve(cli_env, MAILROOM_TRUSTED_PROXIES="") as server:
        first = await _post(server, form["id"], "a@mail.example", "203.0.113.1")
        second = await _post(server, form["id"], "b@mail.example", "203.0.113.2")
        third = await _post(server, form["id"], "c@mail.example", "203.0.113.3")
    assert (first.status_code, second.status_code) == (200, 200), (first.text, second.text)
    assert third.status_code == 429, third.text  # all three came from 127.0.0.1
    assert third.json()["error"].startswith("Too many submissions from this address.")
    contact = await contact_by_email(client, ws, "a@mail.example")
    assert contact["custom_fields"]["consent_ip"] == "127.0.0.1"
    assert await contact_by_email(client, ws, "c@mail.example") is None


async def test_a_trusted_proxys_forwarded_for_is_the_client(client, ws, cli_env):
    form = await make_form(client, ws)
    async with _serve(cli_env, MAILROOM_TRUSTED_PROXIES="127.0.0.1") as server:
        answers = [
            await _post(server, form["id"], f"{n}@mail.example", ip)
            for n, ip in enumerate(["203.0.113.1", "203.0.113.1", "203.0.113.1", "203.0.113.2"])
        ]
    assert [a.status_code for a in answers] == [200, 200, 429, 200]
    contact = await contact_by_email(client, ws, "3@mail.example")
    assert contact["custom_fields"]["consent_ip"] == "203.0.113.2"
    assert await contact_by_email(client, ws, "2@mail.example") is None
