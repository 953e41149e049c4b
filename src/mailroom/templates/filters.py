"""Every filter a template may use, built-in or ours, runs inside the render's budget.

A filter is one Python call: nothing inside it reaches the budget, so the budget is checked
before and after each call, and what a call may cost is bounded before it runs:
- filters whose result can be far larger than their input are checked before they run
  (`center(10**9)`, `replace`, `indent`, `format` widths, `join`);
- filters that work item by item in Python (sorting, grouping, wrapping, title case, ...)
  take at most `Limits.filter_input` characters or items: one call then stays well under the
  time budget, and the check after it stops the render if the clock ran out meanwhile;
- filters that hand back a lazy sequence (`map`, `select`, `batch`, ...) check the clock at
  each item they give, as loops do;
- `urlize` is our own, linear, and checks the clock at each word (Jinja's took 13.8 s on one
  long input);
- a value that is not data (a function, a class, an iterator, an undefined value) is empty
  text to the filters that turn their value into text, so none can print its repr.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

from jinja2.defaults import DEFAULT_FILTERS
from jinja2.filters import make_attrgetter
from jinja2.runtime import Undefined

from mailroom.templates.budget import Budget, BudgetExceeded, check_printf, current, text_size
from mailroom.templates.urlize import do_urlize
from mailroom.templates.values import CONTAINERS, measure, shown

LOOP_FILTER = "loop_budget"


def loop_budget(value: Any) -> Iterator[Any]:
    """What every `for` iterates through (see `templates.sandbox`): each turn counted."""
    budget = current()
    for item in value:
        budget.turn()
        yield item


def _ticking(value: Any) -> Iterator[Any]:
    """A lazy filter's items, the clock checked at each (whoever consumes them)."""
    budget = current()
    for item in value:
        budget.tick()
        yield item


def _default(value: Any, default_value: Any = "", boolean: bool = True) -> Any:
    """`default`: an absent, empty or None value takes the fallback (pass `false` as the
    second argument to keep 0 and empty strings)."""
    if isinstance(value, Undefined) or value is None or (boolean and not value):
        return default_value
    return value


def replace_size(text: str, old: str, new: str, count: Any) -> int:
    found = len(text) + 1 if old == "" else text.count(old)
    if isinstance(count, int) and count >= 0:
        found = min(found, count)
    return len(text) + found * max(len(new) - len(old), 0)


def joined(budget: Budget, items: Iterable[Any], separator: Any) -> list[Any]:
    """The items as they join (what is not data as nothing, containers measured), refused
    before the join when its text would be too long. One pass."""
    out: list[Any] = []
    size = 0
    for item in items:
        if type(item) is not str:
            item = shown(budget, item)
        size += len(item) if type(item) is str else text_size(item)
        out.append(item)
    budget.expect(size + len(out) * text_size(separator))
    return out


