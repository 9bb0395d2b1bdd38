"""Components for the matrix tests: none of them are ix's, so the runner is pinned kind-agnostic."""

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ix.matrix import Construct


@dataclass(frozen=True)
class Step:
    """A component from a function of the construct; the function may be sync or async."""

    name: str
    requires: frozenset[str]
    provides: str
    fn: Callable[[Construct[Any]], Any]

    async def run(self, construct: Construct[Any]) -> Any:
        result = self.fn(construct)
        return await result if inspect.isawaitable(result) else result


def step(
    name: str, requires: Iterable[str], provides: str, fn: Callable[[Construct[Any]], Any] = str
) -> Step:
    return Step(name, frozenset(requires), provides, fn)


def arithmetic() -> list[Step]:
    """n (given) -> numbers -> squares -> sum, listed out of order on purpose."""
    return [
        step("sum", {"squares"}, "sum", lambda c: sum(c.data("squares"))),
        step("numbers", {"n"}, "numbers", lambda c: list(range(1, c.data("n") + 1))),
        step("squares", {"numbers"}, "squares", lambda c: [x * x for x in c.data("numbers")]),
    ]


def diamond() -> list[Step]:
    """source -> (left, right) -> join."""
    return [
        step("join", {"left", "right"}, "joined", lambda c: c.data("left") + c.data("right")),
        step("right", {"source"}, "right", lambda c: c.data("source") * 10),
        step("left", {"source"}, "left", lambda c: c.data("source") + 1),
        step("source", set(), "source", lambda c: c.subject),
    ]
