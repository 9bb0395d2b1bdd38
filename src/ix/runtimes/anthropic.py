"""`anthropic`: a subject behind the Anthropic Messages API, offered skills as Claude Code does.

One request per trial (a loop of them for a subject with `tools:`, `ix.runtimes.tool_loop`),
through the official `anthropic` SDK (`AsyncAnthropic`, imported only
when a trial runs). The subject's skills are offered the Claude Code way (`_skills.py`): the
`Skill` tool plus the listing as a system-reminder block at the start of the first user turn;
a subject without skills gets neither. Every `tool_use` block of the answer is a tool call of
the observation, so the activation sensor reads it like a Claude Code transcript.

Retries are ours, not the SDK's (`max_retries=0`): 429, 5xx, 529 overloaded, timeouts and
dropped connections are retried with `with_retries` (exponential backoff, jitter from the
trial seed, `retry-after` honoured); any other 4xx fails the trial at once (`bad_request`).
The API key is read from the environment variable named by `api_key_env` when a trial runs;
it is never logged, traced or written into results.
"""

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import Any, Literal, TypeVar

from pydantic import ConfigDict, Field, model_validator

from ix._lazy import lazy
from ix.domain.errors import TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalObservation, ToolCall, Turn
from ix.runtimes._batch_apis import AnthropicBatches, OpenAIBatches
from ix.runtimes._conversation import anthropic_history_tools, anthropic_messages, history_of
from ix.runtimes._seeding import own_stream
from ix.runtimes._skills import anthropic_skill_tool, skill_listing, subject_skills
from ix.runtimes.batches import BATCH_DISCOUNT, Batcher, batched
from ix.runtimes.prices import ANTHROPIC, PriceOption, anthropic_cost, find_price
from ix.runtimes.providers import (
    Provider,
    anthropic_client,
    check_provider,
    cloud_defaults,
    require_provider,
)
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register
from ix.runtimes.sdks import require_sdk
from ix.runtimes.tool_loop import (
    Call,
    Result,
    ToolLoopOptions,
    refuse_batched_tools,
    tool_loop,
)
from ix.runtimes.transport import (
    RateLimiter,
    RateLimitOptions,
    RetryOptions,
    Transient,
    status_error,
    with_retries,
)

#: The SDK (1-2 s to import): imported in the background as a run opens
#: (`ix.runtimes.sdks`), or when a trial first needs it.
anthropic_sdk = lazy("anthropic")

MAX_ERROR_BODY = 500
#: `api_key_env` names a variable; a key pasted there by mistake fails validation instead of
#: travelling into error messages.
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


async def exchange(send: Callable[[], Awaitable[tuple[dict[str, Any], Any, float]]], url: str,
                   body: dict[str, Any], options: RetryOptions, *, seed: int, attempt: int,
                   key: str | None = None
                   ) -> tuple[dict[str, Any], Any, float, int, list[dict[str, Any]]]:
    """`send` with our retries, and the trial's trace of it: the request (no headers, so
    no key), each retry, the response. Returns (data, headers, ms, retries, trace). The
    `key` (and any secret-named environment value) is redacted from every error message: a
    server may echo it back."""
    trace: list[dict[str, Any]] = [{"type": "request", "url": url, "body": body}]
    retries = 0

    def on_retry(n: int, exc: Transient) -> None:
        nonlocal retries
        retries = n
        trace.append({"type": "retry", "retry": n, "kind": exc.kind, "message": exc.message,
                      "retry_after_s": exc.retry_after_s})

    data, headers, elapsed_ms = await with_retries(send, options, seed=seed, attempt=attempt,
                                                   on_retry=on_retry, secrets=[key])
    trace.append({"type": "response", "status": 200, "body": data})
    return data, headers, elapsed_ms, retries, trace


