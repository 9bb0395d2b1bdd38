"""Turning a bag of components into a validated dependency graph."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ix.matrix._graph import find_cycle
from ix.matrix.component import Component
from ix.matrix.errors import (
    CycleError,
    DuplicateComponentError,
    DuplicateProviderError,
    MissingProviderError,
)

GIVEN = "<given>"
"""Stands for the caller in provider listings: the kinds seeded into constructs up front."""


@dataclass(frozen=True, slots=True)
class Dag:
    """A graph known to be runnable: every requirement has one provider and there is no cycle.

    Build it with `DagCompiler`, which checks those invariants; everything downstream relies on
    them instead of re-checking per construct.
    """

    components: tuple[Component, ...]
    given: frozenset[str]
    providers: Mapping[str, str]
    """kind -> name of the component providing it (given kinds are absent)."""
    dependencies: Mapping[str, frozenset[str]]
    """component name -> names of the components whose output it requires."""


class DagCompiler:
    """Validates a set of components and derives their dependency edges."""

    def compile(self, components: Iterable[Component], given: frozenset[str] = frozenset()) -> Dag:
        """The graph of `components`, with `given` kinds counting as provided up front.

        Raises a `DagError` subclass naming the offending components: duplicate names, a kind
        provided twice (or provided and given), a requirement nobody provides, or a cycle.
        """
        components = tuple(components)
        given = frozenset(given)
        by_name: dict[str, Component] = {}
        for component in components:
            if not isinstance(component, Component):
                raise TypeError(f"{component!r} is not a Component (name, requires, provides, run)")
            if component.name in by_name:
                raise DuplicateComponentError(component.name)
            by_name[component.name] = component
        ordered = sorted(by_name.values(), key=lambda component: component.name)

        sources: dict[str, list[str]] = {kind: [GIVEN] for kind in given}
        for component in ordered:
            sources.setdefault(component.provides, []).append(component.name)
        for kind in sorted(sources):
            if len(sources[kind]) > 1:
                raise DuplicateProviderError(kind, sources[kind])
        providers = {kind: names[0] for kind, names in sources.items() if kind not in given}

        dependencies: dict[str, frozenset[str]] = {}
        for component in ordered:
            for kind in sorted(component.requires):
                if kind not in sources:
                    raise MissingProviderError(component.name, kind)
            dependencies[component.name] = frozenset(
                providers[kind] for kind in component.requires if kind in providers
            )

        feeds: dict[str, list[str]] = {name: [] for name in dependencies}
        for name, needs in dependencies.items():
            for provider in needs:
                feeds[provider].append(name)
        cycle = find_cycle(feeds)
        if cycle is not None:
            raise CycleError(cycle)

        return Dag(
            components=components,
            given=given,
            providers=MappingProxyType(providers),
            dependencies=MappingProxyType(dependencies),
        )
