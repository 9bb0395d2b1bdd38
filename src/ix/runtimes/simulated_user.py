"""A conversation with a simulated user (DESIGN.md §11, docs/agents.md): a case's `user:`
({persona, goal, max_turns, stop_when}) played by the experiment's `simulated_user` runtime.

The case's prompt opens the conversation. The subject answers (through its own runtime, the
conversation so far as the case's `history`); the user, shown its persona, its goal and the
conversation, writes the next message; and so on until the user says `stop_when` (the goal
reached), `[GIVE UP]`, or the subject has answered `max_turns` times. The trial is one
observation: the subject's last answer, every tool call it made in any turn, its tokens and
cost summed (the user's apart, in `meta.user`), `meta.turns` (the subject's answers),
`meta.stop` (`goal`, `gave_up` or `max_turns`), `meta.conversation` (both sides, in
order) and a trace holding each side's turns, so the transcript sensors, `user_goal` and a
judge with `inputs: [transcript]` read the whole dialogue. Cached as one trial (the cache
wraps this runtime), so a replayed run reproduces both sides.

The subject is given earlier turns as text: the tool calls it made in a turn are in the
observation and the trace, not replayed to it as history.
"""

from collections.abc import Sequence
from typing import Any

from ix.domain.types import Subject
from ix.eval.models import EvalCase, EvalObservation, SimulatedUser, Turn
from ix.runtimes._seeding import own_stream
from ix.runtimes.registry import ExperimentRuntime

GIVE_UP = "[GIVE UP]"
#: Who the user runtime plays, as its templates see it (`{{ subject.name }}`).
USER = Subject(name="simulated-user")


def user_prompt(user: SimulatedUser, conversation: Sequence[dict[str, Any]]) -> str:
    """What the simulated user is asked at each turn: who it is, what it wants, what was
    said, and how to end."""
    said = "\n\n".join(f"{m['role'].upper()}: {m['content']}" for m in conversation)
    persona = f"You are this person: {user.persona}\n" if user.persona else ""
    return (f"You are simulating a user talking to an assistant.\n{persona}"
            f"Your goal: {user.goal}\n\nThe conversation so far:\n\n{said}\n\n"
            "Write only the user's next message. When your goal is reached, reply with "
            f"exactly {user.stop_when}. If it cannot be reached, reply with exactly "
            f"{GIVE_UP}.")


class SimulatedUserRuntime:
    """The subject's runtime, in conversation with a simulated user for a case with `user:`;
    any other case goes to the subject's runtime as it is."""

    def __init__(self, agent: ExperimentRuntime, user: ExperimentRuntime):
        self.agent = agent
        self.user = user

    def __getattr__(self, name: str) -> Any:  # anything else a runtime offers: the agent's
        return getattr(self.agent, name)

    async def invoke(self, subject: Subject, stimulus: Any, *, seed: int = 0,
                     attempt: int = 0) -> Any:
        user = getattr(stimulus, "user", None)
        if user is None:
            return await self.agent.invoke(subject, stimulus, seed=seed, attempt=attempt)
        case: EvalCase = stimulus
        history = list(case.history)
        conversation: list[dict[str, Any]] = []
        steps: list[EvalObservation] = []
        trace: list[Any] = []
        user_usage = {"tokens_input": 0, "tokens_output": 0, "cost_usd": 0.0}
        message, stop = case.prompt, "max_turns"
        for turn in range(user.max_turns):
            step_seed = seed if turn == 0 else own_stream(seed, f"turn-{turn}")
            asked = case.model_copy(update={"history": tuple(history), "prompt": message,
                                            "user": None})
            answer = await self.agent.invoke(subject, asked, seed=step_seed, attempt=attempt)
            steps.append(answer)
            conversation += [{"role": "user", "content": message},
                             {"role": "assistant", "content": answer.content,
                              "tool_calls": [c.name for c in answer.tool_calls]}]
            trace += [{"type": "user", "content": message}, *_as_list(answer.trace),
                      {"type": "assistant", "content": answer.content}]
            history += [Turn(role="user", content=message),
                        Turn(role="assistant", content=answer.content)]
            if turn == user.max_turns - 1:
                break
            reply = await self.user.invoke(
                USER, EvalCase(id=f"{case.id}:user", prompt=user_prompt(user, conversation),
                               expectation="acceptable"),
                seed=own_stream(seed, f"user-{turn}"), attempt=attempt)
            for key in user_usage:
                user_usage[key] += getattr(reply, key, 0) or 0
            message = (getattr(reply, "content", "") or "").strip()
            if message == user.stop_when or message.endswith(user.stop_when):
                stop = "goal"
            elif GIVE_UP in message:
                stop = "gave_up"
            else:
                continue
            conversation.append({"role": "user", "content": message})
            trace.append({"type": "user", "content": message})
            break
        return _merged(steps, conversation, trace, stop, user_usage)


def _as_list(trace: Any) -> list[Any]:
    if trace is None:
        return []
    return list(trace) if isinstance(trace, list | tuple) else [trace]


def _merged(steps: Sequence[EvalObservation], conversation: list[dict[str, Any]],
            trace: list[Any], stop: str, user_usage: dict[str, Any]) -> EvalObservation:
    last = steps[-1]
    inner = sum(int((s.meta or {}).get("turns") or 1) for s in steps)
    meta = {**(last.meta or {}), "turns": len(steps), "model_calls": inner, "stop": stop,
            "conversation": conversation,
            "user": {**user_usage, "cost_usd": round(user_usage["cost_usd"], 9)}}
    return EvalObservation(
        content=last.content, tool_calls=tuple(c for s in steps for c in s.tool_calls),
        duration_ms=sum(s.duration_ms for s in steps),
        tokens_input=sum(s.tokens_input for s in steps),
        tokens_output=sum(s.tokens_output for s in steps),
        cost_usd=round(sum(s.cost_usd for s in steps), 9), meta=meta, trace=trace)


__all__ = ["GIVE_UP", "SimulatedUserRuntime", "user_prompt"]
