"""People and sign-in: a one-time link to choose a password (its form with a CSRF token like
every other; using it ends the person's other sessions), session cookies, sign-in limits per
address and client (a stranger never locks the owner out) with messages that never tell
whether an address has an account, idle and everywhere sign-out, and a person seeing only
the workspaces they were given."""

from __future__ import annotations

import json
from contextlib import aclosing
from datetime import timedelta

import httpx
from sqlalchemy import update

from mailroom.core.clock import utcnow
from mailroom.dashboard import pages
from mailroom.models import DashboardSession
from tests.conftest import run_cli
from tests.dashboard.helpers import PASSWORD, csrf_of, make_person, signed_in, use_link


async def test_the_link_sets_a_password_once_and_signs_in(app, client, db, settings, ws):
    link = await make_person(db, settings, ws, "ada@shop.example")
    page = await client.get(link)
    assert page.status_code == 200 and "ada@shop.example" in page.text
    assert page.headers["cache-control"] == "no-store"
    assert "script-src 'self'" in page.headers["content-security-policy"]
    token = csrf_of(page.text)
    for weak, message in (
        ("short", "Use at least 10 characters."),
        ("qwertyuiop", "This password is too common. Choose another."),
        ("ada-shop-2026", "Do not use your email address in your password."),
    ):
        refused = await client.post(link, data={"csrf": token, "password": weak})
        assert refused.status_code == 400 and message in refused.text
        assert csrf_of(refused.text) == token  # the form shown again keeps its token
    done = await client.post(link, data={"csrf": token, "password": PASSWORD})
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


async def test_a_stranger_guessing_an_address_cannot_lock_its_owner_out(app, db, settings, ws):
    """Attempts are counted per address and client: the stranger's client is refused after
    10 wrong passwords, the owner's own client still signs in."""
    first = await signed_in(app, db, settings, ws, "ada@shop.example")
    await first.aclose()
    async with _browser(app, "203.0.113.9") as stranger, _browser(app, "198.51.100.7") as owner:
        token = csrf_of((await stranger.get("/app/sign-in")).text)
        body = {"csrf": token, "email": "ada@shop.example", "password": "wrong password"}
        for _ in range(10):
            assert (await stranger.post("/app/sign-in", data=body)).status_code == 400
        limited = await stranger.post("/app/sign-in", data={**body, "email": "ADA@shop.example"})
        assert limited.status_code == 429 and "Too many attempts" in limited.text
        assert int(limited.headers["retry-after"]) > 0
        right = {**body, "password": PASSWORD}
        assert (await stranger.post("/app/sign-in", data=right)).status_code == 429

        token = csrf_of((await owner.get("/app/sign-in")).text)
        done = await owner.post("/app/sign-in", data={**right, "csrf": token})
        assert (done.status_code, done.headers["location"]) == (303, "/app")
        assert (await owner.get("/app")).status_code == 200


async def test_one_client_is_limited_across_addresses(app, db, settings, ws, monkeypatch):
    monkeypatch.setattr(pages, "SIGN_IN_PER_CLIENT", 3)
    async with _browser(app, "203.0.113.9") as busy, _browser(app, "198.51.100.7") as other:
        token = csrf_of((await busy.get("/app/sign-in")).text)
        for n in range(3):
            body = {"csrf": token, "email": f"n{n}@shop.example", "password": "wrong password"}
            assert (await busy.post("/app/sign-in", data=body)).status_code == 400
        body = {"csrf": token, "email": "n9@shop.example", "password": "wrong password"}
        assert (await busy.post("/app/sign-in", data=body)).status_code == 429
        token = csrf_of((await other.get("/app/sign-in")).text)
        assert (await other.post("/app/sign-in", data={**body, "csrf": token})).status_code == 400


async def test_the_link_form_needs_its_token(app, client, db, settings, ws):
    """No login CSRF: another site cannot post a link's form to sign a visitor in as the
    link's person (its own link, its own password)."""
    link = await make_person(db, settings, ws, "ada@shop.example")
    forged = await client.post(link, data={"password": PASSWORD})
    assert forged.status_code == 403 and "This form has expired" in forged.text
    page = await client.get(link)
    assert 'name="csrf"' in page.text
    wrong = await client.post(link, data={"csrf": "forged", "password": PASSWORD})
    assert wrong.status_code == 403
    assert (await client.get("/app")).status_code == 303  # not signed in
    async with _browser(app) as other:  # the token of one browser is not another's
        assert (
            await other.post(link, data={"csrf": csrf_of(page.text), "password": PASSWORD})
        ).status_code == 403
    done = await client.post(link, data={"csrf": csrf_of(page.text), "password": PASSWORD})
    assert done.status_code == 303  # the link still works: refused forms changed nothing
    assert "mailroom_csrf=" in done.headers["set-cookie"]  # the form's token is spent


async def test_a_password_from_a_link_ends_every_other_session(app, db, settings, ws, cli_env):
    laptop = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(laptop), _browser(app) as phone:
        token = csrf_of((await phone.get("/app/sign-in")).text)
        await phone.post(
            "/app/sign-in", data={"csrf": token, "email": "ada@shop.example", "password": PASSWORD}
        )
        assert (await phone.get("/app")).status_code == 200
        made = run_cli(
            "admin", "sign-in-link", "--email", "ada@shop.example", "--json", env=cli_env
        )
        link = "/app/link/" + json.loads(made.stdout)["sign_in_link"].split("/app/link/")[1]
        async with _browser(app) as new:
            assert (await use_link(new, link, "a brand new password")).status_code == 303
            assert (await new.get("/app")).status_code == 200
        assert (await laptop.get("/app")).status_code == 303
        assert (await phone.get("/app")).status_code == 303


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
    done = await use_link(client, path)
    assert done.status_code == 303
    assert "Signed in as" in (await client.get("/app")).text
    again = run_cli(*made, env=cli_env)
    assert again.returncode != 0 and "A person with this email already exists" in again.stderr
    plain = run_cli("admin", "create-user", "--help", env=cli_env)
    assert "one-time sign-in link" in " ".join(plain.stdout.split())


def _browser(app, client_host: str = "127.0.0.1"):
    """A browser-like client; `client_host` is the address the server sees it come from."""
    transport = httpx.ASGITransport(app=app, client=(client_host, 50000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")
