"""The sandbox every user template renders in, bounded: case `variants:` (`ix.lab.variants`),
runtime options and judge rubrics (`ix.runtimes._templates`).

jinja2's `SandboxedEnvironment` keeps a template away from Python's internals, not from the
machine: `{{ 'a' * 4000000000 }}` asks for 4 GB, a macro that calls itself ends in a
RecursionError, two nested `range(100000)` loops run for hours. Here a template renders
within its environment's `Limits`:

- `size`: no value a template makes and not its output passes `size` characters. What could
  make a larger value at once is checked before it runs (`*`, `**`, `%`, `+`, `~`; the
  methods `center`, `ljust`, `rjust`, `zfill`, `expandtabs`, `replace`, `join`, `translate`,
  `format`, `to_bytes`; the filters `center`, `indent`, `wordwrap`, `replace`, `join`,
  `format`, `batch`, `slice`, `sum`; `lipsum`), what every call, filter and operator returns
  is checked after, and so is every `{{ }}` before it is printed and every block's output
  (`{% set %}`, macros, `{% filter %}`) before it is joined. A number may have at most
  `MAX_DIGITS` digits (Python prints no longer one).
- `depth`: calls (macros, `caller()`, a recursive loop's `loop()`) nest at most `depth` deep.
- `seconds`: a render ends within that long: the clock is read at every loop iteration, call,
  operator and filter. `budget()` gives several renders one deadline (a case's variants).

A breach raises `jinja2.TemplateError` (the class `LimitError`) saying which limit, so callers
that already report a template's errors report it too. A template nested too deep to compile
is a `jinja2.TemplateSyntaxError`. Why here: `ix.lab` and `ix.runtimes` both render user
templates and may not import each other; `ix.eval` is the layer below both (DESIGN.md §1).
jinja2 is imported on first use.
"""

from __future__ import annotations

import functools
import re
import string
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import BuiltinMethodType, SimpleNamespace
from typing import TYPE_CHECKING, Any

from ix._lazy import lazy

if TYPE_CHECKING:
    import jinja2
    from jinja2 import nodes as jinja2_nodes
    from jinja2 import runtime as jinja2_runtime
    from jinja2 import sandbox as jinja2_sandbox
    from jinja2 import utils as jinja2_utils
    from jinja2 import visitor as jinja2_visitor
else:  # only what renders a template pays for jinja2
    jinja2 = lazy("jinja2")
    jinja2_nodes = lazy("jinja2.nodes")
    jinja2_runtime = lazy("jinja2.runtime")
    jinja2_sandbox = lazy("jinja2.sandbox")
    jinja2_utils = lazy("jinja2.utils")
    jinja2_visitor = lazy("jinja2.visitor")

__all__ = ["MAX_DIGITS", "Limits", "budget", "environment", "limit_error"]

#: The most digits a number a template makes may have: Python prints no longer one
#: (`sys.int_info.default_max_str_digits`), and arithmetic on such numbers stays quick.
MAX_DIGITS = 4300
_MAX_BITS = MAX_DIGITS * 10 // 3 + 1


@dataclass(frozen=True)
class Limits:
    """How far one template may go."""

    #: characters of any value the template makes, and of its output
    size: int = 1_000_000
    #: calls (macros, `caller()`, `loop()`) nested in one another
    depth: int = 50
    #: one render (or every render inside one `budget`)
    seconds: float = 2.0


class _Budget:
    """The render (or renders) in progress: the deadline and how deep calls nest now."""

    __slots__ = ("deadline", "depth", "seconds")

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.depth = 0


_BUDGET: ContextVar[_Budget | None] = ContextVar("ix_template_budget", default=None)


@contextmanager
def budget(seconds: float) -> Iterator[None]:
    """Every render inside the block shares one deadline, `seconds` from now (all the
    variants of one case: 2 s for all of them, not 2 s each)."""
    token = _BUDGET.set(_Budget(seconds))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def environment(limits: Limits, *, immutable: bool = False,
                **options: Any) -> jinja2_sandbox.SandboxedEnvironment:
    """A sandboxed environment bounded by `limits` (`immutable`: lists and dicts cannot be
    changed, jinja2's `ImmutableSandboxedEnvironment`); `options` as for jinja2's."""
    classes = _classes()
    made: jinja2_sandbox.SandboxedEnvironment = (
        classes.Immutable if immutable else classes.Bounded)(limits, **options)
    return made


