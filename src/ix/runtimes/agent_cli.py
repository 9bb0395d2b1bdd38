"""`agent-cli`: any agent CLI that takes a prompt and prints JSON events, one per line.

The program runs as the `command` runtime runs one (argv and stdin templated from the case,
no shell, its own process group killed on cancel, an allowlisted environment, the case's
workspace as its folder); its output is then read as events with an `EventMapping`
(`ix.runtimes.agent_events`). A `profile` supplies the defaults for a known CLI, and the
keys given override them (`events` kind by kind; `env_passthrough` adds to the profile's):

- `claude`: `claude -p --output-format stream-json --verbose`, the prompt on stdin, read by
  Claude Code's own parser (`claude_stream`), so the observation is that of `claude-code`
  (which, unlike this profile, isolates the CLI from the user's settings and installs the
  subject's skills). With `events`, the mapping replaces the parser.
- `codex`: `codex exec --json --skip-git-repo-check -`, the prompt on stdin; its events are
  those of codex-rs/exec/src/exec_events.rs (`ThreadEvent`) and its flags those of
  codex-rs/exec/src/cli.rs, in github.com/openai/codex.
- `generic`: no program (give `argv`); a minimal documented JSONL (`GENERIC_EVENTS`).

The trial fails with `agent_error` when the end event says the run failed, `cli_error` when
the program exits non-zero, and `no_end` when it exits 0 without an end event.
"""

import asyncio
import time
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, model_validator

from ix.domain.errors import TrialError
from ix.domain.model import Model
from ix.domain.types import Subject
from ix.eval.models import EvalObservation, ToolCall
from ix.eval.process import MIB
from ix.runtimes._templates import TemplateStr
from ix.runtimes.agent_events import AgentTranscript, EventMapping, read_events
from ix.runtimes.claude_code import stream_observation
from ix.runtimes.claude_stream import parse_stream
from ix.runtimes.command import (
    CommandOptions,
    CommandRuntime,
    EnvName,
    check_argv,
    check_env,
)
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register
from ix.runtimes.sandbox import SandboxOptions

STDERR_TAIL = 1500

#: `{"type": "text", "text": …}`, `{"type": "tool_call", "name": …, "input": {…}, "id": …}`,
#: `{"type": "tool_result", "id": …, "output": …}`, `{"type": "denied", "name": …, "input":
#: {…}}`, `{"type": "usage", "input_tokens": …, "output_tokens": …, "cost_usd": …}` (added
#: up), `{"type": "turn"}`, and last `{"type": "end", "text": …, "is_error": …, "error": …,
#: "turns": …}` (every key but `type` optional).
GENERIC_EVENTS: dict[str, Any] = {
    "text": [{"match": {"type": "text"}, "text": "text"}],
    "tool_call": [{"match": {"type": "tool_call"}, "name": "name", "input": "input",
                   "id": "id", "result": "result"}],
    "tool_result": [{"match": {"type": "tool_result"}, "id": "id", "output": "output"}],
    "denied": [{"match": {"type": "denied"}, "name": "name", "input": "input", "id": "id"}],
    "usage": [{"match": {"type": "usage"}, "input_tokens": "input_tokens",
               "output_tokens": "output_tokens", "cost_usd": "cost_usd"}],
    "turn": [{"match": {"type": "turn"}}],
    "end": [{"match": {"type": "end"}, "text": "text", "is_error": "is_error",
             "error": "error", "turns": "turns"}],
}


def _codex_call(item_type: str, name: str, input_: str | dict[str, str],
                result: str | None = None) -> dict[str, Any]:
    rule = {"match": {"type": "item.completed", "item.type": item_type}, "name": name,
            "input": input_, "id": "item.id"}
    return {**rule, "result": result} if result else rule


#: `codex exec --json` (openai/codex, codex-rs/exec/src/exec_events.rs): `thread.started`,
#: `turn.started`, `item.started|updated|completed` with an `item` of type `agent_message`,
#: `reasoning`, `command_execution`, `file_change`, `mcp_tool_call`, `web_search`,
#: `todo_list` or `error`, then `turn.completed` (with `usage`) or `turn.failed` (`error`).
#: A completed item is counted once (its `item.started` is not a second call); the answer is
#: the last agent message. Codex reports no cost and no turns.
CODEX_EVENTS: dict[str, Any] = {
    "text": [{"match": {"type": "item.completed", "item.type": "agent_message"},
              "text": "item.text"}],
    "tool_call": [
        _codex_call("command_execution", "item.type", {"command": "item.command"},
                    "item.aggregated_output"),
        _codex_call("mcp_tool_call", "item.tool", "item.arguments", "item.result"),
        _codex_call("file_change", "item.type", {"changes": "item.changes"}),
        _codex_call("web_search", "item.type", {"query": "item.query"}),
    ],
    "denied": [{"match": {"type": "item.completed", "item.type": "command_execution",
                          "item.status": "declined"},
                "name": "item.type", "input": {"command": "item.command"}, "id": "item.id"}],
    "usage": [{"match": {"type": "turn.completed"}, "input_tokens": "usage.input_tokens",
               "output_tokens": "usage.output_tokens"}],
    "end": [{"match": {"type": "turn.completed"}},
            {"match": {"type": "turn.failed"}, "is_error": "error", "error": "error.message"}],
    "content": "last",
}

