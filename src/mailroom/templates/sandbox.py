"""The Jinja environment merge tags run in: Jinja's immutable sandbox (no way to Python, no
mutating a list or dict), where whatever is missing renders as nothing, and where every loop
turn, call, filter, `*`/`**`/`%`/`+`, `~` join and output chunk is charged to the render's
budget (`templates.budget`).

The hooks, and why each:
- loops: every `for` iterates through the `loop_budget` filter (added by the code generator),
  which counts turns and watches the clock: nested empty loops never output anything, so
  output checks alone would never stop them. Recursive loops (`loop(children)`) the same.
- output: each chunk passes `environment.emit`, in buffers (macros, `set` blocks) as well as
  at the top, so a macro that builds megabytes fails while building them.
- `~`: joined by `environment.checked_concat`, so doubling a string in a loop is charged.
- calls: depth-counted (recursive macros), str methods limited to a list that cannot be made to
  amplify unchecked, integer arguments bounded (`ljust(10**9)`, `to_bytes(10**9)`).
- filters: each checked before and after its call, and bounded (`templates.filters`).
- containers are measured (bounded) before they are turned into text: a list nesting itself
  forty times is tiny in memory but its text is not.
- only data prints (`templates.values.shown`): a function, method, class, iterator or
  undefined value is empty text in output, `~` joins, `%` and `str.format`, so no repr (and
  no heap address) reaches a message.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.runtime import ChainableUndefined, Context, LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment

from mailroom.templates.budget import (
    Budget,
    BudgetExceeded,
    check_binop,
    check_format,
    check_int_args,
    current,
)
from mailroom.templates.filters import (
    LOOP_FILTER,
    capped,
    joined,
    loop_budget,
    merge_filters,
    replace_size,
)
from mailroom.templates.values import CONTAINERS, Record, measure, shown
from mailroom.templates.values import as_record as as_record  # render.py's

MAX_RANGE = 100_000  # as Jinja's own sandbox


class Blank(ChainableUndefined):
    """A missing value (a key the contact does not carry, a field since deleted, a typo):
    renders as nothing, chains (`custom_fields.a.b`), calls and arithmetic give blank again,
    comparisons are false. Never an error at send time."""

    __slots__ = ()

    def _blank(self, *_args: Any, **_kwargs: Any) -> Blank:
        return self

    def _false(self, _other: Any) -> bool:
        return False

    # Undefined's operators raise; these give blank again.
    __call__ = _blank  # type: ignore[assignment]
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _blank  # type: ignore[assignment]
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = _blank  # type: ignore[assignment]
    __mod__ = __rmod__ = __pow__ = __rpow__ = __pos__ = __neg__ = _blank  # type: ignore[assignment]
    __lt__ = __le__ = __gt__ = __ge__ = _false  # type: ignore[assignment]

    def __int__(self) -> int:  # type: ignore[override]
        return 0

    def __float__(self) -> float:  # type: ignore[override]
        return 0.0


def _finalize(value: Any) -> Any:
    """Every `{{ ... }}` before it becomes text: data as it is (containers measured), None and
    anything that is not data (a callable, a class, an iterator, an undefined value) nothing."""
    if type(value) is str:  # the common case
        return value
    return shown(current(), value)


def _range(*args: int) -> range:
    numbers = range(*args)
    if len(numbers) > MAX_RANGE:
        raise BudgetExceeded(f"range() is limited to {MAX_RANGE:,} numbers")
    return numbers


# ---------------------------------------------------------------- calls

# str (and Markup, bytes) methods a template may call: none can amplify unchecked
# (`translate` and `expandtabs` can, and no email needs them).
_STR_METHODS = frozenset(
    {"capitalize", "casefold", "center", "count", "endswith", "find", "index", "isalnum"}
    | {"isalpha", "isascii", "isdecimal", "isdigit", "islower", "isnumeric", "isspace"}
    | {"istitle", "isupper", "join", "ljust", "lower", "lstrip", "partition", "removeprefix"}
    | {"removesuffix", "replace", "rfind", "rindex", "rjust", "rpartition", "rsplit"}
    | {"rstrip", "split", "splitlines", "startswith", "strip", "swapcase", "title", "upper"}
    | {"zfill", "striptags", "unescape", "escape", "decode", "encode"}
)


def _check_str_call(budget: Budget, method: Any, text: Any, args: tuple[Any, ...]) -> Any:
    """Checks a str method call; returns its arguments (a joined iterable made a list)."""
    name = getattr(method, "__name__", "")
    if name not in _STR_METHODS:
        raise BudgetExceeded(f"str.{name}() is not available in templates")
    if name == "join" and args:
        return (joined(budget, capped(budget, "join", args[0]), text), *args[1:])
    if name == "replace" and len(args) >= 2:
        count = args[2] if len(args) > 2 else -1
        budget.expect(replace_size(str(text), str(args[0]), str(args[1]), count))
    check_int_args(budget, args, {})
    return args


# What generated code passes to every call inside a loop or block: Jinja's, not the user's.
_PASSED_VARS = frozenset({"_loop_vars", "_block_vars"})


def _is_str_format(obj: Any) -> bool:
    """Jinja's sandboxed `str.format` / `format_map` (wrapping the bound method)."""
    wrapped = getattr(obj, "__wrapped__", None)
    return isinstance(getattr(wrapped, "__self__", None), str) and getattr(
        wrapped, "__name__", ""
    ) in ("format", "format_map")


