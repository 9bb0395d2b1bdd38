"""Ordering a graph into levels of components that may run side by side."""

from ix.matrix._graph import find_cycle
from ix.matrix.component import Component
from ix.matrix.dag import Dag
from ix.matrix.errors import CycleError


class DagScheduler:
    """Groups the components of a `Dag` into topological levels (Kahn's algorithm)."""

    def __init__(self, dag: Dag) -> None:
        self.dag = dag

    def levels(self) -> list[tuple[Component, ...]]:
        """Levels in run order; a level needs only earlier levels, so its members are independent.

        Each level is sorted by name so runs, logs and artifact order are reproducible.
        """
        by_name = {component.name: component for component in self.dag.components}
        waiting = {name: len(needs) for name, needs in self.dag.dependencies.items()}
        feeds: dict[str, list[str]] = {name: [] for name in waiting}
        for name, needs in self.dag.dependencies.items():
            for provider in needs:
                feeds[provider].append(name)

        levels: list[tuple[Component, ...]] = []
        ready = sorted(name for name, count in waiting.items() if count == 0)
        while ready:
            levels.append(tuple(by_name[name] for name in ready))
            unlocked = []
            for name in ready:
                for consumer in feeds[name]:
                    waiting[consumer] -= 1
                    if waiting[consumer] == 0:
                        unlocked.append(consumer)
            ready = sorted(unlocked)

        if sum(len(level) for level in levels) < len(waiting):  # only for a hand-built Dag
            raise CycleError(find_cycle(feeds) or tuple(sorted(waiting)))
        return levels
