"""Template rendering per recipient, as the sending engine does it: a 20 KB HTML template with a
`<style>` block and 6 merge tags compiled once (CSS inlined, text part derived), then rendered
for many contacts on one core. Prints renders/s and p50/p99 per render; aim 10,000 renders/s.
The database is not involved (`--backend` only labels the line)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from bench.common import BenchContext, Timer, peak_rss_mb, percentiles, report
from mailroom.templates.render import compile_template, merge_context

RENDERS = 20_000
TARGET_BYTES = 20_000

STYLE = """<style>
body { margin: 0; padding: 0; background: #f4f4f7; font-family: Helvetica, Arial, sans-serif; }
.wrapper { width: 100%; background: #f4f4f7; }
.content { max-width: 600px; margin: 0 auto; background: #ffffff; }
h1 { font-size: 22px; color: #111827; } p { font-size: 16px; line-height: 24px; color: #374151; }
.button { background: #2563eb; color: #ffffff; padding: 12px 20px; border-radius: 4px; }
.footer p { font-size: 12px; color: #6b7280; }
@media (max-width: 600px) { .content { width: 100% !important; } }
</style>"""

PARAGRAPH = (
    "<tr><td class='cell'><h1>What is new this month</h1><p>Lorem ipsum dolor sit amet, "
    "consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna "
    "aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip "
    "ex ea commodo consequat.</p><p><a class='button' href='https://example.com/news'>Read "
    "more</a></p></td></tr>\n"
)


def template_html() -> str:
    head = (
        f"<!doctype html><html><head><meta charset='utf-8'>{STYLE}</head><body>"
        "<table class='wrapper'><tr><td><table class='content'>"
        "<tr><td><p>Hi {{ first_name | default('there') }} {{ last_name }},</p>"
        "<p>Your account {{ email }} at {{ custom_fields.company }}.</p></td></tr>\n"
    )
    tail = (
        "<tr><td class='footer'><p>Sent by {{ workspace.name }}. "
        "<a href='{{ unsubscribe_url }}'>Unsubscribe</a></p></td></tr>"
        "</table></td></tr></table></body></html>"
    )
    body = ""
    while len(head) + len(body) + len(tail) < TARGET_BYTES:
        body += PARAGRAPH
    return head + body + tail


@dataclass
class Contact:
    email: str
    first_name: str
    last_name: str
    custom_fields: dict[str, Any] = field(default_factory=dict)


def run_case(name: str, backend: str, html: str, text: str) -> None:
    with Timer() as compiling:
        compiled = compile_template("News for {{ first_name | default('you') }}", "", html, text)
    contacts = [
        Contact(f"person{i}@example.com", "" if i % 5 == 0 else f"Jane{i}", f"Doe{i}")
        for i in range(1000)
    ]
    for contact in contacts:
        contact.custom_fields = {"company": f"Company {contact.last_name}"}
    samples: list[float] = []
    started = time.perf_counter()
    for i in range(RENDERS):
        contact = contacts[i % len(contacts)]
        begin = time.perf_counter()
        context = merge_context(
            contact,
            workspace_name="Bench Co",
            unsubscribe_url=f"https://mail.example.com/u/{i}",
            preferences_url=f"https://mail.example.com/p/{i}",
            webview_url=f"https://mail.example.com/w/{i}",
        )
        rendered = compiled.render(context)
        samples.append((time.perf_counter() - begin) * 1000)
    elapsed = time.perf_counter() - started
    assert contact.email in rendered.html and rendered.text
    figures = percentiles(samples)
    report(
        f"template_render ({name})",
        backend,
        html_bytes=len(html),
        compile_ms=compiling.seconds * 1000,
        css_inlined=compiled.css_inlined,
        renders_per_s=RENDERS / elapsed,
        p50_ms=figures["p50"],
        p99_ms=figures["p99"],
        html_out_bytes=len(rendered.html),
        text_out_bytes=len(rendered.text),
        peak_rss_mb=peak_rss_mb(),
    )


async def run(ctx: BenchContext) -> None:
    html = template_html()
    run_case("text derived from the HTML template", ctx.backend, html, "")
    run_case("text part given", ctx.backend, html, "Hi {{ first_name }}\n{{ unsubscribe_url }}")
