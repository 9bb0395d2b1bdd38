"""`gemini`: a subject behind the Gemini API, offered skills, through Google's `google-genai` SDK.

One request per trial (`generateContent`, through the SDK's async client, imported only when
a trial runs). Skills are offered as the `openai` runtime offers them: the `Skill` tool as a
function declaration (its JSON schema as `parameters_json_schema`, the name the SDK sends)
and the listing (the same system-reminder text) at the start of the first user turn. A
case's `history` becomes the prior `user`/`model` turns, an assistant's tool calls
`functionCall` parts answered by `functionResponse` parts. Every `functionCall` part of the
answer is a tool call of the observation.

The API key is read when a trial runs from the variable `api_key_env` names (default
`GEMINI_API_KEY`, else `GOOGLE_API_KEY` as the SDK does) and sent as `x-goog-api-key`; it is
never logged, traced or written. Retries (the SDK's are off), the rate limit and costs work
as in the `anthropic` runtime; `usageMetadata` gives the tokens (thinking tokens bill as
output, cached ones at the cache rate).
"""

import json
import os
import time
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import ConfigDict, Field

from ix._lazy import lazy
from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalObservation, ToolCall, Turn
from ix.runtimes._conversation import history_of, history_tools
from ix.runtimes._seeding import own_stream
from ix.runtimes._skills import openai_skill_tool, skill_listing, subject_skills
from ix.runtimes.anthropic import (
    ENV_NAME,
    LoopClient,
    api_key,
    as_dict,
    exchange,
    retry_after_s,
)
from ix.runtimes.prices import GEMINI, PriceOption, find_price, gemini_cost
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register
from ix.runtimes.sdks import require_sdk
from ix.runtimes.transport import (
    RateLimiter,
    RateLimitOptions,
    RetryOptions,
    Transient,
    status_error,
)

#: The SDK and its HTTP client: imported when a trial first needs them (the SDK in the
#: background as a run opens: `ix.runtimes.sdks`).
genai = lazy("google.genai")
httpx = lazy("httpx")

DEFAULT_KEY_ENV = "GEMINI_API_KEY"
FALLBACK_KEY_ENV = "GOOGLE_API_KEY"
GEMINI_API = "https://generativelanguage.googleapis.com"
API_VERSION = "v1beta"
_MODES = {"auto": "AUTO", "any": "ANY", "none": "NONE"}


class GeminiOptions(RetryOptions, RateLimitOptions):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key_env: str | None = Field(DEFAULT_KEY_ENV, pattern=ENV_NAME)
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    max_tokens: int = Field(1024, ge=1)
    system: str | None = None
    tool_choice: Literal["auto", "any", "none"] = "auto"
    prices: dict[str, PriceOption] = Field(default_factory=dict)
    request_timeout_s: float = Field(60.0, gt=0)


def key_env(options: GeminiOptions) -> str | None:
    """The variable the key is read from: `api_key_env`; for the default, GOOGLE_API_KEY when
    only that one is set (the SDK's two names)."""
    if options.api_key_env == DEFAULT_KEY_ENV and not os.environ.get(DEFAULT_KEY_ENV) \
            and os.environ.get(FALLBACK_KEY_ENV):
        return FALLBACK_KEY_ENV
    return options.api_key_env


def gemini_contents(history: Sequence[Turn], prompt: str,
                    listing: str | None) -> list[dict[str, Any]]:
    """`contents`: the history as `user`/`model` turns, then the prompt; the listing is the
    first user turn's first part. Consecutive user parts are one turn (roles alternate)."""
    contents: list[dict[str, Any]] = []

    def user(parts: list[dict[str, Any]]) -> None:
        if contents and contents[-1]["role"] == "user":
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": "user", "parts": parts})

    if listing:
        user([{"text": listing}])
    for turn in history:
        if turn.role == "user":
            user([{"text": turn.content}])
            continue
        parts: list[dict[str, Any]] = [{"text": turn.content}] if turn.content.strip() else []
        parts += [{"functionCall": {"name": c.name, "args": c.input}} for c in turn.tool_calls]
        contents.append({"role": "model", "parts": parts or [{"text": ""}]})
        if turn.tool_calls:
            user([{"functionResponse": {"name": c.name, "response": {"result": c.result}}}
                  for c in turn.tool_calls])
    user([{"text": prompt}])
    return contents


