"""`openai`: a subject behind an OpenAI-compatible Chat Completions API, offered skills.

One request per trial, through the official `openai` SDK (`AsyncOpenAI`, imported only when a
trial runs). `base_url` points it at any compatible server: OpenAI itself, or vLLM, Ollama,
llama.cpp's server, LM Studio (`http://localhost:11434/v1` and the like).

Skills are offered as Claude Code offers them, translated: the `Skill` tool as a function tool
(`_skills.openai_skill_tool`) and the listing (the same system-reminder text) at the start of
the first user message, before the prompt. Every tool call of the answer is a tool call of the
observation, its JSON `arguments` parsed; arguments that are not a JSON object become
`{"_raw": "<the text>"}` and `meta.unparsable_tool_arguments: true`.

Retries, the rate limit, the API key and costs work as in the `anthropic` runtime. The trial
seed (mixed with the attempt) is sent as `seed`, which OpenAI and most local servers honour
on a best-effort basis.
"""

import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import ConfigDict, Field

from ix._lazy import lazy
from ix.domain.errors import TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalObservation, ToolCall, Turn
from ix.runtimes._batch_apis import OpenAIBatches
from ix.runtimes._conversation import history_of, openai_history_tools, openai_messages
from ix.runtimes._seeding import uniform
from ix.runtimes._skills import openai_skill_tool, skill_listing, subject_skills
from ix.runtimes.anthropic import (
    ENV_NAME,
    LoopClient,
    answered,
    as_dict,
    batch_endpoints,
    send_raw,
)
from ix.runtimes.batches import BATCH_DISCOUNT, Batcher, batched
from ix.runtimes.prices import OPENAI, PriceOption, find_price, openai_cost
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register
from ix.runtimes.sdks import require_sdk
from ix.runtimes.tool_loop import (
    Call,
    Result,
    ToolLoopOptions,
    refuse_batched_tools,
)
from ix.runtimes.transport import (
    RateLimiter,
    RateLimitOptions,
    RetryOptions,
)

#: The SDK: imported in the background as a run opens (`ix.runtimes.sdks`), or when a trial
#: first needs it.
openai_sdk = lazy("openai")

SEED_RANGE = 2**31  # what every server accepts (llama.cpp and others take 32-bit seeds)


class OpenAIOptions(RetryOptions, RateLimitOptions, ToolLoopOptions):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key_env: str | None = Field("OPENAI_API_KEY", pattern=ENV_NAME)
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    max_tokens: int = Field(1024, ge=1)
    max_tokens_field: Literal["auto", "max_tokens", "max_completion_tokens"] = "auto"
    seed: bool = True
    system: str | None = None
    tool_choice: Literal["auto", "required", "none"] = "auto"
    prices: dict[str, PriceOption] = Field(default_factory=dict)
    request_timeout_s: float = Field(60.0, gt=0)
    batch: bool = False
    batch_poll_s: float = Field(30.0, gt=0)
    batch_max_requests: int | None = Field(None, ge=1, le=50_000)


def request_seed(seed: int, attempt: int) -> int:
    """The `seed` sent for one attempt of one trial: reproducible, new on a retry."""
    return int(uniform(seed, attempt, 17) * SEED_RANGE)


