"""The turns of a conversation as a user wrote them (a case's `history`, a context prefix),
checked for an order a conversation can have (DESIGN.md §7)."""

from collections.abc import Sequence
from pathlib import Path

from ix.domain.errors import ConfigError
from ix.eval.models import HistoryToolCall, Turn
from ix.lab.schema import TurnSpec

__all__ = ["turns_of"]


def turns_of(turns: Sequence[TurnSpec], file: Path | str) -> tuple[Turn, ...]:
    """A case's `history` as turns, in an order a conversation can have: it opens with the
    user; each turn is the user's or the assistant's, never empty; only the assistant makes
    tool calls; and the assistant speaks twice in a row only when the first time made tool
    calls (their results come in between)."""
    out: list[Turn] = []
    for i, t in enumerate(turns):
        field = f"history[{i}]"
        if (t.user is None) == (t.assistant is None):
            raise ConfigError("a turn is either `user: <text>` or `assistant: <text>`, not "
                              f"{'both' if t.user is not None else 'neither'}",
                              file=file, field=field)
        calls = tuple(HistoryToolCall(name=c.name, input=c.input, result=c.result)
                      for c in t.tool_calls or ())
        if t.user is not None:
            if t.tool_calls is not None:
                raise ConfigError("only an assistant turn makes tool calls", file=file,
                                  field=f"{field}.tool_calls")
            if not t.user.strip():
                raise ConfigError("an empty user turn", file=file, field=f"{field}.user")
            out.append(Turn(role="user", content=t.user))
            continue
        assert t.assistant is not None
        if not t.assistant.strip() and not calls:
            raise ConfigError("an empty assistant turn: give its text or its tool_calls",
                              file=file, field=f"{field}.assistant")
        if not out:
            raise ConfigError("the conversation opens with a user turn", file=file,
                              field=field)
        if out[-1].role == "assistant" and not out[-1].tool_calls:
            raise ConfigError("two assistant turns in a row: the first must have made tool "
                              "calls (their results come in between)", file=file, field=field)
        out.append(Turn(role="assistant", content=t.assistant, tool_calls=calls))
    return tuple(out)