def limit_error() -> type[jinja2.TemplateError]:
    """The class of a breach of `Limits` (a `jinja2.TemplateError`)."""
    error: type[jinja2.TemplateError] = _classes().LimitError
    return error


def _size(value: Any, most: int) -> int:
    """About how many characters `str(value)` has (what a value costs), counted only as far as
    `most`: any number above it means "too large". Strings, numbers, lists, tuples, sets and
    mappings (and their items) count; other objects count a few characters."""
    if type(value) is str:  # most of what a template handles
        return len(value)
    total, steps, stack = 0, 0, [value]
    while stack:
        item = stack.pop()
        steps += 1
        if isinstance(item, str | bytes | bytearray):
            total += len(item)
        elif isinstance(item, bool) or item is None or isinstance(item, float | complex):
            total += 5
        elif isinstance(item, int):
            total += item.bit_length() * 3 // 10 + 1
        elif isinstance(item, Mapping):
            total += 2 + 4 * len(item)
            if total <= most:
                for key, inner in item.items():
                    stack += (key, inner)
        elif isinstance(item, list | tuple | set | frozenset):
            total += 2 + 2 * len(item)
            if total <= most:
                stack.extend(item)
        elif isinstance(item, jinja2_utils.Namespace):
            stack.append(dict(getattr(item, "_Namespace__attrs", {})))
        else:
            total += 8
        if total > most or steps > most:
            return most + 1
    return total


# -- what the checks refuse, in words --------------------------------------------------------

def _too_large(limits: Limits) -> str:
    return (f"makes a value of more than {limits.size:,} characters (the most a template "
            "may)")


def _too_long(seconds: float) -> str:
    return (f"takes more than {seconds:g} s to render (the most templates may; a loop too "
            "long?)")


def _too_many_digits() -> str:
    return f"makes a number of more than {MAX_DIGITS:,} digits (the most a template may)"


def _arg(args: tuple[Any, ...], kwargs: Mapping[str, Any], index: int, name: str,
         default: Any) -> Any:
    """A call's argument by position or name."""
    if len(args) > index:
        return args[index]
    return kwargs.get(name, default)


_PERCENT = re.compile(r"%(?:\(([^)]*)\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?(.)", re.S)


def _percent(fmt: str | bytes, values: Any, most: int) -> int:
    """About how long `fmt % values` is: its text, each conversion's value, widths and
    precisions (`*` ones taken from `values`, as `%` takes them)."""
    text = fmt.decode("latin-1") if isinstance(fmt, bytes) else fmt
    positional = values if isinstance(values, tuple) else (values,)
    keyed = values if isinstance(values, Mapping) else None
    total, i = len(text), 0

    def take() -> Any:
        nonlocal i
        i += 1
        return positional[i - 1] if i <= len(positional) else None

    for match in _PERCENT.finditer(text):
        key, width, precision, conversion = match.groups()
        if conversion == "%":
            continue
        for number in (width, precision):
            n = take() if number == "*" else _number(number) if number else 0
            total += n if isinstance(n, int) and n > 0 else 0
        value = keyed.get(key) if keyed is not None and key is not None else take()
        total += _size(value, most)
        if total > most:
            break
    return total


def _format(fmt: str, args: tuple[Any, ...], kwargs: Mapping[str, Any], most: int) -> int:
    """About how long `fmt.format(*args, **kwargs)` is: each field the largest value given,
    plus the numbers of its format spec (a nested `{}` in one: the largest number given)."""
    values = [*args, *kwargs.values()]
    largest = max((_size(v, most) for v in values), default=0)
    widest = max((v for v in values if isinstance(v, int) and not isinstance(v, bool)),
                 default=0)
    total = 0
    try:
        fields = list(string.Formatter().parse(fmt))
    except ValueError:
        return 0  # `format` says what is wrong with it
    for literal, field, spec, _ in fields:
        total += len(literal)
        if field is None:
            continue
        total += largest + sum(_number(n) for n in re.findall(r"\d+", spec or ""))
        if spec and "{" in spec:
            total += max(widest, 0)
    return total


