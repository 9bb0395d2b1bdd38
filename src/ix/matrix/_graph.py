"""Cycle search shared by the compiler and the scheduler."""

from collections.abc import Mapping, Sequence


def find_cycle(feeds: Mapping[str, Sequence[str]]) -> tuple[str, ...] | None:
    """One cycle of the graph `node -> nodes it feeds`, in edge order, or None if acyclic.

    Deterministic: nodes are visited in sorted order and the cycle is rotated to start at its
    smallest name, so the same graph always yields the same message.
    """
    done: set[str] = set()
    for root in sorted(feeds):
        if root in done:
            continue
        path: list[str] = [root]
        on_path = {root}
        stack = [iter(sorted(feeds[root]))]
        while stack:
            node = next(stack[-1], None)
            if node is None:
                stack.pop()
                done.add(path[-1])
                on_path.discard(path.pop())
            elif node in on_path:
                cycle = path[path.index(node) :]
                start = cycle.index(min(cycle))
                return (*cycle[start:], *cycle[:start])
            elif node not in done:
                path.append(node)
                on_path.add(node)
                stack.append(iter(sorted(feeds[node])))
    return None
