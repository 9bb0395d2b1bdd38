from pathlib import Path
from typing import Any

from matrix_support import step

from ix.matrix import AgentRuntime, ArtifactSink, Component, Construct, JsonDirectorySink


class Plain:
    """A component written without any ix base class, attributes only."""

    name = "plain"
    requires: frozenset[str] = frozenset()
    provides = "plain"

    async def run(self, construct: Construct[Any]) -> int:
        return 1


class NoRun:
    name = "half"
    requires: frozenset[str] = frozenset()
    provides = "half"


def test_any_object_with_name_requires_provides_and_run_is_a_component() -> None:
    assert isinstance(Plain(), Component)
    assert isinstance(step("s", set(), "k"), Component)


def test_an_object_missing_run_is_not_a_component() -> None:
    assert not isinstance(NoRun(), Component)


def test_json_directory_sink_is_an_artifact_sink(tmp_path: Path) -> None:
    assert isinstance(JsonDirectorySink(tmp_path, lambda a, c: a.id), ArtifactSink)


def test_an_object_with_invoke_is_an_agent_runtime() -> None:
    class Echo:
        async def invoke(self, system: str, messages: list[dict[str, Any]]) -> str:
            return messages[-1]["content"]

    assert isinstance(Echo(), AgentRuntime)
    assert not isinstance(object(), AgentRuntime)
