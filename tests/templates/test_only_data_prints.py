"""Only data prints: `{{ ''.join }}` printed `<built-in method join of str object at 0x...>`,
a heap address in an email. A function, method, class, iterator or undefined value is empty
text, however it reaches the output; data prints as it did."""

from __future__ import annotations

import pytest

BASE = "/api/v1/templates"

NOTHING = [
    "{{ ''.join }}",
    "{{ 'abc'.upper }}",
    "{{ range }}",
    "{{ cycler }}",
    "{{ namespace }}",
    "{{ cycler('a', 'b') }}",
    "{{ joiner(',') }}",
    "{{ [1, 2] | reverse }}",
    "{{ ['a'] | map('upper') }}",
    "{{ range(3) }}",
    "{% macro m() %}x{% endmacro %}{{ m }}",
    "{% for i in [1] %}{{ loop }}{{ loop.cycle }}{% endfor %}",
    "{{ self }}",
    "{{ nothing.here }}",
    "{{ ''.join | upper }}",
    "{{ ''.join | e }}",
    "{{ ''.join | string }}",
    "{{ [''.join] }}",
    "{{ {'k': range} }}",
    "{{ [''.join] | join(',') }}",
    "{{ [{'a': ''.join}] | join(',', attribute='a') }}",
    "{{ '%s' % ''.join }}",
    "{{ '%s' | format(''.join) }}",
    "{{ '{}'.format(''.join) }}",
    "{{ '' ~ ''.join }}",
    "{{ '' ~ {'k': ''.join}['k'] }}",
]


async def _preview_text(client, ws, source):
    created = await client.post(
        BASE, json={"name": "Printing", "text_content": f"[{source}]"}, headers=ws.headers
    )
    assert created.status_code == 201, created.text
    template_id = created.json()["template"]["id"]
    answer = await client.post(f"{BASE}/{template_id}/preview", headers=ws.headers)
    assert answer.status_code == 200, answer.text
    return answer.json()["text"]


@pytest.mark.parametrize("source", NOTHING)
async def test_what_is_not_data_prints_nothing(client, ws, source):
    assert await _preview_text(client, ws, source) == "[]"


async def test_in_html_too(client, ws):
    created = await client.post(
        BASE,
        json={"name": "Html", "html_content": "<p>[{{ ''.join }}{{ 'a' ~ range }}]</p>"},
        headers=ws.headers,
    )
    template_id = created.json()["template"]["id"]
    answer = await client.post(f"{BASE}/{template_id}/preview", headers=ws.headers)
    assert answer.status_code == 200, answer.text
    assert "0x" not in answer.json()["html"] and "<p>[a]</p>" in answer.json()["html"]
    assert answer.json()["text"].strip() == "[a]"


async def test_data_prints_as_before(client, ws):
    source = (
        "{{ [1, 'a'] }} {{ {'k': 1.5} }} {{ 2 }} {{ true }} {{ none }}|{{ 'x' ~ 3 }} "
        "{{ '%s-%s' % ('a', 1) }} {{ '{}!'.format('b') }} {{ [1, 2] | reverse | list }} "
        "{{ ['a'] | map('upper') | join }} {% set ns = namespace(n=1) %}{{ ns.n }} "
        "{{ cycler('c', 'd').next() }}"
    )
    assert await _preview_text(client, ws, source) == (
        "[[1, 'a'] {'k': 1.5} 2 True |x3 a-1 b! [2, 1] A 1 c]"
    )
