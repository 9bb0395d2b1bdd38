import pytest
from matrix_support import arithmetic, diamond, step

from ix.matrix import (
    CycleError,
    DagCompiler,
    DagError,
    DuplicateComponentError,
    DuplicateProviderError,
    MissingProviderError,
)


def test_compile_derives_providers_and_dependency_edges() -> None:
    dag = DagCompiler().compile(diamond())
    assert dag.providers == {"source": "source", "left": "left", "right": "right", "joined": "join"}
    assert dag.dependencies == {
        "source": frozenset(),
        "left": {"source"},
        "right": {"source"},
        "join": {"left", "right"},
    }


def test_requiring_a_kind_nobody_provides_names_the_component_and_the_kind() -> None:
    with pytest.raises(MissingProviderError, match=r"'numbers'.*'n'") as caught:
        DagCompiler().compile(arithmetic())
    assert (caught.value.component, caught.value.kind) == ("numbers", "n")


def test_given_kinds_count_as_provided() -> None:
    dag = DagCompiler().compile(arithmetic(), given=frozenset({"n"}))
    assert dag.given == {"n"}
    assert dag.dependencies["numbers"] == frozenset()


def test_two_providers_of_one_kind_are_rejected_naming_both() -> None:
    components = [step("alpha", set(), "score"), step("beta", set(), "score")]
    with pytest.raises(DuplicateProviderError, match=r"'score'.*'alpha' and 'beta'") as caught:
        DagCompiler().compile(components)
    assert caught.value.providers == ("alpha", "beta")


def test_providing_a_given_kind_is_rejected_as_a_duplicate_provider() -> None:
    with pytest.raises(DuplicateProviderError, match=r"'<given>' and 'numbers'"):
        DagCompiler().compile(arithmetic(), given=frozenset({"n", "numbers"}))


def test_a_cycle_is_rejected_naming_its_components_in_cycle_order() -> None:
    components = [
        step("c", {"b"}, "c"),
        step("a", {"c", "seed"}, "a"),
        step("b", {"a"}, "b"),
        step("seed", set(), "seed"),
    ]
    with pytest.raises(CycleError, match=r"'a' -> 'b' -> 'c' -> 'a'") as caught:
        DagCompiler().compile(components)
    assert caught.value.cycle == ("a", "b", "c")


def test_a_component_requiring_its_own_output_is_a_cycle() -> None:
    with pytest.raises(CycleError, match=r"'loop' -> 'loop'"):
        DagCompiler().compile([step("loop", {"x"}, "x")])


def test_duplicate_component_names_are_rejected() -> None:
    with pytest.raises(DuplicateComponentError, match="'twin'"):
        DagCompiler().compile([step("twin", set(), "a"), step("twin", set(), "b")])


def test_every_topology_error_is_a_dag_error() -> None:
    for error in (
        MissingProviderError,
        DuplicateProviderError,
        CycleError,
        DuplicateComponentError,
    ):
        assert issubclass(error, DagError)


def test_an_object_that_is_not_a_component_is_rejected() -> None:
    with pytest.raises(TypeError, match="not a Component"):
        DagCompiler().compile([object()])  # type: ignore[list-item]
