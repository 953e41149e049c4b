"""Two-step sign-in: set up with a code from an authenticator app (the secret is stored only
once a code proves it), recovery codes shown once and used once, a code never accepted
twice, no page for a session that has not passed the second step, and turning it off."""

from __future__ import annotations

import re
import time
from contextlib import aclosing

import httpx

from mailroom.people import totp
from tests.dashboard.helpers import PASSWORD, csrf_of, signed_in


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
        on = await admin.post(
            "/app/security/totp/confirm", data={**body, "code": totp.code_at(secret)}
        )
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
        reused = await browser.post(url, data={"csrf": token, "code": totp.code_at(secret)})
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
