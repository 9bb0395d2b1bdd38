"""The one thing agent-backed components need from an LLM backend."""

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class AgentRuntime(Protocol):
    """Sends a system prompt and chat messages to some model and returns its text reply.

    Kept this narrow so components stay backend-agnostic: any API client, CLI wrapper or
    test double that can answer a conversation fits.

    ix's own components do not use it (runtimes implement `ix.domain.ExperimentRuntime`, which
    takes a subject and a stimulus); it is kept because DESIGN.md §1 names it as part of
    `ix.matrix`'s public surface, the seam for agent-backed components of other kinds.
    """

    async def invoke(self, system: str, messages: list[dict[str, Any]]) -> str: ...