def _number(digits: str) -> int:
    """A width or precision written in a format: more than 18 digits is too many anyway."""
    return int(digits) if len(digits) <= 18 else 10 ** 18


def _joined(items: list[Any], separator: Any, most: int) -> int:
    return sum(_size(x, most) for x in items) + _size(separator, most) * max(len(items) - 1, 0)


def _replaced(text: Any, old: Any, new: Any, count: Any) -> int:
    """How long `text.replace(old, new, count)` is (0 when the call will fail anyway)."""
    if not isinstance(text, str | bytes) or type(old) is not type(text) \
            or type(new) is not type(text):
        return 0
    hits = text.count(old) if old else len(text) + 1  # type: ignore[arg-type]
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(text) + hits * max(len(new) - len(old), 0)


# -- the checks a call, a filter, an operator is put through before it runs ------------------

def _method_size(method: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any],
                 most: int) -> tuple[int, tuple[Any, ...]]:
    """How large the result of calling a str, bytes or int method may be (0: not one that
    grows), and the arguments to call it with (an iterable to `join` made a list)."""
    owner, name = getattr(method, "__self__", None), getattr(method, "__name__", "")
    if isinstance(owner, str | bytes):
        if name in ("center", "ljust", "rjust", "zfill"):
            width = _arg(args, kwargs, 0, "width", 0)
            return (width if isinstance(width, int) else 0), args
        if name == "expandtabs":
            tab = _arg(args, kwargs, 0, "tabsize", 8)
            tabs = owner.count("\t") if isinstance(owner, str) else owner.count(b"\t")
            return len(owner) + tabs * (tab if isinstance(tab, int) else 0), args
        if name == "replace" and len(args) >= 2:
            return _replaced(owner, args[0], args[1], _arg(args, kwargs, 2, "count", -1)), args
        if name == "join" and args:
            items = list(args[0])
            return _joined(items, owner, most), (items, *args[1:])
        if name == "translate" and args and isinstance(args[0], Mapping):
            widest = max((_size(v, most) for v in args[0].values()), default=1)
            return len(owner) * max(widest, 1), args
    elif isinstance(owner, int) and name == "to_bytes":
        length = _arg(args, kwargs, 0, "length", 1)
        return (length if isinstance(length, int) else 0), args
    wrapped = getattr(method, "__wrapped__", None)  # the sandbox's str.format
    if isinstance(wrapped, BuiltinMethodType) and isinstance(wrapped.__self__, str):
        if wrapped.__name__ == "format":
            return _format(wrapped.__self__, args, kwargs, most), args
        if wrapped.__name__ == "format_map" and args and isinstance(args[0], Mapping):
            return _format(wrapped.__self__, (), args[0], most), args
    return 0, args


def _filter_size(name: str, env: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any],
                 most: int) -> tuple[int, tuple[Any, ...]]:
    """As `_method_size`, for the filters that can make a value much larger than theirs;
    `args` without the context, eval context or environment some filters are passed."""
    value = args[0] if args else None
    if name == "center":
        width = _arg(args, kwargs, 1, "width", 80)
        return (width if isinstance(width, int) else 0), args
    if name == "indent":
        width = _arg(args, kwargs, 1, "width", 4)
        text = str(value)
        each = width if isinstance(width, int) else len(str(width))
        return len(text) + (text.count("\n") + 1) * max(each, 0), args
    if name == "wordwrap":
        width = _arg(args, kwargs, 1, "width", 79)
        wrap = _arg(args, kwargs, 3, "wrapstring", None) or env.newline_sequence
        text = str(value)
        lines = 2 * len(text) // max(width if isinstance(width, int) else 1, 1) \
            + text.count("\n") + 1
        return len(text) + lines * len(str(wrap)), args
    if name == "replace" and len(args) >= 3:
        count = _arg(args, kwargs, 3, "count", None)
        return _replaced(str(value), str(args[1]), str(args[2]), count), args
    if name == "join":
        items = list(value) if isinstance(value, Iterable) else []
        return _joined(items, _arg(args, kwargs, 1, "d", ""), most), (items, *args[1:])
    if name == "format":
        return _percent(str(value), dict(kwargs) or tuple(args[1:]), most), args
    if name in ("batch", "slice"):
        count = _arg(args, kwargs, 1, "linecount" if name == "batch" else "slices", 0)
        return (count if isinstance(count, int) else 0), args
    if name == "sum":
        start = _arg(args, kwargs, 2, "start", 0)
        if isinstance(start, list | tuple) and isinstance(value, Iterable):
            # each step copies what came before: n items of a result of size s cost n * s
            items = list(value)
            return len(items) * _joined(items, "", most) // 100, (items, *args[1:])
    return 0, args


