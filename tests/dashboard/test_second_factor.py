"""Two-step sign-in: set up with a code from an authenticator app (the secret is stored only
once a code proves it), recovery codes shown once and used once, a code never accepted
twice, no page for a session that has not passed the second step, a sign-in or reset link
that is only the first step, and turning it off."""

from __future__ import annotations

import json
import re
import time
from contextlib import aclosing

import httpx

from mailroom.people import totp
from tests.conftest import run_cli
from tests.dashboard.helpers import PASSWORD, csrf_of, signed_in, use_link


async def _password_step(app, next_path: str = "/app") -> httpx.AsyncClient:
    browser = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    )
    token = csrf_of((await browser.get("/app/sign-in")).text)
    answer = await browser.post(
        f"/app/sign-in?next={next_path}",
        data={"csrf": token, "email": "ada@shop.example", "password": PASSWORD},
    )
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/app/sign-in/code?next={next_path}"
    return browser


async def test_two_step_sign_in_from_set_up_to_turning_it_off(app, db, settings, ws):
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        page = await admin.get("/app/security")
        assert "Two-step sign-in is off" in page.text
        offered = await admin.post("/app/security/totp", data={"csrf": csrf_of(page.text)})
        secret = re.search(
            r'id="totp-secret" rows="1" readonly aria-label="Set-up key">([A-Z2-7]+)</textarea>',
            offered.text,
        ).group(1)
        setup = re.search(r'name="setup" value="([^"]+)"', offered.text).group(1)
        assert f"otpauth://totp/Mailroom%3Aada%40shop.example?secret={secret}" in offered.text
        body = {"csrf": csrf_of(page.text), "setup": setup}
        wrong = await admin.post("/app/security/totp/confirm", data={**body, "code": "000000"})
        assert wrong.status_code == 400 and "That code is not right." in wrong.text
        set_up_code = totp.code_at(secret)
        on = await admin.post("/app/security/totp/confirm", data={**body, "code": set_up_code})
        codes = (
            re.search(r'<pre class="secret" id="recovery-codes">([^<]+)</pre>', on.text)
            .group(1)
            .split()
        )
        assert len(codes) == 10 and "Two-step sign-in is on" in on.text
        assert "10 recovery codes left." in (await admin.get("/app/security")).text

    browser = await _password_step(app, "/settings/api-keys")
    async with aclosing(browser):
        assert (await browser.get("/app")).status_code == 303  # not signed in yet
        form = await browser.get("/app/sign-in/code?next=%2Fsettings%2Fapi-keys")
        token = csrf_of(form.text)
        url = "/app/sign-in/code?next=%2Fsettings%2Fapi-keys"
        reused = await browser.post(url, data={"csrf": token, "code": set_up_code})
        assert reused.status_code == 400  # the set-up code was used: once only
        later = totp.code_at(secret, time.time() + totp.STEP)
        passed = await browser.post(url, data={"csrf": token, "code": later})
        assert (passed.status_code, passed.headers["location"]) == (303, "/settings/api-keys")
        assert (await browser.get("/settings/api-keys")).status_code == 200

    for attempt in range(2):
        browser = await _password_step(app)
        async with aclosing(browser):
            token = csrf_of((await browser.get("/app/sign-in/code?next=%2Fapp")).text)
            used = await browser.post(
                "/app/sign-in/code?next=%2Fapp", data={"csrf": token, "code": codes[0].upper()}
            )
            assert used.status_code == (303 if attempt == 0 else 400)

    browser = await _password_step(app)
    async with aclosing(browser):
        token = csrf_of((await browser.get("/app/sign-in/code?next=%2Fapp")).text)
        await browser.post("/app/sign-in/code?next=%2Fapp", data={"csrf": token, "code": codes[1]})
        page = await browser.get("/app/security")
        assert "8 recovery codes left." in page.text
        off = await browser.post(
            "/app/security/totp/disable", data={"csrf": csrf_of(page.text), "code": codes[2]}
        )
        assert off.status_code == 303
        assert "Two-step sign-in is off." in (await browser.get("/app/security")).text

    # Off again: the password alone signs in.
    plain = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
    async with aclosing(plain):
        token = csrf_of((await plain.get("/app/sign-in")).text)
        done = await plain.post(
            "/app/sign-in", data={"csrf": token, "email": "ada@shop.example", "password": PASSWORD}
        )
        assert done.headers["location"] == "/app"


async def _turn_on(browser: httpx.AsyncClient) -> str:
    """Two-step sign-in turned on from the security page; the app's secret."""
    page = await browser.get("/app/security")
    offered = await browser.post("/app/security/totp", data={"csrf": csrf_of(page.text)})
    secret = re.search(r'aria-label="Set-up key">([A-Z2-7]+)</textarea>', offered.text).group(1)
    setup = re.search(r'name="setup" value="([^"]+)"', offered.text).group(1)
    on = await browser.post(
        "/app/security/totp/confirm",
        data={"csrf": csrf_of(page.text), "setup": setup, "code": totp.code_at(secret)},
    )
    assert "Two-step sign-in is on" in on.text
    return secret


async def test_a_link_is_only_the_first_step(app, db, settings, ws, cli_env):
    """Choosing a password from a link (a reset, the operator's link) leaves a session that
    still needs the code: whoever reads the person's mail is not in without their app."""
    admin = await signed_in(app, db, settings, ws, "ada@shop.example")
    async with aclosing(admin):
        secret = await _turn_on(admin)
    made = run_cli("admin", "sign-in-link", "--email", "ada@shop.example", "--json", env=cli_env)
    link = "/app/link/" + json.loads(made.stdout)["sign_in_link"].split("/app/link/")[1]
    browser = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    )
    async with aclosing(browser):
        chosen = await use_link(browser, link, "a brand new password")
        assert (chosen.status_code, chosen.headers["location"]) == (
            303,
            "/app/sign-in/code?next=/app",
        )
        for path in ("/app", "/settings/api-keys", "/app/security"):
            assert (await browser.get(path)).status_code == 303  # no page before the code
        form = await browser.get("/app/sign-in/code?next=%2Fapp")
        assert form.status_code == 200 and "Two-step sign-in" in form.text
        later = totp.code_at(secret, time.time() + totp.STEP)
        passed = await browser.post(
            "/app/sign-in/code?next=%2Fapp", data={"csrf": csrf_of(form.text), "code": later}
        )
        assert (passed.status_code, passed.headers["location"]) == (303, "/app")
        home = await browser.get("/app")
        assert home.status_code == 200 and "Your password is saved." in home.text
