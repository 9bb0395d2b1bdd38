"""A case's conversation at the wire: its `history` (DESIGN.md §7) as the prior messages of
the Messages API and of Chat Completions, then the prompt.

The skill listing opens the conversation, as Claude Code's system reminder does: it is
prepended to the first user message, so the longer the history, the further back it sits.
An assistant turn's tool calls become `tool_use` blocks answered by `tool_result` blocks
(function calls answered by `tool` messages for OpenAI), with ids made from the turn's and
the call's positions; the tools they name are offered with a permissive input schema, since
an API refuses tool calls of tools it was not given (Claude Code offers them too).
Consecutive user content (a user turn after tool results, the prompt after a user turn) is
one message, as the Messages API wants roles to alternate.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ix.eval.models import Turn
from ix.runtimes._skills import SKILL_TOOL_NAME

__all__ = ["anthropic_history", "anthropic_history_tools", "anthropic_messages", "history_of",
           "history_tools", "openai_history_tools", "openai_messages"]

#: What an offered history tool says of itself: the model should know it exists, no more.
_HISTORY_TOOL = "A tool used earlier in this conversation."


def history_of(stimulus: Any) -> Sequence[Turn]:
    """The turns before `stimulus`'s prompt: a case's `history`, none for anything else."""
    history = getattr(stimulus, "history", ())
    return history if isinstance(history, tuple) else ()


def history_tools(history: Sequence[Turn]) -> list[str]:
    """The tools the history's assistant turns called, in first-use order (not the Skill
    tool: a subject with skills offers it already, and one without has none to call)."""
    names = dict.fromkeys(c.name for t in history for c in t.tool_calls)
    names.pop(SKILL_TOOL_NAME, None)
    return list(names)


def anthropic_messages(history: Sequence[Turn], prompt: str,
                       listing: str | None) -> list[dict[str, Any]]:
    """The Messages API's `messages`: the history, then the prompt as the last user
    message; the listing first. Without history: one user message, [listing, prompt]."""
    messages = _anthropic(history, listing)
    _user(messages, [{"type": "text", "text": prompt}])
    return messages


def anthropic_history(history: Sequence[Turn]) -> list[dict[str, Any]]:
    """The history alone as Messages API messages (what a Claude Code session transcript
    holds before the prompt)."""
    return _anthropic(history, None)


def _user(messages: list[dict[str, Any]], blocks: list[dict[str, Any]]) -> None:
    """Add user content: to the last message if it is the user's (roles alternate)."""
    if messages and messages[-1]["role"] == "user":
        messages[-1]["content"].extend(blocks)
    else:
        messages.append({"role": "user", "content": blocks})


def _anthropic(history: Sequence[Turn], listing: str | None) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if listing:
        _user(messages, [{"type": "text", "text": listing}])
    for i, turn in enumerate(history):
        if turn.role == "user":
            _user(messages, [{"type": "text", "text": turn.content}])
            continue
        ids = [f"toolu_ix_{i}_{j}" for j in range(len(turn.tool_calls))]
        content: list[dict[str, Any]] = (
            [{"type": "text", "text": turn.content}] if turn.content.strip() else [])
        content += [{"type": "tool_use", "id": id_, "name": c.name, "input": c.input}
                    for id_, c in zip(ids, turn.tool_calls, strict=True)]
        messages.append({"role": "assistant", "content": content})
        if turn.tool_calls:
            _user(messages, [{"type": "tool_result", "tool_use_id": id_, "content": c.result}
                             for id_, c in zip(ids, turn.tool_calls, strict=True)])
    return messages


def anthropic_history_tools(history: Sequence[Turn]) -> list[dict[str, Any]]:
    """The Messages API tool definitions of `history_tools`."""
    return [{"name": name, "description": _HISTORY_TOOL, "input_schema": {"type": "object"}}
            for name in history_tools(history)]


def openai_messages(history: Sequence[Turn], prompt: str,
                    listing: str | None) -> list[dict[str, Any]]:
    """Chat Completions' user, assistant and tool messages: the history, then the prompt;
    the listing, a blank line, then the first user message's text."""
    messages: list[dict[str, Any]] = []

    def user(text: str) -> None:
        first = not any(m["role"] == "user" for m in messages)
        content = f"{listing}\n\n{text}" if listing and first else text
        messages.append({"role": "user", "content": content})

    for i, turn in enumerate(history):
        if turn.role == "user":
            user(turn.content)
            continue
        message: dict[str, Any] = {"role": "assistant", "content": turn.content or None}
        ids = [f"call_ix_{i}_{j}" for j in range(len(turn.tool_calls))]
        if turn.tool_calls:
            message["tool_calls"] = [
                {"id": id_, "type": "function",
                 "function": {"name": c.name, "arguments": json.dumps(c.input)}}
                for id_, c in zip(ids, turn.tool_calls, strict=True)]
        messages.append(message)
        messages += [{"role": "tool", "tool_call_id": id_, "content": c.result}
                     for id_, c in zip(ids, turn.tool_calls, strict=True)]
    user(prompt)
    return messages


def openai_history_tools(history: Sequence[Turn]) -> list[dict[str, Any]]:
    """The Chat Completions function tools of `history_tools`."""
    return [{"type": "function", "function": {"name": name, "description": _HISTORY_TOOL,
                                              "parameters": {"type": "object"}}}
            for name in history_tools(history)]
