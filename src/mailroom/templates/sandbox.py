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
- containers are measured (bounded) before they are turned into text: a list nesting itself
  forty times is tiny in memory but its text is not.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.defaults import DEFAULT_FILTERS
from jinja2.runtime import ChainableUndefined, Context, LoopContext, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace

from mailroom.templates.budget import (
    Budget,
    BudgetExceeded,
    check_binop,
    check_format,
    check_int_args,
    check_printf,
    current,
    text_size,
)

MAX_RANGE = 100_000  # as Jinja's own sandbox
LOOP_FILTER = "loop_budget"


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


def _children(item: Any) -> Any:
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


def measure(budget: Budget, value: Any) -> None:
    """Refuse a container whose text would be longer than the render may still build. Each
    distinct container is visited once, so a list nesting itself forty times (tiny in memory,
    astronomical as text) costs forty steps."""
    room = budget.room()
    sizes: dict[int, int] = {}  # id -> size (1 while in progress: a cycle counts once)
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, expanded = stack.pop()
        children = _children(item)
        if children is None:
            continue
        key = id(item)
        if not expanded:
            if key in sizes:
                continue
            sizes[key] = 1
            stack.append((item, True))
            stack.extend((child, False) for child in children if _children(child) is not None)
            continue
        size = len(children)
        for child in children:
            if isinstance(child, str | bytes):
                size += len(child)
            elif id(child) in sizes:
                size += sizes[id(child)]
        sizes[key] = size
        if size > room:
            budget.expect(size)
        budget.tick()


_CONTAINERS = (list, tuple, set, frozenset, dict, Record, Namespace)


def _finalize(value: Any) -> Any:
    """Every `{{ ... }}` before it becomes text: None is nothing, containers are measured."""
    if value is None:
        return ""
    if isinstance(value, _CONTAINERS):
        measure(current(), value)
    return value


def _default(value: Any, default_value: Any = "", boolean: bool = True) -> Any:
    """`default`: an absent, empty or None value takes the fallback (pass `false` as the
    second argument to keep 0 and empty strings)."""
    if isinstance(value, Undefined) or value is None or (boolean and not value):
        return default_value
    return value


def _range(*args: int) -> range:
    numbers = range(*args)
    if len(numbers) > MAX_RANGE:
        raise BudgetExceeded(f"range() is limited to {MAX_RANGE:,} numbers")
    return numbers


def _loop_budget(value: Any) -> Iterator[Any]:
    budget = current()
    for item in value:
        budget.turn()
        yield item


# ---------------------------------------------------------------- filters


def _replace_size(text: str, old: str, new: str, count: Any) -> int:
    found = len(text) + 1 if old == "" else text.count(old)
    if isinstance(count, int) and count >= 0:
        found = min(found, count)
    return len(text) + found * max(len(new) - len(old), 0)


def _joined(budget: Budget, items: list[Any], separator: Any) -> None:
    measure(budget, items)
    budget.expect(sum(text_size(i) for i in items) + len(items) * text_size(separator))


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
        budget.expect(_replace_size(str(a["s"]), str(a["old"]), str(a["new"]), a["count"]))
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


def _metered_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    checked = name in _CHECKED or name == "join"
    shallow = name in _SHALLOW
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
        if not shallow and len(args) > skip and isinstance(args[skip], _CONTAINERS):
            measure(budget, args[skip])
        if checked:
            bound = signature.bind(*args[extra:], **kwargs)
            bound.apply_defaults()
            if name == "join":
                items = list(bound.arguments["value"])
                _joined(budget, items, bound.arguments["d"])
                bound.arguments["value"] = items
                args, kwargs = (*args[:extra], *bound.args), bound.kwargs
            else:
                _check_filter(name, budget, bound.arguments)
        return budget.built(func(*args, **kwargs))

    return metered


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
        items = list(args[0])
        _joined(budget, items, text)
        return (items, *args[1:])
    if name == "replace" and len(args) >= 2:
        count = args[2] if len(args) > 2 else -1
        budget.expect(_replace_size(str(text), str(args[0]), str(args[1]), count))
    check_int_args(budget, args, {})
    return args


# What generated code passes to every call inside a loop or block: Jinja's, not the user's.
_PASSED_VARS = frozenset({"_loop_vars", "_block_vars"})


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
        filters = {name: _metered_filter(name, f) for name, f in DEFAULT_FILTERS.items()}
        filters["default"] = filters["d"] = _default
        filters[LOOP_FILTER] = _loop_budget
        self.filters = filters
        self.base_names = dict(self.globals)  # what every render's context starts from

    # Called by the generated code.
    def emit(self, text: str) -> str:
        return current().emit(text)

    def checked_concat(self, join: Callable[[Any], str], parts: tuple[Any, ...]) -> str:
        budget = current()
        for part in parts:
            if isinstance(part, _CONTAINERS):
                measure(budget, part)
        return budget.built(join(parts))

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        budget = current()
        check_binop(budget, operator, left, right)
        if operator == "%" and isinstance(right, _CONTAINERS):
            measure(budget, right)
        return budget.built(super().call_binop(context, operator, left, right))

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is Record:  # the common case, `custom_fields.company`: plain data
            try:
                return obj._values[attribute]
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
        value = super().getattr(obj, attribute)
        if attribute in ("format", "format_map") and isinstance(obj, str):
            check_format(current(), obj)
        return value

    def getitem(self, obj: Any, argument: Any) -> Any:
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
            args = (_loop_budget(args[0]), *args[1:])
        elif isinstance(bound_to, str | bytes):
            args = _check_str_call(budget, __obj, bound_to, args)
        elif isinstance(__obj, types.BuiltinFunctionType | types.BuiltinMethodType):
            check_int_args(budget, args, kwargs)
        for value in (*args, *(v for k, v in kwargs.items() if k not in _PASSED_VARS)):
            if isinstance(value, _CONTAINERS):
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
