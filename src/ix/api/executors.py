"""Where a run's trials execute: here on asyncio (`local`, the default) or on Ray (`ray`)."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ix.domain.errors import ConfigError
from ix.engine.plan import Plan
from ix.engine.ray_executor import connect, disconnect, on_ray  # imports ray when it runs

#: Where trials can run (`--executor`).
EXECUTORS = ("local", "ray")


def check_executor(executor: str, address: str | None) -> None:
    """A `ConfigError` for an unknown executor, or an address without Ray."""
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}; allowed: {', '.join(EXECUTORS)}",
                          field="--executor")
    if address is not None and executor != "ray":
        raise ConfigError("only --executor ray joins a cluster; add --executor ray",
                          field="--address")


@contextmanager
def executing(executor: str, address: str | None
              ) -> Iterator[tuple[dict[str, Any] | None, Callable[[Plan], Plan]]]:
    """Where trials run: (what `spec.yaml` records, how a plan is placed there)."""
    check_executor(executor, address)
    if executor == "local":
        yield None, lambda plan: plan
        return

    where = connect(address)
    try:
        yield where, on_ray
    finally:
        disconnect()
