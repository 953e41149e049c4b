"""People and sign-in: a one-time link to choose a password, session cookies, CSRF on every
form, sign-in limits with messages that never tell whether an address has an account, idle
and everywhere sign-out, and a person seeing only their own account's workspaces."""

from __future__ import annotations

import json
from contextlib import aclosing
from datetime import timedelta

from sqlalchemy import update

from mailroom.core.clock import utcnow
from mailroom.models import DashboardSession
from tests.conftest import run_cli
from tests.dashboard.helpers import PASSWORD, csrf_of, make_person, signed_in


async def test_the_link_sets_a_password_once_and_signs_in(app, client, db, settings, ws):
    link = await make_person(db, settings, ws, "ada@shop.example")
    page = await client.get(link)
    assert page.status_code == 200 and "ada@shop.example" in page.text
    assert page.headers["cache-control"] == "no-store"
    assert "script-src 'self'" in page.headers["content-security-policy"]
    for weak, message in (
        ("short", "Use at least 10 characters."),
        ("qwertyuiop", "This password is too common. Choose another."),
        ("ada-shop-2026", "Do not use your email address in your password."),
    ):
        refused = await client.post(link, data={"password": weak})
        assert refused.status_code == 400 and message in refused.text
    done = await client.post(link, data={"password": PASSWORD})
    assert (done.status_code, done.headers["location"]) == (303, "/app")
    cookie = done.headers["set-cookie"]
    assert "mailroom_session=" in cookie and "HttpOnly" in cookie
    assert "SameSite=lax" in cookie and "Path=/" in cookie and "Secure" not in cookie
    home = await client.get("/app")
    assert home.status_code == 200 and "Signed in as <strong>ada@shop.example</strong>" in home.text
    assert "Your password is saved." in home.text
    again = await client.get(link)
    assert again.status_code == 404 and "no longer works" in again.text


async def test_signing_in_with_the_password_and_out(app, db, settings, ws):
    first = await signed_in(app, db, settings, ws, "ada@shop.example")
    await first.aclose()
    async with _browser(app) as browser:
        assert (await browser.get("/app")).headers["location"] == "/app/sign-in?next=/app"
        form = await browser.get("/app/sign-in")
        token = csrf_of(form.text)
        wrong = await browser.post(
            "/app/sign-in", data={"csrf": token, "email": "ada@shop.example", "password": "nope"}
        )
        unknown = await browser.post(
            "/app/sign-in", data={"csrf": token, "email": "who@shop.example", "password": "nope"}
        )
        message = "That email and password do not match an account."
        assert wrong.status_code == unknown.status_code == 400
        assert message in wrong.text and message in unknown.text
        done = await browser.post(
            "/app/sign-in?next=/settings/api-keys",
            data={"csrf": token, "email": "ADA@shop.example", "password": PASSWORD},
        )
        assert (done.status_code, done.headers["location"]) == (303, "/settings/api-keys")
        home = await browser.get("/app")
        out = await browser.post("/app/sign-out", data={"csrf": csrf_of(home.text)})
        assert out.headers["location"] == "/app/sign-in?signed_out=1"
        assert (await browser.get("/app")).status_code == 303


async def test_forms_without_their_token_are_refused(app, db, settings, ws):
    async with _browser(app) as browser:
        await browser.get("/app/sign-in")
        refused = await browser.post(
            "/app/sign-in", data={"csrf": "forged", "email": "a@b.example", "password": "x"}
        )
        assert refused.status_code == 403 and "This form has expired" in refused.text
    person = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(person):
        refused = await person.post("/settings/api-keys", data={"name": "Sneaky"})
        assert refused.status_code == 403
        listed = await person.get("/settings/api-keys")
        assert "Sneaky" not in listed.text


async def test_sign_in_attempts_are_limited_per_address(app, db, settings, ws):
    async with _browser(app) as browser:
        token = csrf_of((await browser.get("/app/sign-in")).text)
        body = {"csrf": token, "email": "ada@shop.example", "password": "wrong password"}
        for _ in range(10):
            assert (await browser.post("/app/sign-in", data=body)).status_code == 400
        limited = await browser.post("/app/sign-in", data=body)
        assert limited.status_code == 429 and "Too many attempts" in limited.text
        assert int(limited.headers["retry-after"]) > 0


async def test_idle_sessions_end_and_signing_out_everywhere_ends_all(app, db, settings, ws):
    laptop = await signed_in(app, db, settings, ws, "ada@shop.example")
    phone = _browser(app)
    token = csrf_of((await phone.get("/app/sign-in")).text)
    await phone.post(
        "/app/sign-in", data={"csrf": token, "email": "ada@shop.example", "password": PASSWORD}
    )
    assert (await phone.get("/app")).status_code == 200
    home = await laptop.get("/app")
    await laptop.post("/app/sign-out-everywhere", data={"csrf": csrf_of(home.text)})
    assert (await phone.get("/app")).status_code == 303
    assert (await laptop.get("/app")).status_code == 303

    idle = await signed_in(app, db, settings, ws, "bob@shop.example")
    async with db.transaction() as session:
        await session.execute(
            update(DashboardSession).values(last_seen_at=utcnow() - timedelta(hours=13))
        )
    assert (await idle.get("/app")).status_code == 303
    for client in (laptop, phone, idle):
        await client.aclose()


async def test_a_person_sees_only_their_own_accounts_workspaces(app, db, settings, ws, factory):
    other = await factory.workspace(name="Other shop")
    ours = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(ours):
        page = await ours.get("/app")
        moved = await ours.post(
            "/app/workspace", data={"csrf": csrf_of(page.text), "workspace_id": other.workspace_id}
        )
        assert moved.status_code == 404
        keys = await ours.get("/settings/api-keys")
        assert other.api_key.split("_")[2] not in keys.text
        assert ws.api_key.split("_")[2] in keys.text


async def test_the_cli_prints_a_link_for_the_first_admin(app, client, cli_env, ws):
    made = ("admin", "create-user", "--account", ws.account_id, "--email", "first@shop.example")
    result = run_cli(*made, "--workspace", ws.workspace_id, "--json", env=cli_env)
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert set(printed) == {"person_id", "email", "sign_in_link"}
    path = "/app/link/" + printed["sign_in_link"].split("/app/link/")[1]
    done = await client.post(path, data={"password": PASSWORD})
    assert done.status_code == 303
    assert "Signed in as" in (await client.get("/app")).text
    again = run_cli(*made, env=cli_env)
    assert again.returncode != 0 and "A person with this email already exists" in again.stderr
    plain = run_cli("admin", "create-user", "--help", env=cli_env)
    assert "one-time sign-in link" in " ".join(plain.stdout.split())


def _browser(app):
    import httpx

    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
