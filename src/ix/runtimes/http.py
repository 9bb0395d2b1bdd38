"""`http`: one HTTP request per trial (capability testing of services and endpoints).

An HTTP status is a result, not an error: a 404 or a 400 comes back as an observation with
`status` set, for the `http_status` sensor to judge. Only transient failures (429, 5xx,
timeouts, refused or dropped connections) are retried, with backoff; when the retries run out
the trial is recorded as an error. Header templates may read environment variables
(`{{ env.NAME }}`), so secrets stay out of the lab; request header values are never recorded,
and a secret one echoed back (in the response's body or headers) is `[REDACTED]`.
"""

import asyncio
import codecs
import json
import os
import re
import time
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, field_validator

from ix._lazy import lazy
from ix.domain.errors import TrialError
from ix.domain.redaction import Redactor
from ix.domain.types import Subject
from ix.eval.models import EvalObservation
from ix.runtimes import _templates
from ix.runtimes._seeding import own_stream
from ix.runtimes._templates import TemplateStr
from ix.runtimes.http_pools import Pools, close_at_loop_end
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register
from ix.runtimes.transport import (
    SECRET_NAME,
    RateLimiter,
    RetryOptions,
    Transient,
    retry_after_header,
    status_error,
    with_retries,
)

if TYPE_CHECKING:
    import httpx
else:
    httpx = lazy("httpx")  # on first use: importing ix stays fast for runs that never need it

MIB = 1 << 20
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_ENV_HINT = ("environment variables are available only in `headers` templates of the http "
             "runtime ({{ env.NAME }})")
_SNIPPET = 300

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


