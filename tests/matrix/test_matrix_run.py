import asyncio
from typing import Any

import pytest
from matrix_support import arithmetic, diamond, run_clean, step

from ix.matrix import Artifact, ComponentError, Construct, DagCompiler, Orchestrator

N = frozenset({"n"})


def test_run_appends_one_artifact_per_component_in_level_order() -> None:
    done = run_clean(Orchestrator(arithmetic(), given=N).run(Construct.seeded(3, {"n": 3})))
    assert done.data("numbers") == [1, 2, 3]
    assert done.data("squares") == [1, 4, 9]
    assert done.data("sum") == 14
    assert [(a.kind, a.producer) for a in done.artifacts[1:]] == [
        ("numbers", "numbers"),
        ("squares", "squares"),
        ("sum", "sum"),
    ]


def test_run_leaves_the_input_construct_unchanged() -> None:
    seed = Construct.seeded(3, {"n": 3})
    run_clean(Orchestrator(arithmetic(), given=N).run(seed))
    assert seed.kinds == {"n"}


def test_an_orchestrator_accepts_a_compiled_dag() -> None:
    dag = DagCompiler().compile(diamond())
    done = run_clean(Orchestrator(dag).run(Construct(2)))
    assert done.data("joined") == 3 + 20
    assert [a.producer for a in done.artifacts] == ["source", "left", "right", "join"]


def test_a_conflicting_given_next_to_a_dag_is_rejected() -> None:
    dag = DagCompiler().compile(arithmetic(), given=N)
    with pytest.raises(ValueError, match="conflicts"):
        Orchestrator(dag, given=frozenset({"other"}))


def test_independent_components_in_one_level_run_concurrently() -> None:
    # Each waits for an event only the other sets: run one after the other, they deadlock.
    async def main() -> Construct[Any]:
        ping, pong = asyncio.Event(), asyncio.Event()

        async def serve(construct: Construct[Any]) -> str:
            ping.set()
            await pong.wait()
            return "served"

        async def answer(construct: Construct[Any]) -> str:
            pong.set()
            await ping.wait()
            return "answered"

        graph = [step("serve", set(), "serve", serve), step("answer", set(), "answer", answer)]
        return await asyncio.wait_for(Orchestrator(graph).run(Construct("s")), timeout=5)

    done = run_clean(main())
    assert [a.producer for a in done.artifacts] == ["answer", "serve"]  # name order, not finish


def test_a_failing_component_raises_component_error_with_name_partial_construct_and_cause() -> None:
    def explode(construct: Construct[Any]) -> Any:
        raise ValueError("no squares today")

    graph = [*arithmetic()[:2], step("squares", {"numbers"}, "squares", explode)]
    with pytest.raises(ComponentError, match=r"'squares'.*no squares today") as caught:
        run_clean(Orchestrator(graph, given=N).run(Construct.seeded(3, {"n": 3})))
    error = caught.value
    assert error.component == "squares"
    assert isinstance(error.__cause__, ValueError)
    assert error.construct.has("numbers") and not error.construct.has("squares")


def test_a_failure_in_a_parallel_level_keeps_the_siblings_artifacts() -> None:
    def explode(construct: Construct[Any]) -> Any:
        raise RuntimeError("right is wrong")

    graph = [c for c in diamond() if c.name != "right"]
    graph.append(step("right", {"source"}, "right", explode))
    with pytest.raises(ComponentError) as caught:
        run_clean(Orchestrator(graph).run(Construct(1)))
    assert caught.value.component == "right"
    assert caught.value.construct.kinds == {"source", "left"}


def test_the_sink_receives_every_artifact_with_the_construct_it_joined() -> None:
    received: list[tuple[Artifact, Construct[Any]]] = []

    class Recorder:
        def write(self, artifact: Artifact, construct: Construct[Any]) -> None:
            received.append((artifact, construct))

    done = run_clean(Orchestrator(diamond(), sink=Recorder()).run(Construct(1)))
    assert [artifact for artifact, _ in received] == list(done.artifacts)
    assert all(construct.get(a.kind) is a for a, construct in received)