async def send_raw(sdk: Any, create: Callable[[], Awaitable[Any]], limiter: RateLimiter,
                   timeout_s: float) -> tuple[dict[str, Any], Any, float]:
    """One request through an official SDK (anthropic or openai: the same error classes),
    rate-limited, its failures mapped to ours: transient ones retried by the caller."""
    await limiter.acquire()
    t0 = time.perf_counter()
    try:
        raw = await create()
    except sdk.APIStatusError as exc:
        raise status_error(exc.status_code, error_message(exc.body, exc.message),
                           retry_after_s(exc.response.headers)) from None
    except sdk.APITimeoutError:
        raise Transient("http_timeout",
                        f"no response within request_timeout_s={timeout_s:g}") from None
    except sdk.APIConnectionError as exc:
        raise Transient("connection_error", f"{exc.message} ({exc.__cause__!r})") from None
    elapsed_ms = (time.perf_counter() - t0) * 1000
    try:
        data = raw.http_response.json()
    except ValueError as exc:
        raise TrialError("bad_response", f"the response is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise TrialError("bad_response", "the response is not a JSON object")
    return data, raw.http_response.headers, elapsed_ms


class AnthropicOptions(RetryOptions, RateLimitOptions, ToolLoopOptions):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key_env: str | None = Field("ANTHROPIC_API_KEY", pattern=ENV_NAME)
    temperature: float | None = Field(None, ge=0.0, le=1.0)
    max_tokens: int = Field(1024, ge=1)
    system: str | None = None
    tool_choice: Literal["auto", "any", "none"] = "auto"
    prices: dict[str, PriceOption] = Field(default_factory=dict)
    request_timeout_s: float = Field(60.0, gt=0)
    batch: bool = False
    batch_poll_s: float = Field(30.0, gt=0)
    batch_max_requests: int | None = Field(None, ge=1, le=100_000)
    provider: Provider = "anthropic"  # where the requests go: `ix.runtimes.providers`
    aws_region: str | None = Field(None, min_length=1)  # bedrock
    project_id: str | None = Field(None, min_length=1)  # vertex
    region: str | None = Field(None, min_length=1)  # vertex
    _cloud_defaults = model_validator(mode="before")(cloud_defaults)
    _check_provider = model_validator(mode="after")(check_provider)


def api_key(env_name: str | None) -> str:
    """The key from the environment (read now, never stored in options or traces)."""
    if env_name is None:  # a local server that wants no key: the SDK still needs one
        return "unused"
    value = os.environ.get(env_name)
    if not value:
        raise TrialError("missing_api_key", f"environment variable {env_name} is not set "
                         "(it must hold the API key)")
    return value


def retry_after_s(headers: Any) -> float | None:
    """Seconds from `retry-after-ms` or `retry-after` (a number of seconds), if present."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return max(0.0, float(value) / scale)
            except ValueError:
                continue  # an HTTP date: fall back to our own backoff
    return None


def error_message(body: Any, fallback: str) -> str:
    """The API's own error message from an error body, else `fallback`; kept short."""
    message = fallback
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            message = inner["message"]
            if isinstance(inner.get("type"), str):
                message = f"{inner['type']}: {message}"
    return message[:MAX_ERROR_BODY]


def as_dict(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (servers vary in what they omit)."""
    return value if isinstance(value, dict) else {}


class LoopClient:
    """One SDK client per runtime: made lazily inside the running event loop, remade when the
    loop (a new `asyncio.run`) or the key changes, and closed when its loop shuts down.

    The engine has no close hook, so the client rides on one the loop has: `asyncio.run`
    closes every live async generator before closing the loop (`shutdown_asyncgens`), and a
    parked generator's `finally` closes the client's connection pool then.
    """

    def __init__(self, make: Callable[[str], Any]):
        self._make = make
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._key: str | None = None
        self._closers: list[AsyncGenerator[None, None]] = []

    async def get(self, key: str) -> Any:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop or self._key != key:
            if self._loop is not loop:
                self._closers.clear()  # those loops have ended and closed their clients
            client = self._make(key)
            closer = _close_at_loop_end(client)
            await anext(closer)  # parks; registered with this loop's shutdown_asyncgens
            self._closers.append(closer)
            self._client, self._loop, self._key = client, loop, key
        return self._client


async def _close_at_loop_end(client: Any) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            await client.close()


P = TypeVar("P", AnthropicBatches, OpenAIBatches)


def batch_endpoints(make: Callable[[Any, Any, RetryOptions, str | None], P], sdk: Any,
                    client: LoopClient, options: Any) -> Callable[[], Awaitable[P]]:
    """A runtime's batch endpoints (`make`: the provider's) on its client of the running
    loop, made again when the client is (a new loop, a new key)."""
    made: list[P] = []

    async def endpoints() -> P:
        key = api_key(options.api_key_env)
        current = await client.get(key)
        if not made or made[0].client is not current:
            made[:] = [make(sdk, current, options,
                            key if options.api_key_env is not None else None)]
        return made[0]

    return endpoints


async def answered(runtime: Any, path: str, body: dict[str, Any], subject: Subject,
                   skills: list[str], *, seed: int, attempt: int,
                   calls_of: Callable[[dict[str, Any]], list[Call]],
                   follow: Callable[[dict[str, Any], dict[str, Any], list[Result]],
                                    dict[str, Any]]) -> EvalObservation:
    """One trial of an API runtime (`anthropic`, `openai`): one request at `path` and its
    observation, or, for a subject with `tools:`, the tool loop of them."""
    opts = runtime.options
    key = api_key(opts.api_key_env)
    client = await runtime.client.get(key)

    async def send(body: dict[str, Any]) -> tuple[dict[str, Any], EvalObservation]:
        data, headers, elapsed_ms, retries, trace = await exchange(
            lambda: runtime._send(client, body), f"{str(client.base_url).rstrip('/')}{path}",
            body, opts, seed=own_stream(seed, subject.name), attempt=attempt,
            key=key if opts.api_key_env is not None else None)
        return data, runtime.observation(data, headers, elapsed_ms, retries=retries,
                                         skills=skills, trace=trace)

    if not opts.tools:  # one request, its answer the trial's
        return (await send(body))[1]
    return await tool_loop(body, subject=subject, options=opts, send=send,
                           calls_of=calls_of, follow=follow)


class AnthropicRuntime:
    """Sends each case's prompt to a Claude model with the subject's skills offered."""

    def __init__(self, options: AnthropicOptions, context: RuntimeContext):
        require_sdk("anthropic", "anthropic")
        require_provider(options.provider)
        refuse_batched_tools(options)
        self.options = options
        self.limiter = RateLimiter(options.requests_per_minute, options.tokens_per_minute)
        self.client = LoopClient(self._make_client)
        self._batches = batch_endpoints(AnthropicBatches, anthropic_sdk, self.client, options)
        self.batcher = (Batcher(self._batches, poll_s=options.batch_poll_s,
                                max_requests=options.batch_max_requests)
                        if options.batch else None)

    # --- the request ----------------------------------------------------------------------

    def request_body(self, subject: Subject, prompt: str,
                     history: Sequence[Turn] = ()) -> dict[str, Any]:
        """The JSON body sent for `prompt` after `history` (what the trace records; no
        headers, no key)."""
        opts = self.options
        skills = subject_skills(subject.config)
        body: dict[str, Any] = {
            "model": opts.model, "max_tokens": opts.max_tokens,
            "messages": anthropic_messages(history, prompt, skill_listing(skills))}
        if opts.system is not None:
            body["system"] = opts.system
        tools = ([anthropic_skill_tool()] if skills else []) + anthropic_history_tools(history)
        tools += [{"name": t.name, "description": t.description,
                   "input_schema": t.input_schema} for t in opts.tools]
        if tools:
            body["tools"] = tools
        if skills or opts.tools:
            body["tool_choice"] = {"type": opts.tool_choice}
        if opts.temperature is not None:
            body["temperature"] = opts.temperature
        return body

    def _make_client(self, key: str) -> Any:
        return anthropic_client(anthropic_sdk, self.options, key)

    async def _send(self, client: Any, body: dict[str, Any]) -> tuple[dict[str, Any], Any, float]:
        kwargs = {k: v for k, v in body.items() if k != "temperature"}
        if "temperature" in body:  # not a typed parameter of every SDK version
            kwargs["extra_body"] = {"temperature": body["temperature"]}
        return await send_raw(anthropic_sdk, lambda: client.messages.with_raw_response.create(
            **kwargs), self.limiter, self.options.request_timeout_s)

    # --- one trial ------------------------------------------------------------------------

    async def invoke(self, subject: Subject, stimulus: Any, *, seed: int = 0,
                     attempt: int = 0) -> EvalObservation:
        body = self.request_body(subject, stimulus.prompt, history_of(stimulus))
        skills = [n for n, _ in subject_skills(subject.config)]
        if self.batcher is not None:
            data, waited_ms, trace, block = await batched(
                self.batcher, subject.name, stimulus.id, seed, attempt, body,
                "/v1/messages/batches")
            return self.observation(data, None, waited_ms, retries=0, skills=skills,
                                    trace=trace, batch=block)
        return await answered(self, "/v1/messages", body, subject, skills, seed=seed,
                              attempt=attempt, calls_of=_tool_uses, follow=_follow)

    def observation(self, data: dict[str, Any], headers: Any, elapsed_ms: float, *,
                    retries: int, skills: list[str], trace: list[dict[str, Any]],
                    batch: dict[str, str] | None = None) -> EvalObservation:
        """The observation of one response; `batch`: it came from a batch (billed at the
        batch rate, `meta.batch` says which)."""
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in data.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                raw_input = block.get("input")
                calls.append(ToolCall(name=str(block.get("name", "")),
                                      input=raw_input if isinstance(raw_input, dict)
                                      else {"_raw": raw_input}))
        usage = as_dict(data.get("usage"))
        tokens_in = int(usage.get("input_tokens") or 0)
        tokens_out = int(usage.get("output_tokens") or 0)
        cache_write = int(usage.get("cache_creation_input_tokens") or 0)
        cache_read = int(usage.get("cache_read_input_tokens") or 0)
        self.limiter.spent(tokens_in + cache_write + cache_read + tokens_out)
        model = str(data.get("model") or self.options.model)
        meta: dict[str, Any] = {"model": model, "stop_reason": data.get("stop_reason"),
                                "skills_offered": skills}
        request_id = headers.get("request-id") if headers is not None else None
        if request_id:
            meta["request_id"] = request_id
        if retries:
            meta["retries"] = retries
        if cache_write or cache_read:
            meta["cache_creation_input_tokens"] = cache_write
            meta["cache_read_input_tokens"] = cache_read
        if not usage:
            meta["usage_missing"] = True
        if batch is not None:
            meta["batch"] = batch
        price = find_price(ANTHROPIC, self.options.prices, self.options.model, model)
        cost = 0.0
        if price is None:
            meta["price_unknown"] = True
        else:
            cost = anthropic_cost(price, input_tokens=tokens_in, output_tokens=tokens_out,
                                  cache_write_tokens=cache_write, cache_read_tokens=cache_read)
            if batch is not None:
                cost *= BATCH_DISCOUNT
        return EvalObservation(
            content="".join(texts), tool_calls=tuple(calls), duration_ms=round(elapsed_ms),
            tokens_input=tokens_in + cache_write + cache_read, tokens_output=tokens_out,
            cost_usd=round(cost, 9), meta=meta, trace=trace)


def _tool_uses(data: dict[str, Any]) -> list[Call]:
    """The tool calls a response asks to be answered (its `tool_use` blocks)."""
    return [(str(b.get("id", "")), str(b.get("name", "")),
             b["input"] if isinstance(b.get("input"), dict) else {})
            for b in data.get("content") or []
            if isinstance(b, dict) and b.get("type") == "tool_use"]


def _follow(body: dict[str, Any], data: dict[str, Any],
            results: list[Result]) -> dict[str, Any]:
    """The next request: the answer as the assistant's turn, then its calls' results."""
    return {**body, "messages": [
        *body["messages"], {"role": "assistant", "content": data.get("content") or []},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": text,
             **({"is_error": True} if failed else {})}
            for call_id, text, failed in results]}]}


register(RuntimeKind(
    name="anthropic",
    spends_tokens=True,
    history="sent",
    options=AnthropicOptions,
    build=AnthropicRuntime,
    default_concurrency=8,
    summary="a Claude model via the Anthropic Messages API; skills offered as Claude Code does",
))
