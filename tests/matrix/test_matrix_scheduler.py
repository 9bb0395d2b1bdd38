import random

from matrix_support import arithmetic, diamond

from ix.matrix import DagCompiler, DagScheduler


def names(levels: list) -> list[tuple[str, ...]]:
    return [tuple(component.name for component in level) for level in levels]


def test_diamond_levels_put_the_two_branches_side_by_side() -> None:
    levels = DagScheduler(DagCompiler().compile(diamond())).levels()
    assert names(levels) == [("source",), ("left", "right"), ("join",)]


def test_levels_do_not_depend_on_the_order_components_are_listed() -> None:
    rng = random.Random(0)
    for _ in range(20):
        components = diamond()
        rng.shuffle(components)
        levels = DagScheduler(DagCompiler().compile(components)).levels()
        assert names(levels) == [("source",), ("left", "right"), ("join",)]


def test_a_linear_chain_is_one_component_per_level() -> None:
    dag = DagCompiler().compile(arithmetic(), given=frozenset({"n"}))
    assert names(DagScheduler(dag).levels()) == [("numbers",), ("squares",), ("sum",)]
