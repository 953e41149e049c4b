"""The render module the sending engine uses (unit tests of its hard rules): the budgets, what
a missing value is, `default`, the merge context, CSS inlining around merge tags, the derived
text part, the preheader, and the compiled-form cache."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from mailroom.templates.budget import Limits
from mailroom.templates.render import (
    RenderError,
    compile_cached,
    compile_template,
    derive_text_source,
    merge_context,
    syntax_error,
)


@dataclass
class Person:
    email: str = "ada@example.com"
    first_name: str | None = "Ada"
    last_name: str | None = None
    custom_fields: dict[str, Any] | None = field(default_factory=dict)


def render(html="", *, subject="", preheader="", text="", contact=None, **context: Any):
    compiled = compile_template(subject, preheader, html, text)
    return compiled.render(merge_context(contact or Person(), **context))


def text_of(source: str, **context: Any) -> str:
    return render(text=source, **context).text


# ---------------------------------------------------------------- missing values and default


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("[{{ nope }}]", "[]"),
        ("[{{ nope.deeper['x'].call() }}]", "[]"),
        ("[{{ nope + 1 }}][{{ 2 * nope }}][{{ -nope }}]", "[][][]"),
        ("[{% if nope > 1 or nope < 1 %}x{% endif %}]", "[]"),
        ("[{% for x in nope %}x{% endfor %}]", "[]"),
        ("[{{ nope | int }}][{{ nope | length }}]", "[0][0]"),
        ("[{{ last_name }}]", "[]"),
        ('[{{ last_name | default("Smith") }}]', "[Smith]"),
        ('[{{ first_name | default("there") }}]', "[Ada]"),
        ('[{{ custom_fields.gone | default("n/a") }}]', "[n/a]"),
        ('[{{ "" | default("x", false) }}]', "[]"),
        ('[{{ none | default("x", false) }}]', "[x]"),
        ("[{{ vars.none_value }}]", "[]"),
    ],
)
def test_missing_values_render_as_nothing(source, expected):
    assert text_of(source, variables={"none_value": None}) == expected


def test_merge_context_from_a_contact_row_and_variables():
    contact = Person(first_name=None, last_name="Doe", custom_fields={"items": "three", "keys": 2})
    context = merge_context(
        contact,
        workspace_name="Acme",
        unsubscribe_url="https://u.example/1",
        preferences_url="https://p.example/1",
        webview_url="https://w.example/1",
        variables={"order": {"items": [{"name": "Pen", "price": 2}], "total": 2}},
    )
    compiled = compile_template(
        "",
        "",
        "",
        "{{ first_name }}|{{ last_name }}|{{ email }}|{{ workspace.name }}|"
        "{{ custom_fields.items }}|{{ custom_fields['keys'] }}|{{ unsubscribe_url }}|"
        "{{ preferences_url }}|{{ webview_url }}|"
        "{% for item in vars.order.items %}{{ item.name }}={{ item.price }}{% endfor %}|"
        "{{ vars.order.total }}|{{ vars.missing.deep }}",
    )
    assert compiled.render(context).text == (
        "|Doe|ada@example.com|Acme|three|2|https://u.example/1|https://p.example/1|"
        "https://w.example/1|Pen=2|2|"
    )
    assert merge_context(None)["email"] == ""


def test_subject_is_one_line():
    person = Person(first_name="Ada\r\nBcc: x@example.com")
    assert render(subject="Hi {{ first_name }}\n!", contact=person).subject == (
        "Hi Ada Bcc: x@example.com !"
    )


# ---------------------------------------------------------------- budgets


def test_time_budget_fails_the_render_with_its_reason():
    loops = "{% for a in range(100000) %}{% for b in range(8) %}{% endfor %}{% endfor %}"
    compiled = compile_template("", "", loops, "text")
    with pytest.raises(RenderError) as caught:
        compiled.render(merge_context(Person()), Limits(seconds=0.01))
    assert caught.value.field == "html_content"
    assert caught.value.reason == "rendering took longer than 0.01 second(s) (time budget)"
    assert str(caught.value) == (
        "Template render failed in html_content: "
        "rendering took longer than 0.01 second(s) (time budget)"
    )
    # With time to spare (900,000 turns are within the loop budget) the same template renders.
    assert compiled.render(merge_context(Person()), Limits(seconds=60)).html == ""


def test_each_render_has_its_own_budget():
    loops = "{% for i in range(60000) %}{% for j in range(10) %}{% endfor %}{% endfor %}x"
    compiled = compile_template("", "", loops, "text")
    for _ in range(3):  # 1,980,000 turns in all, 660,000 each: never over
        assert compiled.render(merge_context(Person()), Limits(seconds=60)).html == "x"


def test_recursive_loops_are_counted_and_depth_limited():
    nested: dict[str, Any] = {"children": []}
    for _ in range(80):
        nested = {"children": [nested]}
    compiled = compile_template(
        "",
        "",
        "",
        "{% for node in vars.tree.children recursive %}.{{ loop(node.children) }}{% endfor %}",
    )
    with pytest.raises(RenderError) as caught:
        compiled.render(merge_context(Person(), variables={"tree": nested}))
    assert caught.value.reason == "macro calls or recursive loops nest more than 50 deep"
    shallow = {"children": [{"children": [{"children": []}]}]}
    assert compiled.render(merge_context(Person(), variables={"tree": shallow})).text == ".."


def test_filters_that_amplify_are_checked_before_they_run():
    for source in (
        "{{ ('\n' * 1000) | indent(100000) }}",
        "{{ 'abc' | replace('', 'x' * 1000000) }}",
        "{{ range(100000) | join('x' * 100) }}",
        "{{ ('x' * 100000) | wordwrap(1, wrapstring='y' * 100) }}",
        "{{ [1, 2] | batch(10**8, 0) | list }}",
    ):
        with pytest.raises(RenderError, match="longer than 5,000,000 characters"):
            render(source)
    with pytest.raises(RenderError, match="loops ran more than 1,000,000 times"):
        render("{{ [1] | slice(10**9) | list }}")
    with pytest.raises(RenderError, match="sum adds numbers only"):
        render("{{ [[1], [2]] | sum(start=[]) }}")


def test_ordinary_filters_and_methods_still_work():
    assert (
        text_of(
            "{{ 'a,b' | replace(',', ';') }} {{ ['x', 'y'] | join('-') }} {{ 'hi' | center(6) }}|"
            "{{ '%05.1f' | format(3.14159) }} {{ '{:,}'.format(1234567890) }} {{ 'ab'.upper() }} "
            "{{ [3, 1, 2] | sort | join }} {{ range(3) | sum }} {{ 'x' * 3 }} {{ 2 ** 10 }}"
        )
        == "a;b x-y   hi  |003.1 1,234,567,890 AB 123 3 xxx 1024"
    )


# ---------------------------------------------------------------- syntax on save


def test_syntax_error_for_a_template_nested_too_deeply():
    source = "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}"
    message = syntax_error("html_content", source)
    assert message is not None
    assert message.startswith("Template syntax error in html_content, line 1: ")


# ---------------------------------------------------------------- CSS inlining


def test_inlining_keeps_merge_tags_in_attributes_tables_and_titles():
    html = (
        "<html><head><title>{{ first_name }}'s news</title>"
        "<style>td{padding:4px} a.cta{color:#ff0000}</style></head><body>"
        '<table>{% for n in ["a", "b"] %}<tr><td data-x="{{ n }}">{{ n }}</td></tr>{% endfor %}'
        "</table>"
        '<a class="cta" href="{{ webview_url }}" title=\'{{ last_name | default("x") }}\'>go</a>'
        "<p>{% raw %}{{ kept }}{% endraw %} &#123;&#123; literal }}</p></body></html>"
    )
    compiled = compile_template("", "", html, "")
    assert compiled.css_inlined
    out = compiled.render(merge_context(Person(), webview_url="https://w.example/?a=1&b=2")).html
    assert "<title>Ada's news</title>" in out
    assert '<td data-x="a" style="padding: 4px;">a</td>' in out
    assert '<td data-x="b" style="padding: 4px;">b</td>' in out
    assert 'href="https://w.example/?a=1&amp;b=2"' in out
    assert 'title="x"' in out
    assert 'style="color: #ff0000;"' in out
    assert "{{ kept }}" in out and "{{ literal }}" in out
    assert "<style>" not in out


def test_a_template_that_cannot_be_inlined_safely_is_used_as_written():
    html = "<style>{% if vars.dark %}p{color:#fff}{% endif %}</style><p>{{ first_name }}</p>"
    compiled = compile_template("", "", html, "")
    assert not compiled.css_inlined
    out = compiled.render(merge_context(Person(), variables={"dark": True})).html
    assert out.endswith("<style>p{color:#fff}</style><p>Ada</p>")


def test_inlining_happens_once_per_compiled_form():
    compiled = compile_template("", "", "<style>p{color:red}</style><p>{{ email }}</p>", "")
    for email in ("a@example.com", "b@example.com"):
        out = compiled.render(merge_context(Person(email=email))).html
        assert f'<p style="color: red;">{email}</p>' in out


# ---------------------------------------------------------------- the text part


def test_derived_text_template_keeps_tags_and_drops_hidden_parts():
    html = (
        "<html><head><title>T</title></head><body>"
        '<div style="display:none">my own preheader</div>'
        "<h1>Hello {{ first_name }}</h1>"
        "<table>{% for p in vars.products %}<tr><td>{{ p.name }}</td><td>{{ p.price }}</td></tr>"
        '{% endfor %}</table><p><img src="x.png" alt="Logo"> <a href="mailto:hi@example.com">'
        'Write to us</a> <a href="#top">Top</a> <a href="https://example.com">'
        "https://example.com</a></p></body></html>"
    )
    source = derive_text_source(html)
    assert source is not None
    assert "{{ first_name }}" in source and "{% for p in vars.products %}" in source
    text = render(html, variables={"products": [{"name": "Pen", "price": 2}]}).text
    assert text == (
        "Hello Ada\n\nPen 2\n\nLogo Write to us (hi@example.com) Top https://example.com\n"
    )


def test_text_of_safe_markup_is_derived_from_each_rendered_html():
    html = "<div>{{ vars.body | safe }}</div>"
    assert derive_text_source(html) is None
    compiled = compile_template("", "", html, "")
    assert compiled.text is None
    out = compiled.render(
        merge_context(
            Person(), variables={"body": '<p>Hi <a href="https://x.example">there</a></p>'}
        )
    )
    assert out.text == "Hi there (https://x.example)\n"


def test_a_given_text_part_is_used_as_written():
    assert render("<p>html</p>", text="plain {{ first_name }}").text == "plain Ada"


# ---------------------------------------------------------------- preheader


@pytest.mark.parametrize(
    ("html", "before"),
    [
        ("<html><head></head><body><p>x</p></body></html>", "<body>"),
        ("<html><head></head><p>x</p></html>", "</head>"),
        ("<p>x</p>", ""),
    ],
)
def test_preheader_goes_first_in_the_body(html, before):
    out = render(html, preheader="Peek {{ first_name }}").html
    at = out.index('<div style="display:none;')
    assert out[:at].endswith(before) if before else at == 0
    assert "Peek Ada" in out
    assert render(html).html == html  # no preheader: nothing added


def test_preheader_is_hidden_without_invisible_text_tricks():
    # Spam filters score text hidden by a tiny font, a transparent colour or zero opacity
    # (SpamAssassin's FONT_INVIS_MSGID, HTML_FONT_LOW_CONTRAST): display and size only.
    out = render("<body><p>x</p></body>", preheader="Peek {{ first_name }}").html
    block = re.search(r'<div style="([^"]*)">Peek Ada(?:&#847;&zwnj;&nbsp;){40}</div>', out)
    assert block is not None, out
    assert block.group(1) == "display:none;max-height:0;overflow:hidden;mso-hide:all"
    for trick in ("font-size", "color", "opacity", "line-height"):
        assert trick not in out


# ---------------------------------------------------------------- cache


def test_compiled_forms_are_cached_by_key():
    first = compile_cached(("t1", 1), "s", "", "<p>a</p>", "")
    assert compile_cached(("t1", 1), "s", "", "<p>a</p>", "") is first
    assert compile_cached(("t1", 2), "s", "", "<p>b</p>", "") is not first
