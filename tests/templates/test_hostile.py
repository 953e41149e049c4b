"""Templates written to hurt: each saves (the syntax is valid), and its preview fails alone,
422 with the reason, while the service keeps answering everyone else."""

from __future__ import annotations

import asyncio

import pytest

BASE = "/api/v1/templates"
FAILED = "Template render failed in html_content: "
# A million loop turns take about half a second; on a busy machine the one-second time budget
# may stop the render first. Either way it fails, alone, saying why.
LOOPS = ("loops ran more than 1,000,000 times", "rendering took longer than 1 second(s)")
# Likewise a render that writes megabytes may run out of time before it runs out of room.
TOO_LONG = (
    "the output is longer than 5,000,000 characters",
    "rendering took longer than 1 second(s)",
)

HOSTILE = [
    (
        "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
        LOOPS,
    ),
    (
        "{% for a in 'x' * 100000 %}{% for b in 'x' * 100000 %}{% endfor %}{% endfor %}",
        LOOPS,
    ),
    ("{{ 'a' * 10**9 }}", "a value would be longer than 5,000,000 characters"),
    ("{{ 'a' | center(10**9) }}", "a value would be longer than 5,000,000 characters"),
    ("{{ '{:>999999999}'.format(1) }}", "a value would be longer than 5,000,000 characters"),
    ("{{ '%999999999d' % 1 }}", "a value would be longer than 5,000,000 characters"),
    ("{{ (1).to_bytes(10**9, 'big') }}", "an argument of 1,000,000,000 is more than this"),
    ("{{ 7 ** 100000000 }}", "a number would have more than 65,536 bits"),
    (
        "{% macro boom(n) %}{{ boom(n + 1) }}{% endmacro %}{{ boom(0) }}",
        "macro calls or recursive loops nest more than 50 deep",
    ),
    (
        "{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}",
        TOO_LONG,
    ),
    (
        "{% macro page() %}{% for i in range(100000) %}<p>{{ i }} padding padding padding "
        "padding padding padding padding</p>{% endfor %}{% endmacro %}{{ page() }}",
        TOO_LONG,
    ),
    (
        "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
        "{% endfor %}{{ ns.s | length }}",
        "a value would be longer than 5,000,000 characters",
    ),
    (
        "{% set ns = namespace(s=[1]) %}{% for i in range(64) %}{% set ns.s = [ns.s, ns.s] %}"
        "{% endfor %}{{ ns.s }}",
        "a value would be longer than 5,000,000 characters",
    ),
    (
        "{% for i in range(100000) %}{% set x = 'y' * 1000 %}{% endfor %}",
        "the values built add up to more than 20,000,000 characters",
    ),
    ("{{ 'abc'.translate({97: 'x' * 1000}) }}", "str.translate() is not available in templates"),
    ("{{ 1 / 0 }}", "division by zero"),
    ("{{ ''.__class__.__mro__[1].__subclasses__() }}", ""),  # blank, not a way out
]


async def create(client, headers, html):
    response = await client.post(
        BASE, json={"name": "Hostile", "html_content": html}, headers=headers
    )
    assert response.status_code == 201, response.text
    return response.json()["template"]


@pytest.mark.parametrize(("html", "reason"), HOSTILE)
async def test_hostile_template_saves_and_its_preview_fails_alone(client, ws, html, reason):
    template = await create(client, ws.headers, html)
    response = await client.post(f"{BASE}/{template['id']}/preview", headers=ws.headers)
    if not reason:
        assert response.status_code == 200, response.text
        assert "class" not in response.json()["html"]
        return
    assert response.status_code == 422, response.text
    reasons = reason if isinstance(reason, tuple) else (reason,)
    assert response.json()["error"].startswith(tuple(FAILED + r for r in reasons)), response.json()
    # The service, and this very workspace, carry on.
    fine = await client.post(BASE, json={"name": "Fine", "text_content": "ok"}, headers=ws.headers)
    shown = await client.post(f"{BASE}/{fine.json()['template']['id']}/preview", headers=ws.headers)
    assert shown.status_code == 200
    assert shown.json()["text"] == "ok"


async def test_a_subject_that_fails_names_the_subject(client, ws):
    response = await client.post(
        BASE, json={"name": "S", "subject": "{{ 'x' * 10**9 }}"}, headers=ws.headers
    )
    preview = await client.post(
        f"{BASE}/{response.json()['template']['id']}/preview", headers=ws.headers
    )
    assert preview.status_code == 422
    assert preview.json() == {
        "error": "Template render failed in subject: "
        "a value would be longer than 5,000,000 characters"
    }


async def test_requests_are_answered_while_a_hostile_preview_runs(client, ws):
    template = await create(
        client,
        ws.headers,
        "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
    )
    running = asyncio.create_task(
        client.post(f"{BASE}/{template['id']}/preview", headers=ws.headers)
    )
    answered_meanwhile = 0
    while not running.done():
        health = await client.get("/healthz")
        assert health.status_code == 200
        if not running.done():
            answered_meanwhile += 1
    assert answered_meanwhile >= 1  # the render runs off the event loop
    assert (await running).status_code == 422
