"""The values merge tags see and print: `Record` (named values), measuring a container before
it becomes text, and what is data at all.

Only data prints. Python turns anything else into its repr, and a repr can carry a heap
address (`<built-in method join of str object at 0x7f...>`, a generator, a loop): a function,
method, class, iterator or undefined value prints nothing, and so does a container holding
one (its text would show the repr inside).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import date, time, timedelta
from decimal import Decimal
from typing import Any

from jinja2.utils import Namespace

from mailroom.templates.budget import Budget


class Record:
    """Named values for merge tags (`custom_fields.company`, `workspace.name`, `vars.order`):
    a key is never shadowed by a dict method (a field named `items` or `keys` is its value),
    and a missing key is blank."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = values

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, key: Any) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: Any) -> bool:
        return key in self._values

    def __str__(self) -> str:
        return str(dict(self._values))

    __repr__ = __str__


def as_record(value: Any) -> Any:
    """JSON-like data as merge values: objects become `Record`s, all the way down."""
    if isinstance(value, Mapping):
        return Record({str(k): as_record(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return [as_record(v) for v in value]
    return value


CONTAINERS = (list, tuple, set, frozenset, dict, Record, Namespace)
# What prints as itself (bool is an int; Markup a str). None prints as nothing.
SCALARS = (str, bytes, int, float, Decimal, date, time, timedelta, type(None))


def children(item: Any) -> Any:
    """The values inside a container (None for anything else)."""
    if isinstance(item, Mapping):
        return (*item.keys(), *item.values())
    if isinstance(item, list | tuple | set | frozenset):
        return item
    if isinstance(item, Record):
        return (item._values,)
    if isinstance(item, Namespace):
        return (object.__getattribute__(item, "_Namespace__attrs"),)
    return None


def measure(budget: Budget, value: Any) -> bool:
    """Refuse a container whose text would be longer than the render may still build. Each
    distinct container is visited once, so a list nesting itself forty times (tiny in memory,
    astronomical as text) costs forty steps. Returns whether it holds data only."""
    room = budget.room()
    plain = True
    sizes: dict[int, int] = {}  # id -> size (1 while in progress: a cycle counts once)
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, expanded = stack.pop()
        inside = children(item)
        if inside is None:
            continue
        key = id(item)
        if not expanded:
            if key in sizes:
                continue
            sizes[key] = 1
            stack.append((item, True))
            stack.extend((child, False) for child in inside if children(child) is not None)
            continue
        size = len(inside)
        for child in inside:
            if isinstance(child, str | bytes):
                size += len(child)
            elif id(child) in sizes:
                size += sizes[id(child)]
            elif not isinstance(child, SCALARS):
                plain = False
        sizes[key] = size
        if size > room:
            budget.expect(size)
        budget.tick()
    return plain


def shown(budget: Budget, value: Any) -> Any:
    """`value` as it may become text: data as it is (containers measured), anything else
    (a callable, a class, an iterator, an undefined value, a container holding one) empty."""
    if isinstance(value, SCALARS):
        return "" if value is None else value
    if isinstance(value, CONTAINERS):
        return value if measure(budget, value) else ""
    return ""