class HttpOptions(RetryOptions):
    """`RetryOptions` (`retries`, `backoff_s`, `backoff_max_s`) plus the request and a limit."""

    method: Method = "POST"
    url: Annotated[TemplateStr, Field(min_length=1)]
    headers: dict[str, TemplateStr] = Field(default_factory=dict)
    body: Any = None  # a template string, or a mapping/list sent as JSON
    timeout_s: float | None = Field(None, gt=0)
    max_output_bytes: int = Field(MIB, ge=1)
    requests_per_minute: float | None = Field(None, gt=0)

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not _TOKEN.fullmatch(name):
                raise ValueError(f"{name!r} is not a valid HTTP header name")
        return value

    @field_validator("body")
    @classmethod
    def _body(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, str | dict | list):
            raise ValueError("must be a string (a template) or a mapping or list (sent as "
                             "JSON)")
        _templates.check_tree(value)
        return value

    @field_validator("method", mode="before")
    @classmethod
    def _method(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value


class HttpRuntime:
    """One request per trial; one connection pool and one rate limiter per runtime."""

    def __init__(self, options: HttpOptions, context: RuntimeContext):
        self.options = options
        self._url = _templates.Template(options.url, "url")
        self._headers = {k: _templates.Template(v, f"headers.{k}")
                         for k, v in options.headers.items()}
        self._json = options.body is not None and not isinstance(options.body, str)
        self._body = _templates.compile_tree(options.body, "body")
        #: whether a case's history reaches the service (`ix.engine.plan` refuses it if not)
        self.reads_history = _templates.reads_history(
            [self._url, *self._headers.values(), *_templates.templates_in(self._body)])
        self._has_content_type = any(k.lower() == "content-type" for k in options.headers)
        # Headers named like a secret or reading the environment: their values are redacted
        # from error messages and from an answer that echoes them.
        self._secret_headers = [k for k, v in options.headers.items()
                                if _templates.env_names(v) or SECRET_NAME.search(k)]
        self._secret_env = sorted({n for v in options.headers.values()
                                   for n in _templates.env_names(v)})
        # Made in the running loop on first use: each `ix run` runs in a fresh event loop.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pools: Pools | None = None
        self._closer: AsyncGenerator[None, None] | None = None
        self._limiter = RateLimiter(requests_per_minute=options.requests_per_minute)

    async def _session(self) -> tuple[Pools, RateLimiter]:
        loop = asyncio.get_running_loop()
        if self._pools is None or self._loop is not loop:
            timeout = httpx.Timeout(self.options.timeout_s)
            pools = Pools(lambda **kw: httpx.AsyncClient(timeout=timeout,
                                                         follow_redirects=False, **kw))
            pools.give(pools.take())  # the first pool now (httpx imported, the CA bundle read)
            self._loop, self._pools = loop, pools
            self._limiter = RateLimiter(requests_per_minute=self.options.requests_per_minute)
            # `asyncio.run` closes every open async generator as its loop ends
            # (`loop.shutdown_asyncgens`): one parked here closes the pools with the run.
            self._closer = close_at_loop_end(pools)
            await anext(self._closer)
        return self._pools, self._limiter

    async def prepare(self) -> None:
        """Import httpx and make the first pool now: a load test (`ix.engine.load_test`) calls this
        before its first request, so no request is timed with the set-up."""
        await self._session()

    async def aclose(self) -> None:
        """Close the connection pools now (they are also closed when the event loop ends)."""
        if self._closer is not None:
            closer, self._closer, self._pools = self._closer, None, None
            await closer.aclose()

    def _request(self, subject: Subject, stimulus: Any, seed: int = 0,
                 attempt: int = 0) -> tuple[str, dict[str, str], bytes]:
        ctx = _templates.context(subject, stimulus, env_hint=_ENV_HINT, seed=seed,
                                 attempt=attempt)
        url = self._url.render(ctx)
        header_ctx = _templates.with_env(ctx)
        headers = {}
        for name, template in self._headers.items():
            value = template.render(header_ctx)
            if any(c in value for c in "\r\n\0"):
                # Never show the value: it may hold a secret.
                raise TrialError("invalid_header", f"header {name!r}: the rendered value "
                                 "contains a line break or NUL")
            headers[name] = value
        content = b""
        if self._body is not None:
            rendered = _templates.render_tree(self._body, ctx)
            if self._json:
                content = json.dumps(rendered, ensure_ascii=False).encode("utf-8")
                if not self._has_content_type:
                    headers["Content-Type"] = "application/json"
            else:
                content = rendered.encode("utf-8")
        return url, headers, content

    async def invoke(
        self, subject: Subject, stimulus: Any, *, seed: int = 0, attempt: int = 0
    ) -> EvalObservation:
        url, headers, content = self._request(subject, stimulus, seed, attempt)
        pools, limiter = await self._session()
        opts = self.options
        tries = 0

        async def once() -> EvalObservation:
            nonlocal tries
            tries += 1
            await limiter.acquire()
            pool = pools.take()
            try:
                return await self._send(pools.clients[pool], url, headers, content)
            finally:
                pools.give(pool)

        secrets = [*(headers.get(k) for k in self._secret_headers),
                   *(os.environ.get(n) for n in self._secret_env)]
        # the retries' jitter: a stream of the subject's own, so that two subjects' retries
        # of one trial do not come back at the same moment
        observation = await with_retries(once, opts, seed=own_stream(seed, subject.name),
                                         attempt=attempt, secrets=secrets)
        if tries > 1:
            observation = observation.model_copy(
                update={"meta": {**(observation.meta or {}), "retries": tries - 1}})
        # A server that echoes the request back, in its body or its headers: this request's
        # secrets, each whole, are taken out of the answer (sensors judge it). The run's
        # redactor then takes out every other secret it knows (ix.engine.pipeline).
        return Redactor(secrets).tree(observation)

    async def _send(self, client: "httpx.AsyncClient", url: str, headers: dict[str, str],
                    content: bytes) -> EvalObservation:
        method = self.options.method
        where = f"{method} {url}"
        t0 = time.perf_counter()
        try:
            request = client.build_request(method, url, headers=headers,
                                           content=content or None)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            raise TrialError("bad_url", f"{url!r}: {exc}") from None
        except (UnicodeEncodeError, httpx.LocalProtocolError):
            raise TrialError("invalid_header", "a rendered header value cannot be sent "
                             "in HTTP (non-ASCII or control characters)") from None
        try:
            response = await client.send(request, stream=True)
            try:
                if response.status_code == 429 or response.status_code >= 500:
                    snippet = (await _read_capped(response, _SNIPPET))[0]
                    raise _transient(response, _text(snippet, response, cut=True))
                data, total = await _read_capped(response, self.options.max_output_bytes)
            finally:
                await response.aclose()
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            raise TrialError("bad_url", f"{url!r}: {exc}") from None
        except httpx.LocalProtocolError:
            raise TrialError("invalid_request", f"{where}: the request could not be sent "
                             "(invalid header or body)") from None
        except httpx.TimeoutException as exc:
            raise Transient("http_timeout", f"{where}: timed out ({type(exc).__name__})") \
                from None
        except httpx.DecodingError as exc:
            raise TrialError("decoding_error", f"{where}: {exc}") from None
        except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError) as exc:
            raise Transient("connection_error", f"{where}: {exc or type(exc).__name__}") \
                from None
        duration_ms = int((time.perf_counter() - t0) * 1000)
        limit = self.options.max_output_bytes
        body = _text(data, response, cut=total > limit)
        response_headers: dict[str, str] = {}
        for name, value in response.headers.multi_items():
            name = name.lower()
            response_headers[name] = (f"{response_headers[name]}, {value}"
                                      if name in response_headers else value)
        meta = {"truncated": True, "max_output_bytes": limit} if total > limit else None
        return EvalObservation(content=body, status=response.status_code,
                               headers=response_headers, body=body, duration_ms=duration_ms,
                               meta=meta)


def _transient(response: "httpx.Response", snippet: str) -> Exception:
    return status_error(response.status_code, snippet.strip() or response.reason_phrase,
                        retry_after_header(response.headers.get("retry-after")))


async def _read_capped(response: "httpx.Response", limit: int) -> tuple[bytes, int]:
    """Up to `limit` bytes of the (decompressed) body and how many there were, up to limit+1:
    reading stops as soon as the body is known to be longer."""
    kept = bytearray()
    async for chunk in response.aiter_bytes():
        kept += chunk
        if len(kept) > limit:
            return bytes(kept[:limit]), len(kept)
    return bytes(kept), len(kept)


def _text(data: bytes, response: "httpx.Response", *, cut: bool) -> str:
    encoding = response.charset_encoding or "utf-8"
    try:
        decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    except LookupError:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return decoder.decode(data, final=not cut)


register(RuntimeKind(
    name="http",
    history="template",
    options=HttpOptions,
    build=HttpRuntime,
    default_concurrency=16,
    summary="one HTTP request per trial (url/headers/body templated); status is a result",
))
