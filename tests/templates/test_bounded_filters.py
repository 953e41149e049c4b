"""Every filter runs inside the render's budget: `urlize` on a long input ran 13.8 s against
the one-second budget (one call, its quadratic search never checked the clock), and the
filters that work item by item take a bounded input. Through the preview API, as an author
meets it: 422 with the reason, and the service carries on."""

from __future__ import annotations

import itertools
import time

from jinja2.utils import urlize as jinja_urlize

BASE = "/api/v1/templates"
_NUMBERS = itertools.count()
TIME = (
    "Template render failed in html_content: rendering took longer than 1 second(s) (time budget)"
)


async def _template(client, ws, **parts):
    name = f"Filters {next(_NUMBERS)}"
    created = await client.post(BASE, json={"name": name, **parts}, headers=ws.headers)
    assert created.status_code == 201, created.text
    return created.json()["template"]["id"]


async def _preview(client, ws, template_id):
    started = time.monotonic()
    answer = await client.post(f"{BASE}/{template_id}/preview", headers=ws.headers)
    return answer, time.monotonic() - started


async def test_urlize_over_a_long_text_stops_at_the_time_budget(client, ws):
    template_id = await _template(client, ws, html_content="{{ ('a ' * 2400000) | urlize }}")
    answer, took = await _preview(client, ws, template_id)
    assert answer.status_code == 422, answer.text
    assert answer.json() == {"error": TIME}
    # Stopped at its budget, not after the whole text (13.8 s before, per part).
    assert took < 6, took
    fine = await _template(client, ws, text_content="{{ 'see www.example.com.' | urlize }}")
    shown, _ = await _preview(client, ws, fine)
    assert shown.status_code == 200
    assert (
        shown.json()["text"]
        == 'see <a href="https://www.example.com" rel="noopener">www.example.com</a>.'
    )


async def test_urlize_is_linear_in_a_word_of_dots(client, ws):
    """Jinja's trailing-punctuation search is quadratic here (20,000 dots took 22 s)."""
    template_id = await _template(
        client, ws, text_content="{{ ('.' * 99000 ~ 'x.') | urlize | length }}"
    )
    answer, took = await _preview(client, ws, template_id)
    assert answer.status_code == 200, answer.text
    assert answer.json()["text"] == "99002"
    assert took < 6, took


async def test_urlize_links_as_jinja_did(client, ws):
    text = (
        "(see https://shop.example/a?b=1), mail ann@shop.example or www.shop.example/x.) "
        "<http://x.org> (www.a.org/(b)). mailto:c@d.org 10.0.0.1 https://[::1]:80/"
    )
    template_id = await _template(
        client, ws, html_content="<p>{{ sample | urlize }}</p>".replace("sample", repr(text))
    )
    answer, _ = await _preview(client, ws, template_id)
    assert answer.status_code == 200, answer.text
    assert answer.json()["html"].endswith(f"<p>{jinja_urlize(text, rel='noopener')}</p>")


async def test_filters_that_work_item_by_item_take_a_bounded_input(client, ws):
    cases = {
        "{{ ('a ' * 60000) | wordwrap(1) }}": "wordwrap is limited to 100,000 characters",
        "{{ ('ab' * 60000) | list | sort | length }}": "sort is limited to 100,000 items",
        "{{ ('<b>' * 40000) | striptags }}": "striptags is limited to 100,000 characters",
        "{{ ('ab' * 60000) | list | unique | list | length }}": "unique is limited to 100,000 items",
        "{{ ('x' * 100001) | list | join }}": "join is limited to 100,000 items",
    }
    for source, reason in cases.items():
        template_id = await _template(client, ws, text_content=source)
        answer, _ = await _preview(client, ws, template_id)
        assert answer.status_code == 422, (source, answer.text)
        assert answer.json() == {"error": f"Template render failed in text_content: {reason}"}
    # Up to the bound they work as ever.
    template_id = await _template(
        client, ws, text_content="{{ ('ba' * 5000) | list | sort | join | truncate(6, True, '') }}"
    )
    answer, _ = await _preview(client, ws, template_id)
    assert answer.status_code == 200, answer.text
    assert answer.json()["text"] == "aaaaaa"