def _check_filter(name: str, budget: Budget, a: Any) -> None:
    """Filters whose result can be far larger than their input, checked before they run."""
    if name == "center":
        budget.expect(max(text_size(a["value"]), int(a["width"])))
    elif name == "indent":
        width = a["width"]
        pad = len(width) if isinstance(width, str) else int(width)
        text = str(a["s"])
        budget.expect(len(text) + (text.count("\n") + 1) * pad)
    elif name == "wordwrap":
        text, wrap = str(a["s"]), a["wrapstring"] or "\n"
        budget.expect(len(text) + (len(text) // max(int(a["width"]), 1) + 1) * len(wrap))
    elif name == "replace":
        budget.expect(replace_size(str(a["s"]), str(a["old"]), str(a["new"]), a["count"]))
    elif name == "format":
        check_printf(budget, str(a["value"]))
    elif name == "batch" and a["fill_with"] is not None:
        budget.expect(int(a["linecount"]))
    elif name == "slice":
        budget.turn(max(int(a["slices"]), 0))
    elif name == "tojson" and a["indent"] is not None:
        indent = a["indent"]
        if (len(indent) if isinstance(indent, str) else int(indent)) > 16:
            raise BudgetExceeded("tojson indent is limited to 16")
    elif name == "sum" and not isinstance(a["start"], int | float):
        raise BudgetExceeded("sum adds numbers only")


# Filters that neither turn their value into text nor build anything bigger than it.
_SHALLOW = frozenset(
    {"length", "count", "first", "last", "random", "map", "select", "reject", "selectattr"}
    | {"rejectattr", "batch", "slice", "list", "reverse", "attr", "int", "float", "abs"}
    | {"round", "default", "d", "sum", "min", "max", "sort", "unique", "dictsort", "groupby"}
)
_CHECKED = frozenset(
    {"center", "indent", "wordwrap", "replace", "format", "batch", "slice", "tojson", "sum"}
)
# Filters that turn their value into text: a value that is not data is empty text to them.
_PRINTS = frozenset(
    {"capitalize", "center", "e", "escape", "forceescape", "format", "indent", "lower"}
    | {"pprint", "replace", "safe", "string", "striptags", "title", "trim", "truncate"}
    | {"upper", "urlencode", "urlize", "wordcount", "wordwrap"}
)
# Filters working item by item (or character by character) in Python inside one call: their
# input is capped. By text (its length as text) or by items.
_COSTLY_TEXT = frozenset({"pprint", "striptags", "title", "urlencode", "wordcount", "wordwrap"})
_COSTLY_ITEMS = frozenset(
    {"dictsort", "groupby", "join", "max", "min", "sort", "sum", "unique", "xmlattr"}
)
# Filters handing back a lazy sequence: its consumer pulls the items, each one timed.
_LAZY = frozenset(
    {"map", "select", "reject", "selectattr", "rejectattr", "batch", "slice", "unique", "items"}
)


def capped(budget: Budget, name: str, value: Any) -> Any:
    """`value` if a costly filter may take it (a lazy sequence is read into a list first)."""
    cap = budget.limits.filter_input
    if name in _COSTLY_TEXT:
        size, unit = text_size(value), "characters"
    elif hasattr(value, "__len__"):
        size, unit = len(value), "items"
    elif hasattr(value, "__iter__") and not isinstance(value, Undefined):
        value = list(islice(value, cap + 1))
        size, unit = len(value), "items"
    else:
        return value
    if size > cap:
        raise BudgetExceeded(f"{name} is limited to {cap:,} {unit}")
    return value


def _metered_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    checked = name in _CHECKED or name == "join"
    shallow, prints, lazy = name in _SHALLOW, name in _PRINTS, name in _LAZY
    costly = name in _COSTLY_TEXT or name in _COSTLY_ITEMS
    # Where the filtered value sits among the arguments: after a passed context, if any.
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0
    # Jinja's sync/async filters wrap a function that may take no context while the wrapper
    # does: bind against the real signature, past what only the wrapper takes.
    inner = inspect.unwrap(func)
    signature = inspect.signature(inner)
    extra = skip if getattr(inner, "jinja_pass_arg", None) is None else 0

    @functools.wraps(func)  # keeps `jinja_pass_arg`
    def metered(*args: Any, **kwargs: Any) -> Any:
        budget = current()
        budget.tick()
        if len(args) > skip:
            value = args[skip]
            if prints:
                value = shown(budget, value)
            elif not shallow and isinstance(value, CONTAINERS):
                measure(budget, value)
            if costly:
                value = capped(budget, name, value)
            args = (*args[:skip], value, *args[skip + 1 :])
            if name == "format":  # its arguments become text too
                args = (*args[: skip + 1], *(shown(budget, a) for a in args[skip + 1 :]))
                kwargs = {k: shown(budget, v) for k, v in kwargs.items()}
        if checked:
            bound = signature.bind(*args[extra:], **kwargs)
            bound.apply_defaults()
            if name == "join":
                items: Iterable[Any] = bound.arguments["value"]
                attribute = bound.arguments["attribute"]
                if attribute is not None:  # fetched here, so that what it gives is checked
                    items = map(make_attrgetter(args[0].environment, attribute), items)
                    bound.arguments["attribute"] = None
                bound.arguments["value"] = joined(budget, items, bound.arguments["d"])
                args, kwargs = (*args[:extra], *bound.args), bound.kwargs
            else:
                _check_filter(name, budget, bound.arguments)
        result = func(*args, **kwargs)
        budget.tick()  # one call that ran out the clock stops the render here
        if lazy:
            return _ticking(result)
        return budget.built(result)

    return metered


def merge_filters() -> dict[str, Callable[..., Any]]:
    """The filters of a merge environment, each metered."""
    filters = {name: _metered_filter(name, f) for name, f in DEFAULT_FILTERS.items()}
    filters["urlize"] = _metered_filter("urlize", do_urlize)
    filters["default"] = filters["d"] = _default
    filters[LOOP_FILTER] = loop_budget
    return filters
