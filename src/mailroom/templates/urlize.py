"""`urlize` in linear time, with the render's clock checked word by word.

Jinja's own (3.1) finds a word's trailing punctuation with `re.search(r"([)>.,\\n]|&gt;)+$")`,
which is quadratic in a run of dots that does not end the word: 20,000 characters took 22 s,
and, being one call, it never gave the render's budget a chance to stop it. This is the same
algorithm with that search, and the parenthesis balancing after it (quadratic in copies), done
by scanning; its output is Jinja's for every input.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from typing import Any

import markupsafe
from jinja2.exceptions import FilterArgumentError
from jinja2.nodes import EvalContext
from jinja2.utils import pass_eval_context

from mailroom.templates.budget import current

# As jinja2.utils (3.1): anchored, no nested ambiguity, linear.
_HTTP = re.compile(
    r"""
    ^
    (
        (https?://|www\.)  # scheme or www
        (([\w%-]+\.)+)?  # subdomain
        (
            [a-z]{2,63}  # basic tld
        |
            xn--[\w%]{2,59}  # idna tld
        )
    |
        ([\w%-]{2,63}\.)+  # basic domain
        (com|net|int|edu|gov|org|info|mil)  # basic tld
    |
        (https?://)  # scheme
        (
            (([\d]{1,3})(\.[\d]{1,3}){3})  # IPv4
        |
            (\[([\da-f]{0,4}:){2}([\da-f]{0,4}:?){1,6}])  # IPv6
        )
    )
    (?::[\d]{1,5})?  # port
    (?:[/?#]\S*)?  # path, query, and fragment
    $
    """,
    re.IGNORECASE | re.VERBOSE,
)
_EMAIL = re.compile(r"^\S+@\w[\w.-]*\.\w+$")
_LEAD = re.compile(r"^([(<]|&lt;)+")
_WORD = re.compile(r"\S+")
_TRAIL_REVERSED = re.compile(r"(?:[)>.,\n]|;tg&)+")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:$")


def _trail_start(middle: str) -> int:
    """Where the word's trailing `)`, `>`, `.`, `,`, newlines and `&gt;` begin: the same place
    as Jinja's leftmost `([)>.,\\n]|&gt;)+$` match (read from the end, the pieces are never
    ambiguous: a `;` ends no one-character piece), found by one anchored match over the
    reversed word instead of a search from every position."""
    found = _TRAIL_REVERSED.match(middle[::-1])
    return len(middle) - found.end() if found else len(middle)


def _balance(middle: str, tail: str) -> tuple[str, str]:
    """Jinja's: for each unbalanced opener in the word, move the tail up to as many of its
    closers (and what precedes them) into the word; positions found once, not copied each."""
    for start_char, end_char in ("(", ")"), ("<", ">"), ("&lt;", "&gt;"):
        start_count = middle.count(start_char)
        if start_count <= middle.count(end_char):
            continue
        moves = min(start_count, tail.count(end_char))
        if moves:
            # The end of the `moves`-th closer: what the last piece after as many splits
            # leaves (one C-level pass; Jinja copies the tail once per closer).
            rest = tail.split(end_char, moves)[-1]
            cut = len(tail) - len(rest)
            middle, tail = middle + tail[:cut], rest
    return middle, tail


def urlize(
    text: str,
    trim_url_limit: int | None = None,
    rel: str | None = None,
    target: str | None = None,
    extra_schemes: Iterable[str] | None = None,
) -> str:
    def trim_url(x: str) -> str:
        if trim_url_limit is not None and len(x) > trim_url_limit:
            return f"{x[:trim_url_limit]}..."
        return x

    budget = current()
    escaped = str(markupsafe.escape(text))
    rel_attr = f' rel="{markupsafe.escape(rel)}"' if rel else ""
    target_attr = f' target="{markupsafe.escape(target)}"' if target else ""
    # Word by word as found (Jinja splits the whole text into a list first: millions of small
    # strings at once); the whitespace between words is copied as it is, as Jinja leaves it.
    out = io.StringIO()
    position = 0
    for found in _WORD.finditer(escaped):
        budget.tick()
        out.write(escaped[position : found.start()])
        position = found.end()
        head, middle, tail = "", found.group(), ""
        match = _LEAD.match(middle)
        if match:
            head = match.group()
            middle = middle[match.end() :]
        cut = _trail_start(middle)
        if cut < len(middle):
            middle, tail = middle[:cut], middle[cut:]
        middle, tail = _balance(middle, tail)
        if _HTTP.match(middle):
            if middle.startswith("https://") or middle.startswith("http://"):
                middle = f'<a href="{middle}"{rel_attr}{target_attr}>{trim_url(middle)}</a>'
            else:
                middle = f'<a href="https://{middle}"{rel_attr}{target_attr}>{trim_url(middle)}</a>'
        elif middle.startswith("mailto:") and _EMAIL.match(middle[7:]):
            middle = f'<a href="{middle}">{middle[7:]}</a>'
        elif (
            "@" in middle
            and not middle.startswith("www.")
            and not middle.startswith("@")
            and ":" not in middle
            and _EMAIL.match(middle)
        ):
            middle = f'<a href="mailto:{middle}">{middle}</a>'
        elif extra_schemes is not None:
            for scheme in extra_schemes:
                if middle != scheme and middle.startswith(scheme):
                    middle = f'<a href="{middle}"{rel_attr}{target_attr}>{middle}</a>'
        out.write(f"{head}{middle}{tail}")
    out.write(escaped[position:])
    return out.getvalue()


@pass_eval_context
def do_urlize(
    eval_ctx: EvalContext,
    value: str,
    trim_url_limit: int | None = None,
    nofollow: bool = False,
    target: str | None = None,
    rel: str | None = None,
    extra_schemes: Iterable[str] | None = None,
) -> Any:
    """The `urlize` filter: Jinja's arguments and policies, this module's `urlize`."""
    policies = eval_ctx.environment.policies
    rel_parts = set((rel or "").split())
    if nofollow:
        rel_parts.add("nofollow")
    rel_parts.update((policies["urlize.rel"] or "").split())
    rel = " ".join(sorted(rel_parts)) or None
    if target is None:
        target = policies["urlize.target"]
    if extra_schemes is None:
        extra_schemes = policies["urlize.extra_schemes"] or ()
    for scheme in extra_schemes:
        if _SCHEME.fullmatch(scheme) is None:
            raise FilterArgumentError(f"{scheme!r} is not a valid URI scheme prefix.")
    rv = urlize(
        value, trim_url_limit=trim_url_limit, rel=rel, target=target, extra_schemes=extra_schemes
    )
    if eval_ctx.autoescape:
        rv = markupsafe.Markup(rv)  # noqa: S704  (escaped above, as Jinja's)
    return rv