def skill_declaration() -> dict[str, Any]:
    """The `Skill` tool as a Gemini function declaration."""
    function = openai_skill_tool()["function"]
    return {"name": function["name"], "description": function["description"],
            "parameters_json_schema": function["parameters"]}


class GeminiClient:
    """The SDK's async client over our own httpx client (one transport, whatever else is
    installed), closed together at the end of the event loop (`LoopClient`)."""

    def __init__(self, key: str, options: GeminiOptions):
        self.base_url = (options.base_url or GEMINI_API).rstrip("/")
        self.http = httpx.AsyncClient(timeout=options.request_timeout_s)
        http_options = genai.types.HttpOptions(
            base_url=options.base_url, api_version=API_VERSION,
            timeout=int(options.request_timeout_s * 1000), httpx_async_client=self.http)
        self.sdk = genai.Client(api_key=key, vertexai=False, http_options=http_options)

    async def close(self) -> None:
        await self.sdk.aio.aclose()
        await self.http.aclose()


class GeminiRuntime:
    """Sends each case's prompt to a Gemini model with the subject's skills offered."""

    def __init__(self, options: GeminiOptions, context: RuntimeContext):
        try:
            require_sdk("google.genai", "gemini")
        except ModuleNotFoundError:  # not even its namespace package, `google`
            raise ConfigError("the 'gemini' runtime needs the google.genai package: "
                              "pip install 'ix-lab[gemini]'", field="runtime.kind") from None
        self.options = options
        self.limiter = RateLimiter(options.requests_per_minute, options.tokens_per_minute)
        self.client = LoopClient(lambda key: GeminiClient(key, options))

    # --- the request ----------------------------------------------------------------------

    def request_body(self, subject: Subject, prompt: str,
                     history: Sequence[Turn] = ()) -> dict[str, Any]:
        """The JSON body sent for `prompt` after `history` (what the trace records; no
        headers, no key)."""
        opts = self.options
        skills = subject_skills(subject.config)
        body: dict[str, Any] = {"contents": gemini_contents(history, prompt,
                                                            skill_listing(skills))}
        if opts.system is not None:
            body["systemInstruction"] = {"parts": [{"text": opts.system}]}
        declarations = ([skill_declaration()] if skills else []) + [
            {"name": name, "description": "A tool used earlier in this conversation.",
             "parameters_json_schema": {"type": "object"}} for name in history_tools(history)]
        if declarations:
            body["tools"] = [{"functionDeclarations": declarations}]
        if skills:
            body["toolConfig"] = {"functionCallingConfig": {"mode": _MODES[opts.tool_choice]}}
        generation: dict[str, Any] = {"maxOutputTokens": opts.max_tokens}
        if opts.temperature is not None:
            generation["temperature"] = opts.temperature
        body["generationConfig"] = generation
        return body

    async def _send(self, client: GeminiClient,
                    body: dict[str, Any]) -> tuple[dict[str, Any], Any, float]:
        """One `generateContent` through the SDK (the raw response asked back), rate-limited,
        its failures mapped to ours: transient ones retried by the caller."""
        config = {"should_return_http_response": True, **body["generationConfig"],
                  **{k: v for k, v in body.items() if k not in ("contents", "generationConfig")}}
        await self.limiter.acquire()
        t0 = time.perf_counter()
        try:
            raw = await client.sdk.aio.models.generate_content(
                model=self.options.model, contents=body["contents"], config=config)
        except genai.errors.APIError as exc:
            headers = getattr(exc.response, "headers", None)
            raise status_error(exc.code, str(exc.message or exc)[:500],
                               retry_after_s(headers)) from None
        except httpx.TimeoutException:
            raise Transient("http_timeout", "no response within request_timeout_s="
                            f"{self.options.request_timeout_s:g}") from None
        except httpx.TransportError as exc:
            raise Transient("connection_error", f"{type(exc).__name__}: {exc}") from None
        elapsed_ms = (time.perf_counter() - t0) * 1000
        response = raw.sdk_http_response
        try:
            data = json.loads(response.body or "")
        except ValueError as exc:
            raise TrialError("bad_response", f"the response is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise TrialError("bad_response", "the response is not a JSON object")
        return data, response.headers, elapsed_ms

    # --- one trial ------------------------------------------------------------------------

    async def invoke(self, subject: Subject, stimulus: Any, *, seed: int = 0,
                     attempt: int = 0) -> EvalObservation:
        opts = self.options
        body = self.request_body(subject, stimulus.prompt, history_of(stimulus))
        skills = [n for n, _ in subject_skills(subject.config)]
        env = key_env(opts)
        key = api_key(env)
        client = await self.client.get(key)
        url = f"{client.base_url}/{API_VERSION}/models/{opts.model}:generateContent"
        data, headers, elapsed_ms, retries, trace = await exchange(
            lambda: self._send(client, body), url, body, opts,
            seed=own_stream(seed, subject.name), attempt=attempt,
            key=key if env is not None else None)
        return self.observation(data, headers, elapsed_ms, retries=retries, skills=skills,
                                trace=trace)

    def observation(self, data: dict[str, Any], headers: Any, elapsed_ms: float, *,
                    retries: int, skills: list[str],
                    trace: list[dict[str, Any]]) -> EvalObservation:
        """The observation of one response: its first candidate's text and function calls
        (thought summaries left out), `usageMetadata` priced."""
        candidates = data.get("candidates")
        candidate = as_dict(candidates[0]) if isinstance(candidates, list) and candidates \
            else {}
        texts: list[str] = []
        calls: list[ToolCall] = []
        for part in as_dict(candidate.get("content")).get("parts") or []:
            if not isinstance(part, dict) or part.get("thought"):
                continue
            if isinstance(part.get("text"), str):
                texts.append(part["text"])
            call = part.get("functionCall")
            if isinstance(call, dict):
                args = call.get("args")
                calls.append(ToolCall(name=str(call.get("name", "")),
                                      input=args if isinstance(args, dict) else {}))
        usage = as_dict(data.get("usageMetadata"))
        prompt_tokens = int(usage.get("promptTokenCount") or 0)
        output_tokens = int(usage.get("candidatesTokenCount") or 0) \
            + int(usage.get("thoughtsTokenCount") or 0)
        cached = int(usage.get("cachedContentTokenCount") or 0)
        self.limiter.spent(prompt_tokens + output_tokens)
        model = str(data.get("modelVersion") or self.options.model)
        meta: dict[str, Any] = {"model": model, "stop_reason": candidate.get("finishReason"),
                                "skills_offered": skills}
        if data.get("responseId"):
            meta["request_id"] = data["responseId"]
        if retries:
            meta["retries"] = retries
        if cached:
            meta["cached_tokens"] = cached
        if usage.get("thoughtsTokenCount"):
            meta["thoughts_tokens"] = int(usage["thoughtsTokenCount"])
        blocked = as_dict(data.get("promptFeedback")).get("blockReason")
        if blocked:
            meta["blocked"] = blocked
        if not usage:
            meta["usage_missing"] = True
        price = find_price(GEMINI, self.options.prices, self.options.model, model)
        cost = 0.0
        if price is None:
            meta["price_unknown"] = True
        else:
            cost = gemini_cost(price, prompt_tokens=prompt_tokens, output_tokens=output_tokens,
                               cached_tokens=cached)
        return EvalObservation(
            content="".join(texts), tool_calls=tuple(calls), duration_ms=round(elapsed_ms),
            tokens_input=prompt_tokens, tokens_output=output_tokens, cost_usd=round(cost, 9),
            meta=meta, trace=trace)


register(RuntimeKind(
    name="gemini",
    spends_tokens=True,
    history="sent",
    options=GeminiOptions,
    build=GeminiRuntime,
    default_concurrency=8,
    summary="a Gemini model via the Gemini API (google-genai SDK); skills offered as a Skill "
            "function declaration",
))