Profile = Literal["claude", "codex", "generic"]
#: Each profile's defaults: argv, stdin, env_passthrough and events (None: Claude Code's parser).
PROFILES: dict[str, dict[str, Any]] = {
    "claude": {"argv": ["claude", "-p", "--output-format", "stream-json", "--verbose"],
               "stdin": "{{ prompt }}",
               "env_passthrough": ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"]},
    "codex": {"argv": ["codex", "exec", "--json", "--skip-git-repo-check", "-"],
              "stdin": "{{ prompt }}",
              "env_passthrough": ["OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL"],
              "events": CODEX_EVENTS},
    "generic": {"events": GENERIC_EVENTS},
}


def _more_args(value: list[str]) -> list[str]:
    return check_argv(value, program=False)


class AgentCliOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    profile: Profile = "generic"
    argv: Annotated[list[str], Field(min_length=1), AfterValidator(check_argv)]
    #: added after `argv` (the profile's command plus a flag or two: `[--model, opus]`)
    extra_args: Annotated[list[str], AfterValidator(_more_args)] = Field(default_factory=list)
    stdin: TemplateStr | None = None
    cwd: str | None = None
    env: Annotated[dict[str, TemplateStr], AfterValidator(check_env)] = \
        Field(default_factory=dict)
    env_passthrough: list[EnvName] = Field(default_factory=list)
    max_output_bytes: int = Field(16 * MIB, ge=1)
    #: the trial fails with `timeout` when the CLI has not finished by then (else the
    #: experiment's `timeout_s` stops it)
    timeout_s: float | None = Field(None, gt=0)
    sandbox: SandboxOptions | None = None
    #: None: the profile's parser (`claude`)
    events: EventMapping | None = None

    @model_validator(mode="before")
    @classmethod
    def _profile_defaults(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        defaults = PROFILES.get(str(data.get("profile", "generic")))
        if defaults is None:
            return data  # the `profile` field says what is allowed
        out = {**defaults, **data}
        base, given = defaults.get("env_passthrough", []), data.get("env_passthrough")
        if isinstance(given, list):  # added to the profile's (a wrong type: its error)
            out["env_passthrough"] = [*base, *(n for n in given if n not in base)]
        events = data.get("events")
        if isinstance(events, Mapping) and defaults.get("events"):
            out["events"] = {**defaults["events"], **events}
        return out


class AgentCliRuntime:
    """One CLI run per trial, its JSON events read into an observation."""

    def __init__(self, options: AgentCliOptions, context: RuntimeContext):
        self.options = options
        self._command = CommandRuntime(CommandOptions(
            argv=[*options.argv, *options.extra_args], stdin=options.stdin, cwd=options.cwd,
            env=options.env, env_passthrough=options.env_passthrough,
            max_output_bytes=options.max_output_bytes, sandbox=options.sandbox), context)
        self.reads_history = self._command.reads_history

    async def invoke(
        self, subject: Subject, stimulus: Any, *, seed: int = 0, attempt: int = 0
    ) -> EvalObservation:
        t0 = time.perf_counter()
        run = self._command.invoke(subject, stimulus, seed=seed, attempt=attempt)
        if self.options.timeout_s is None:
            done = await run
        else:
            try:
                done = await asyncio.wait_for(run, self.options.timeout_s)
            except TimeoutError:
                raise TrialError("timeout", f"{self.options.argv[0]} did not finish within "
                                 f"timeout_s={self.options.timeout_s:g}") from None
        wall_ms = int((time.perf_counter() - t0) * 1000)
        trace = [line for line in (done.stdout or "").splitlines() if line.strip()]
        code = done.exit_code if done.exit_code is not None else -1
        stderr = done.stderr or ""
        if self.options.events is None:  # the claude profile: Claude Code's own parser
            return stream_observation(parse_stream(trace), code, stderr, trace, wall_ms,
                                      {"profile": "claude", **(done.meta or {})})
        events = read_events(trace, self.options.events)
        return self._observation(events, code, stderr, trace, wall_ms, done.meta)

    def _observation(self, events: AgentTranscript, code: int, stderr: str,
                     trace: list[str], wall_ms: int,
                     process_meta: dict[str, Any] | None) -> EvalObservation:
        program = self.options.argv[0]
        tail = stderr.strip()[-STDERR_TAIL:]
        if events.ended and events.is_error:
            raise TrialError("agent_error", events.error or events.content("last") or tail
                             or f"{program} reported an error")
        if code != 0:
            raise TrialError("cli_error", f"{program} exited with code {code}: "
                             f"{tail or 'no output on stderr'}")
        if not events.ended:
            raise TrialError("no_end", f"{program} exited without an end event (read "
                             f"{events.events} event(s)): {tail or 'no output on stderr'}")
        meta: dict[str, Any] = {
            "profile": self.options.profile,
            "num_turns": events.turns,
            "is_error": events.is_error,
            "exit_code": code,
            "events": events.events,
            # how many calls were answered (as the tool loop counts them), and the answers
            "tool_results": sum(c.result is not None for c in events.calls),
            "tool_outputs": [c.result for c in events.calls],
        }
        if events.denied is not None:
            meta["denied"] = [{"tool_name": d.name, "input": d.input,
                               **({"tool_use_id": d.id} if d.id else {})}
                              for d in events.denied]
        if events.other_lines:
            meta["other_lines"] = events.other_lines
        meta.update(process_meta or {})
        return EvalObservation(
            content=events.content(self.options.events.content if self.options.events
                                   else "joined"),
            tool_calls=tuple(ToolCall(name=c.name, input=c.input) for c in events.calls),
            duration_ms=wall_ms,
            tokens_input=events.tokens_input,
            tokens_output=events.tokens_output,
            cost_usd=events.cost_usd,
            exit_code=code,
            stderr=stderr or None,
            meta=meta,
            trace=trace,
        )


register(RuntimeKind(
    name="agent-cli",
    history="template",
    options=AgentCliOptions,
    build=AgentCliRuntime,
    default_concurrency=4,
    summary="any agent CLI that prints JSON events (profiles: claude, codex, generic)",
))