def _binop_size(operator: str, left: Any, right: Any, most: int) -> int:
    """How large `left <operator> right` may be (0: no operator that grows a value)."""
    if operator == "*":
        for sequence, times in ((left, right), (right, left)):
            if isinstance(sequence, str | bytes | list | tuple) and _whole(times) and sequence:
                return _size(sequence, most) * max(times, 0)
    elif operator == "%" and isinstance(left, str | bytes):
        return _percent(left, right, most)
    elif operator == "+" and isinstance(left, str | bytes | list | tuple) \
            and isinstance(right, str | bytes | list | tuple):
        return _size(left, most) + _size(right, most)
    return 0


def _binop_bits(operator: str, left: Any, right: Any) -> int:
    """About how many bits `left * right` or `left ** right` has, for two whole numbers."""
    if not (_whole(left) and _whole(right)):
        return 0
    if operator == "*":
        return int(left.bit_length() + right.bit_length())
    if operator == "**" and right > 0 and abs(left) > 1:
        return int(left.bit_length() * right)
    return 0


def _whole(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


@functools.cache
def _classes() -> SimpleNamespace:
    """The environment and template classes, made on first use (they subclass jinja2's)."""

    class LimitError(jinja2.TemplateError):
        """A template went past one of its `Limits`: its size, its depth or its time."""

    def tick(current: _Budget | None) -> None:
        if current is not None and time.monotonic() > current.deadline:
            raise LimitError(_too_long(current.seconds))

    class Template(jinja2.Template):
        """Renders within its environment's limits (a render outside any `budget` gets one
        of its own)."""

        def render(self, *args: Any, **kwargs: Any) -> str:
            if _BUDGET.get() is not None:
                return super().render(*args, **kwargs)
            env: Any = self.environment
            with budget(env.limits.seconds):
                return super().render(*args, **kwargs)

    class Bounds(jinja2_visitor.NodeTransformer):
        """Every `{% for %}` iterates through `ix_iterate` (the clock is read at each step)
        and every `~` joins through `ix_concat` (its length checked before it is made)."""

        def visit_For(self, node: Any) -> Any:
            node = self.generic_visit(node)
            node.iter = _call("ix_iterate", [node.iter], node.iter.lineno)
            return node

        def visit_Concat(self, node: Any) -> Any:
            node = self.generic_visit(node)
            return _call("ix_concat", list(node.nodes), node.lineno)

    def _call(name: str, args: list[Any], lineno: int) -> Any:
        return jinja2_nodes.Call(jinja2_nodes.EnvironmentAttribute(name, lineno=lineno),
                                 args, [], None, None, lineno=lineno)

    class Bounded(jinja2_sandbox.SandboxedEnvironment):
        """jinja2's sandbox within `limits` (see the module)."""

        intercepted_binops = frozenset({"*", "**", "%", "+"})
        template_class = Template

        def __init__(self, limits: Limits, **options: Any):
            super().__init__(finalize=self._printed, **options)
            self.limits = limits
            # every block's output, and a render's: compiled code reads `concat` here
            self.concat = self._joined  # type: ignore[method-assign]
            self.filters = {name: self._bounded_filter(name, f)
                            for name, f in self.filters.items()}
            self.globals["lipsum"] = self._lipsum

        # compiling: too deep a template is a syntax error, not a RecursionError
        def parse(self, source: str, name: str | None = None,
                  filename: str | None = None) -> Any:
            with self._compiling():
                return super().parse(source, name, filename)

        def from_string(self, source: Any, globals: Any = None,
                        template_class: Any = None) -> Any:
            with self._compiling():
                tree = super().parse(source) if isinstance(source, str) else source
                tree = Bounds().visit(tree)
                tree.set_environment(self)
                return super().from_string(tree, globals, template_class)

        @contextmanager
        def _compiling(self) -> Iterator[None]:
            try:
                yield
            except (RecursionError, MemoryError, SyntaxError) as exc:
                why = exc.msg if isinstance(exc, SyntaxError) else type(exc).__name__
                raise jinja2.TemplateSyntaxError(f"nested too deep to compile ({why})",
                                                 1) from None

        # the checks
        def check(self, value: Any) -> Any:
            """`value`, once sure it is within the size limit."""
            if isinstance(value, str):
                if len(value) > self.limits.size:
                    raise LimitError(_too_large(self.limits))
                return value
            if _whole(value) and value.bit_length() > _MAX_BITS:
                raise LimitError(_too_many_digits())
            if _size(value, self.limits.size) > self.limits.size:
                raise LimitError(_too_large(self.limits))
            return value

        def _before(self, planned: int) -> None:
            if planned > self.limits.size:
                raise LimitError(_too_large(self.limits))

        def _printed(self, value: Any) -> Any:
            tick(_BUDGET.get())
            return self.check(value)

        def _joined(self, pieces: Iterable[str]) -> str:
            kept, total, most = [], 0, self.limits.size
            current = _BUDGET.get()
            for piece in pieces:
                total += len(piece)
                if total > most:
                    raise LimitError(f"renders more than {most:,} characters (the most a "
                                     "template may)")
                kept.append(piece)
                tick(current)
            return "".join(kept)

        # what compiled templates call
        def call(__self, __context: Any, __obj: Any, *args: Any,
                 **kwargs: Any) -> Any:
            current = _BUDGET.get()
            tick(current)
            if getattr(__obj, "__func__", None) in _OWN:  # a loop or a `~`: checks its own
                return __obj(*args)
            most = __self.limits.size
            for value in (*args, *kwargs.values()):
                __self.check(value)
            planned, args = _method_size(__obj, args, kwargs, most)
            __self._before(planned)
            if current is None:
                return __self.check(super().call(__context, __obj, *args, **kwargs))
            if current.depth >= __self.limits.depth:
                raise LimitError(f"nests calls more than {__self.limits.depth} deep (the most "
                                 "a template may; a macro that calls itself?)")
            current.depth += 1
            try:
                result = super().call(__context, __obj, *args, **kwargs)
            finally:
                current.depth -= 1
            return __self.check(result)

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            tick(_BUDGET.get())
            if _binop_bits(operator, left, right) > _MAX_BITS:
                raise LimitError(_too_many_digits())
            self._before(_binop_size(operator, left, right, self.limits.size))
            return self.check(self.binop_table[operator](left, right))

        def ix_iterate(self, iterable: Any) -> Iterator[Any]:
            """A loop's items, the clock read before each."""
            current = _BUDGET.get()
            for item in iterable:
                tick(current)
                yield item

        def ix_concat(self, *parts: Any) -> str:
            """`a ~ b ~ c`, once sure the result is within the size limit."""
            self._before(sum(_size(p, self.limits.size) for p in parts))
            joined: str = (jinja2_runtime.markup_join(parts)
                           if any(hasattr(p, "__html__") for p in parts)
                           else jinja2_runtime.str_join(parts))
            return joined

        def _lipsum(self, n: int = 5, html: bool = True, min: int = 20,
                    max: int = 100) -> str:
            if isinstance(n, int) and isinstance(max, int):
                self._before(n * max * 12)
            text: str = jinja2_utils.generate_lorem_ipsum(n, html, min, max)
            return text

        def _bounded_filter(self, name: str, f: Callable[..., Any]) -> Callable[..., Any]:
            passed = 1 if getattr(f, "jinja_pass_arg", None) is not None else 0

            @functools.wraps(f)
            def bounded(*args: Any, **kwargs: Any) -> Any:
                tick(_BUDGET.get())
                head, given = args[:passed], args[passed:]
                for value in (*given, *kwargs.values()):
                    self.check(value)
                planned, given = _filter_size(name, self, given, kwargs, self.limits.size)
                self._before(planned)
                return self.check(f(*head, *given, **kwargs))

            return bounded

    _OWN = (Bounded.ix_iterate, Bounded.ix_concat)

    class Immutable(Bounded, jinja2_sandbox.ImmutableSandboxedEnvironment):
        """`Bounded`, and lists and dicts cannot be changed."""

    return SimpleNamespace(LimitError=LimitError, Bounded=Bounded, Immutable=Immutable)
