"""Components for the matrix tests: none of them are ix's, so the runner is pinned kind-agnostic."""

import asyncio
import gc
import inspect
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from ix.matrix import Construct

T = TypeVar("T")


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


def run_clean(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run`, failing if the loop reported anything, e.g. a task destroyed pending."""
    reported: list[dict[str, Any]] = []
    with asyncio.Runner() as runner:
        runner.get_loop().set_exception_handler(lambda loop, context: reported.append(context))
        result = runner.run(main)
    gc.collect()
    assert reported == [], [context.get("message") for context in reported]
    return result


async def only_this_task_left(rounds: int = 100) -> bool:
    """Whether, after letting the loop settle, no task but the caller's is still alive."""
    for _ in range(rounds):
        if asyncio.all_tasks() == {asyncio.current_task()}:
            return True
        await asyncio.sleep(0)
    return False


async def collect_all(orchestrator: Any, constructs: Iterable[Any]) -> list[Any]:
    """Every outcome of `orchestrator.run_many(constructs)`."""
    return [outcome async for outcome in orchestrator.run_many(constructs, concurrency=4)]