class OpenAIRuntime:
    """Sends each case's prompt to a chat model with the subject's skills offered."""

    def __init__(self, options: OpenAIOptions, context: RuntimeContext):
        require_sdk("openai", "openai")
        refuse_batched_tools(options)
        self.options = options
        self.limiter = RateLimiter(options.requests_per_minute, options.tokens_per_minute)
        self.client = LoopClient(self._make_client)
        self._batches = batch_endpoints(OpenAIBatches, openai_sdk, self.client, options)
        self.batcher = (Batcher(self._batches, poll_s=options.batch_poll_s,
                                max_requests=options.batch_max_requests)
                        if options.batch else None)

    # --- the request ----------------------------------------------------------------------

    def request_body(self, subject: Subject, prompt: str, history: Sequence[Turn] = (), *,
                     seed: int = 0, attempt: int = 0) -> dict[str, Any]:
        """The JSON body sent for `prompt` after `history` (what the trace records; no
        headers, no key)."""
        opts = self.options
        skills = subject_skills(subject.config)
        messages: list[dict[str, Any]] = []
        if opts.system is not None:
            messages.append({"role": "system", "content": opts.system})
        # strings (every compatible server takes them): the listing, a blank line, the text
        messages += openai_messages(history, prompt, skill_listing(skills))
        body: dict[str, Any] = {"model": opts.model, "messages": messages}
        field = opts.max_tokens_field
        if field == "auto":  # OpenAI's newer models refuse max_tokens; local servers know it
            field = "max_completion_tokens" if opts.base_url is None else "max_tokens"
        body[field] = opts.max_tokens
        tools = ([openai_skill_tool()] if skills else []) + openai_history_tools(history)
        tools += [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                    "parameters": t.input_schema}}
                  for t in opts.tools]
        if tools:
            body["tools"] = tools
        if skills or opts.tools:
            body["tool_choice"] = opts.tool_choice
        if opts.temperature is not None:
            body["temperature"] = opts.temperature
        if opts.seed:
            body["seed"] = request_seed(seed, attempt)
        return body

    def _make_client(self, key: str) -> Any:
        return openai_sdk.AsyncOpenAI(api_key=key, base_url=self.options.base_url, max_retries=0,
                                  timeout=self.options.request_timeout_s)

    async def _send(self, client: Any, body: dict[str, Any]) -> tuple[dict[str, Any], Any, float]:
        return await send_raw(openai_sdk, lambda: client.chat.completions.with_raw_response.create(
            **body), self.limiter, self.options.request_timeout_s)

    # --- one trial ------------------------------------------------------------------------

    async def invoke(self, subject: Subject, stimulus: Any, *, seed: int = 0,
                     attempt: int = 0) -> EvalObservation:
        body = self.request_body(subject, stimulus.prompt, history_of(stimulus), seed=seed,
                                 attempt=attempt)
        skills = [n for n, _ in subject_skills(subject.config)]
        if self.batcher is not None:
            data, waited_ms, trace, block = await batched(
                self.batcher, subject.name, stimulus.id, seed, attempt, body, "/v1/batches")
            return self.observation(data, None, waited_ms, retries=0, skills=skills,
                                    trace=trace, batch=block)
        return await answered(self, "/chat/completions", body, subject, skills, seed=seed,
                              attempt=attempt, calls_of=_function_calls, follow=_follow)

    def observation(self, data: dict[str, Any], headers: Any, elapsed_ms: float, *,
                    retries: int, skills: list[str], trace: list[dict[str, Any]],
                    batch: dict[str, str] | None = None) -> EvalObservation:
        """The observation of one response; `batch`: it came from a batch (billed at the
        batch rate, `meta.batch` says which)."""
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise TrialError("bad_response", "the response has no choices")
        choice = choices[0]
        message = as_dict(choice.get("message"))
        meta: dict[str, Any] = {}
        calls: list[ToolCall] = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            arguments = function.get("arguments")
            parsed = _parse_arguments(arguments)
            if parsed is None:
                parsed = {"_raw": arguments}
                meta["unparsable_tool_arguments"] = True
            calls.append(ToolCall(name=str(function.get("name", "")), input=parsed))
        usage = as_dict(data.get("usage"))
        tokens_in = int(usage.get("prompt_tokens") or 0)
        tokens_out = int(usage.get("completion_tokens") or 0)
        cached = int(as_dict(usage.get("prompt_tokens_details")).get("cached_tokens") or 0)
        self.limiter.spent(tokens_in + tokens_out)
        model = str(data.get("model") or self.options.model)
        meta = {"model": model, "stop_reason": choice.get("finish_reason"),
                "skills_offered": skills, **meta}
        request_id = headers.get("x-request-id") if headers is not None else None
        if request_id:
            meta["request_id"] = request_id
        if retries:
            meta["retries"] = retries
        if cached:
            meta["cached_tokens"] = cached
        if message.get("refusal"):
            meta["refusal"] = message["refusal"]
        if not usage:
            meta["usage_missing"] = True
        if batch is not None:
            meta["batch"] = batch
        price = find_price(OPENAI, self.options.prices, self.options.model, model)
        cost = 0.0
        if price is None:
            meta["price_unknown"] = True
        else:
            cost = openai_cost(price, prompt_tokens=tokens_in, completion_tokens=tokens_out,
                               cached_tokens=cached)
            if batch is not None:
                cost *= BATCH_DISCOUNT
        content = message.get("content")
        return EvalObservation(
            content=content if isinstance(content, str) else "", tool_calls=tuple(calls),
            duration_ms=round(elapsed_ms), tokens_input=tokens_in, tokens_output=tokens_out,
            cost_usd=round(cost, 9), meta=meta, trace=trace)


def _function_calls(data: dict[str, Any]) -> list[Call]:
    """The function calls a response asks to be answered."""
    choices = data.get("choices") or [{}]
    message = as_dict(as_dict(choices[0]).get("message"))
    out: list[Call] = []
    for call in message.get("tool_calls") or []:
        function = as_dict(as_dict(call).get("function"))
        out.append((str(as_dict(call).get("id", "")), str(function.get("name", "")),
                    _parse_arguments(function.get("arguments")) or {}))
    return out


def _follow(body: dict[str, Any], data: dict[str, Any],
            results: list[Result]) -> dict[str, Any]:
    """The next request: the answer as the assistant's message, then a `tool` message per
    call (an error's text says so: Chat Completions has no error flag)."""
    message = as_dict(as_dict((data.get("choices") or [{}])[0]).get("message"))
    said = {k: message[k] for k in ("role", "content", "tool_calls") if k in message}
    return {**body, "messages": [
        *body["messages"], {**said, "role": "assistant"},
        *({"role": "tool", "tool_call_id": call_id, "content": text}
          for call_id, text, _ in results)]}


def _parse_arguments(arguments: Any) -> dict[str, Any] | None:
    """A tool call's arguments as a dict; None when they are not a JSON object."""
    if isinstance(arguments, dict):  # some servers send an object instead of a string
        return arguments
    if not isinstance(arguments, str):
        return None
    if not arguments.strip():
        return {}  # no arguments at all
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


register(RuntimeKind(
    name="openai",
    spends_tokens=True,
    history="sent",
    options=OpenAIOptions,
    build=OpenAIRuntime,
    default_concurrency=8,
    summary="a chat model via an OpenAI-compatible API (OpenAI, vLLM, Ollama, llama.cpp, "
            "LM Studio); skills offered as a Skill function tool",
))
