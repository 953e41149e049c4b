"""What one render may spend: time, output, the size of the values it builds, loop turns and
call depth. A template that goes over fails that render with a `BudgetExceeded` reason; the
process, and every other render, carry on.

Jinja's sandbox keeps templates away from Python, but not away from the CPU or memory:
`range(100000)` nested in `range(100000)` never yields output, `'a' * 10**9` allocates a
gigabyte before anything could look at it, a macro can call itself. So the sandbox
(`templates.sandbox`) routes every loop turn, call, filter, intercepted operator, `~` join and
output chunk through the render's `Budget`, and the few operations whose result can be far
larger than their inputs (repetition, padding, replacement, joining, format widths) are checked
BEFORE they run. Everything else produces at most what it was given, and what it was given was
itself metered: no value is longer than `value_chars`, and all the values a render builds add
up to at most `work_chars`, which bounds its memory (and most of its time) whatever it does.

A filter is one Python call, so it is checked before and after it runs, and one call is kept
short (`templates.filters`): the filters that work item by item in Python take at most
`filter_input` characters or items, lazy ones check the clock per item, `urlize` per word.
One residue, stated: a single step already within those bounds (a C-level step over a value
within budget, one capped filter call, well under the time budget) is not interrupted; the
budget is checked again as soon as it returns.
"""

from __future__ import annotations

import re
import string
import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from jinja2.nodes import Impossible


@dataclass(frozen=True)
class Limits:
    seconds: float = 1.0
    output_chars: int = 5_000_000  # every part of one render together
    value_chars: int = 5_000_000  # one value built (a string's characters, a list's items)
    work_chars: int = 20_000_000  # all values built, added up (most are garbage at once)
    loop_turns: int = 1_000_000
    depth: int = 50  # macro calls and recursive loops nested in each other
    int_bits: int = 65_536  # a bigger integer is no merge value
    # What one call of a filter working item by item in Python (sort, wordwrap, title, ...)
    # takes: one such call stays well under the time budget.
    filter_input: int = 100_000


DEFAULT_LIMITS = Limits()


class BudgetExceeded(Exception):
    """The render went over one of its limits (or asked for something refused outright)."""


class Budget:
    __slots__ = ("deadline", "depth", "limits", "output", "turns", "work")

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        # CPU time of the rendering thread, not the wall clock: what a render spends is its
        # own work, and a busy machine (other processes, other renders) must not fail it.
        # A template cannot sleep or wait, so its CPU time is all the time it takes.
        self.deadline = time.thread_time() + limits.seconds
        self.output = 0
        self.work = 0
        self.turns = 0
        self.depth = 0

    def tick(self) -> None:
        if time.thread_time() > self.deadline:
            raise BudgetExceeded(
                f"rendering took longer than {self.limits.seconds:g} second(s) (time budget)"
            )

    def turn(self, count: int = 1) -> None:
        self.turns += count
        if self.turns > self.limits.loop_turns:
            raise BudgetExceeded(f"loops ran more than {self.limits.loop_turns:,} times")
        self.tick()

    def emit(self, text: str) -> str:
        self.output += len(text)
        if self.output > self.limits.output_chars:
            raise BudgetExceeded(
                f"the output is longer than {self.limits.output_chars:,} characters"
            )
        return text

    def room(self) -> int:
        """How long a value the render may still build."""
        return min(self.limits.value_chars, self.limits.work_chars - self.work)

    def expect(self, size: int) -> None:
        """Refuse, before it is built, a value of `size` characters or items."""
        if size > self.limits.value_chars:
            raise BudgetExceeded(
                f"a value would be longer than {self.limits.value_chars:,} characters"
            )
        if size > self.room():
            self._over_work()

    def built(self, value: Any) -> Any:
        """Count a value the render built (strings, bytes and containers by their length)."""
        if isinstance(value, str | bytes | list | tuple | dict | set | frozenset):
            size = len(value)
            if size > self.limits.value_chars:
                self.expect(size)
            self.work += size
            if self.work > self.limits.work_chars:
                self._over_work()
        return value

    def _over_work(self) -> None:
        raise BudgetExceeded(
            f"the values built add up to more than {self.limits.work_chars:,} characters"
        )


_CURRENT: ContextVar[Budget | None] = ContextVar("mailroom_render_budget", default=None)


def current() -> Budget:
    """The running render's budget. Outside a render (Jinja folding constants while it
    compiles) there is none: `Impossible` makes Jinja leave the expression to render time, so
    `{{ 'a' | center(10**9) }}` is never computed at save."""
    budget = _CURRENT.get()
    if budget is None:
        raise Impossible()
    return budget


def start(budget: Budget) -> Any:
    return _CURRENT.set(budget)


def stop(token: Any) -> None:
    _CURRENT.reset(token)


# ---------------------------------------------------------------- checks before building


_PRINTF = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?[a-zA-Z%]")
_DIGITS = re.compile(r"\d+")


def check_printf(budget: Budget, pattern: str) -> None:
    """`'%1000000000s' % x` pads before anything could measure it: add up the widths."""
    padding = 0
    for width, precision in _PRINTF.findall(pattern):
        if "*" in (width, precision):
            raise BudgetExceeded("'*' widths are not allowed in format strings")
        padding += int(width or 0) + int(precision or 0)
    budget.expect(len(pattern) + padding)


def check_format(budget: Budget, pattern: str) -> None:
    """The same for `'{:>1000000000}'.format(x)`; a width taken from an argument is refused."""
    padding = 0
    try:
        fields = list(string.Formatter().parse(pattern))
    except ValueError:
        return  # str.format will say what is wrong
    for _literal, _name, spec, _conversion in fields:
        if spec:
            if "{" in spec:
                raise BudgetExceeded("nested fields are not allowed in format specifications")
            padding += sum(int(d) for d in _DIGITS.findall(spec))
    budget.expect(len(pattern) + padding)


def repeat_size(left: Any, right: Any) -> int | None:
    """Size of `left * right` when it repeats a sequence, else None."""
    for seq, times in ((left, right), (right, left)):
        if isinstance(seq, str | bytes | list | tuple) and isinstance(times, int):
            return len(seq) * max(times, 0)
    return None


def check_binop(budget: Budget, operator: str, left: Any, right: Any) -> None:
    """Before `*`, `**` and `%` run (the sandbox intercepts them)."""
    budget.tick()
    if operator == "*":
        size = repeat_size(left, right)
        if size is not None:
            budget.expect(size)
        elif _is_int(left) and _is_int(right):
            _check_bits(budget, abs(left).bit_length() + abs(right).bit_length())
    elif operator == "**":
        if _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1:
            _check_bits(budget, abs(left).bit_length() * right)
    elif operator == "%" and isinstance(left, str):
        check_printf(budget, left)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_bits(budget: Budget, bits: int) -> None:
    if bits > budget.limits.int_bits:
        raise BudgetExceeded(f"a number would have more than {budget.limits.int_bits:,} bits")


def text_size(value: Any) -> int:
    return len(value) if isinstance(value, str) else len(str(value))


def check_int_args(budget: Budget, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """A call's integer arguments are at most what the render may still build: the widths,
    counts and lengths of `ljust(n)`, `to_bytes(n)` and the like."""
    for value in (*args, *kwargs.values()):
        if _is_int(value) and value > budget.room():
            raise BudgetExceeded(f"an argument of {value:,} is more than this render may build")