class MeteredCodeGenerator(CodeGenerator):
    def visit_Template(self, node: nodes.Template, frame: Frame | None = None) -> None:
        for loop in node.find_all(nodes.For):
            counted = nodes.Filter(loop.iter, LOOP_FILTER, [], [], None, None, lineno=loop.lineno)
            counted.set_environment(self.environment)
            loop.iter = counted
        super().visit_Template(node, frame)

    @optimizeconst
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        if frame.eval_ctx.volatile:
            join = "(markup_join if context.eval_ctx.volatile else str_join)"
        elif frame.eval_ctx.autoescape:
            join = "markup_join"
        else:
            join = "str_join"
        self.write(f"environment.checked_concat({join}, (")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")

    # Output into a buffer (a macro, a `set` or `filter` block) is metered as it is appended;
    # what the template yields at its top level is metered by the renderer as it arrives,
    # without a call per chunk.
    _buffered = False

    def visit_Output(self, node: nodes.Output, frame: Frame) -> None:
        self._buffered = frame.buffer is not None
        super().visit_Output(node, frame)

    def _output_child_pre(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        if self._buffered:
            self.write("environment.emit(")
        super()._output_child_pre(node, frame, finalize)

    def _output_child_post(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        super()._output_child_post(node, frame, finalize)
        if self._buffered:
            self.write(")")

    def _output_const_repr(self, group: Any) -> str:
        text = super()._output_const_repr(group)
        return f"environment.emit({text})" if self._buffered else text


class MergeEnvironment(ImmutableSandboxedEnvironment):
    """One per kind of part (HTML autoescaped; subject, preheader and text not)."""

    intercepted_binops = frozenset({"*", "**", "%", "+"})
    code_generator_class = MeteredCodeGenerator

    def __init__(self, *, autoescape: bool, trim_blocks: bool = False) -> None:
        super().__init__(
            autoescape=autoescape,
            undefined=Blank,
            finalize=_finalize,
            keep_trailing_newline=True,
            trim_blocks=trim_blocks,
            lstrip_blocks=trim_blocks,
            cache_size=0,
            auto_reload=False,
        )
        self.globals.pop("lipsum", None)  # paragraphs on demand: no merge value
        self.globals["range"] = _range
        self.filters = merge_filters()
        self.base_names = dict(self.globals)  # what every render's context starts from

    # Called by the generated code.
    def emit(self, text: str) -> str:
        return current().emit(text)

    def checked_concat(self, join: Callable[[Any], str], parts: tuple[Any, ...]) -> str:
        budget = current()
        # What is not data joins as nothing, as it prints (`_finalize`).
        parts = tuple(p if type(p) is str else shown(budget, p) for p in parts)
        return budget.built(join(parts))

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        budget = current()
        check_binop(budget, operator, left, right)
        if operator == "%" and isinstance(left, str):  # its operands become text
            right = tuple(shown(budget, r) for r in right) if type(right) is tuple else right
            right = shown(budget, right)
        return budget.built(super().call_binop(context, operator, left, right))

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is Record:  # the common case, `custom_fields.company`: plain data
            try:
                return obj._values[attribute]
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
        # Never folded while compiling (`current()` is Impossible then): `'a' ~ ''.join` would
        # otherwise become constant text holding the method's repr, checked by nothing.
        current()
        value = super().getattr(obj, attribute)
        if attribute in ("format", "format_map") and isinstance(obj, str):
            check_format(current(), obj)
        return value

    def getitem(self, obj: Any, argument: Any) -> Any:
        current()  # as getattr: never folded while compiling
        value = super().getitem(obj, argument)
        if argument in ("format", "format_map") and isinstance(obj, str):
            check_format(current(), obj)
        return value

    def call(
        __self,  # Jinja's own signature: callers may pass `self=` through
        __context: Context,
        __obj: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        budget = current()
        budget.tick()
        bound_to = getattr(__obj, "__self__", None)
        if isinstance(__obj, LoopContext) and args:  # a recursive loop's next level
            args = (loop_budget(args[0]), *args[1:])
        elif isinstance(bound_to, str | bytes):
            args = _check_str_call(budget, __obj, bound_to, args)
        elif isinstance(__obj, types.BuiltinFunctionType | types.BuiltinMethodType):
            check_int_args(budget, args, kwargs)
        elif _is_str_format(__obj):  # `'{}'.format(x)`: its arguments become text
            args = tuple(shown(budget, a) for a in args)
            kwargs = {k: shown(budget, v) for k, v in kwargs.items()}
        for value in (*args, *(v for k, v in kwargs.items() if k not in _PASSED_VARS)):
            if isinstance(value, CONTAINERS):
                measure(budget, value)
        budget.depth += 1
        if budget.depth > budget.limits.depth:
            raise BudgetExceeded(
                f"macro calls or recursive loops nest more than {budget.limits.depth} deep"
            )
        try:
            result = super().call(__context, __obj, *args, **kwargs)
        finally:
            budget.depth -= 1
        return budget.built(result)
