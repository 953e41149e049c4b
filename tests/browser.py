"""A real browser for the tests that look at pages as a person does: Playwright for Python
driving Debian's `chromium` (installed by `tests.debian` when missing; the test is skipped with
the reason printed only when it cannot be), against the test's app served by uvicorn on a free
port of 127.0.0.1.

`look(page, group, name)` takes full-page screenshots at desktop and phone widths into
`build/screenshots/<group>/` (for a person to look at) and fails when the page scrolls
sideways on a phone. `console_errors(page)` collects what the browser reports as errors,
Content-Security-Policy violations included.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from tests.debian import ensure

CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = Path(__file__).parent.parent / "build" / "screenshots"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


@pytest.fixture
async def live_server(app: Any, settings: Any) -> AsyncIterator[str]:
    """The app on a real port; links in mail sent during the test point at it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, lifespan="off", log_level="warning", access_log=False
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    base = f"http://127.0.0.1:{port}"
    settings.public_url = base
    try:
        yield base
    finally:
        server.should_exit = True
        await task


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    reason = ensure("chromium", CHROMIUM)
    if reason:
        print(f"\nskipping a browser test: {reason}", file=sys.stderr)
        pytest.skip(reason)
    from playwright.async_api import async_playwright, expect

    # Retrying assertions wait up to 15 s, not Playwright's 5: on a 2-core machine running the
    # suite in two workers beside the browser, a frame's second load can take longer than 5 s.
    expect.set_options(timeout=15_000)
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def page(browser: Any) -> AsyncIterator[Any]:
    context = await browser.new_context(viewport=DESKTOP, locale="en-GB")
    opened = await context.new_page()
    opened.errors = console_errors(opened)
    try:
        yield opened
    finally:
        await context.close()


# What is reported as an error but is not one: a response's status is the test's to assert (a
# 404 page is meant to be one), and htmx logs a request it aborted on purpose (`hx-sync`
# replace: a newer change supersedes it) as `htmx:sendAbort` with its `htmx:afterRequest`;
# a request that really failed still logs `htmx:sendError`, `htmx:responseError` and so on.
NOT_ERRORS = ("Failed to load resource", "htmx:sendAbort", "htmx:afterRequest")


def console_errors(page: Any) -> list[str]:
    """Script errors, policy violations and htmx's failed requests."""
    errors: list[str] = []

    def on_console(message: Any) -> None:
        if message.type == "error" and not message.text.startswith(NOT_ERRORS):
            errors.append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


async def look(page: Any, group: str, name: str) -> None:
    folder = SCREENSHOTS / group
    folder.mkdir(parents=True, exist_ok=True)
    for label, size in (("desktop", DESKTOP), ("phone", PHONE)):
        await page.set_viewport_size(size)
        await page.screenshot(path=str(folder / f"{name}-{label}.png"), full_page=True)
        sideways = await page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert sideways <= 0, f"{name} scrolls sideways by {sideways}px at {label} width"
    await page.set_viewport_size(DESKTOP)
