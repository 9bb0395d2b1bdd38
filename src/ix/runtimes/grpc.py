"""`grpc`: one unary gRPC call per trial (capability testing of services), as `http` sends one
request.

The method and its messages come from a `.proto` (compiled in process when the run is planned,
so a missing file, a method or a request field the `.proto` does not have is a configuration
error naming the option) or from the server's reflection (asked on the first trial). The
request is the `request` template rendered, read into the request message with protobuf's
JSON mapping; the reply, written back as JSON (the `.proto`'s field names, every field), is
the answer, and `response` paths may pick its text and the skills it routed to. Transient
statuses (UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED) are retried as http
retries a 503; any other non-OK status is a trial error at once. Metadata templates may read
the environment (`{{ env.NAME }}`): their values are never recorded.
"""

import asyncio
import json
import os
import re
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, field_validator, model_validator

from ix._lazy import lazy
from ix.domain.errors import ConfigError, TrialError
from ix.domain.model import Model
from ix.domain.redaction import SECRET_NAME, Redactor
from ix.domain.types import Subject
from ix.eval.json_path import JsonPath, parse_json_path, resolve_json_path
from ix.eval.models import EvalObservation, ToolCall
from ix.runtimes import _protos, _templates
from ix.runtimes._seeding import own_stream
from ix.runtimes._templates import TemplateStr
from ix.runtimes.http_pools import close_at_loop_end
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register
from ix.runtimes.transport import RateLimiter, RetryOptions, Transient, with_retries

if TYPE_CHECKING:
    import grpc
    from google.protobuf import json_format
else:
    grpc = lazy("grpc")  # on first use: ix starts as fast without grpc installed
    json_format = lazy("google.protobuf.json_format")

MIB = 1 << 20
_ENV_HINT = ("environment variables are available only in `metadata` templates of the grpc "
             "runtime ({{ env.NAME }})")
_SCHEME = re.compile(r"(dns|unix|unix-abstract|ipv4|ipv6|vsock|xds):\S+")
_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)"
                        r":(\d{1,5})")
_METHOD = re.compile(r"/?(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*/[A-Za-z_]\w*")
_METADATA_KEY = re.compile(r"[0-9a-z_.-]+")

#: Statuses worth another try, and the error kind when the tries run out (as http's 503,
#: timeout and 429); every other non-OK status ends the trial at once.
RETRIED = {"UNAVAILABLE": "connection_error", "DEADLINE_EXCEEDED": "deadline_exceeded",
           "RESOURCE_EXHAUSTED": "rate_limited", "ABORTED": "server_error"}
#: Statuses where the service failed (not the request); the others are `bad_request`.
SERVER_FAULTS = frozenset({"INTERNAL", "UNKNOWN", "DATA_LOSS", "CANCELLED"})


class ResponseOptions(Model):
    """Where in the reply's JSON the answer's text and its skills are (JSON paths)."""

    content: str | None = None
    skills: str | None = None

    @field_validator("content", "skills")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        if value is not None:
            parse_json_path(value)  # a ValueError names what is wrong
        return value


class GrpcOptions(RetryOptions):
    """`RetryOptions` (`retries`, `backoff_s`, `backoff_max_s`) plus the call and its limits."""

    target: Annotated[str, Field(min_length=1)]
    method: str
    proto: str | None = None
    import_paths: list[str] = Field(default_factory=list)
    reflection: bool = False
    request: Any = None  # a mapping whose strings are templates, or a template of JSON text
    response: ResponseOptions = Field(default_factory=ResponseOptions)
    metadata: dict[str, TemplateStr] = Field(default_factory=dict)
    timeout_s: float | None = Field(None, gt=0)
    tls: bool = False
    ca_file: str | None = None  # PEM roots to trust instead of the system's (with tls)
    max_output_bytes: int = Field(4 * MIB, ge=1)
    requests_per_minute: float | None = Field(None, gt=0)

    @field_validator("target")
    @classmethod
    def _target(cls, value: str) -> str:
        if _SCHEME.fullmatch(value):
            return value
        match = _HOST_PORT.fullmatch(value)
        if match is None or not 0 < int(match.group(2)) < 65536:
            raise ValueError(f"{value!r} is not a gRPC target: write host:port "
                             "(127.0.0.1:50051, [::1]:50051, api.example.com:443) or "
                             "unix:/path/to.sock, without http://")
        return value

    @field_validator("method")
    @classmethod
    def _method(cls, value: str) -> str:
        if not _METHOD.fullmatch(value):
            raise ValueError(f"{value!r} is not a method: write package.Service/Method")
        return value.lstrip("/")

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not _METADATA_KEY.fullmatch(name) or name.startswith("grpc-"):
                raise ValueError(f"{name!r} is not a metadata key gRPC sends: lower-case "
                                 "letters, digits, '-', '_', '.', not starting with 'grpc-'")
        return value

    @field_validator("request")
    @classmethod
    def _request(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, str | dict):
            raise ValueError("must be a mapping (the request message as JSON, its strings "
                             "templates) or a string (a template of its JSON text)")
        _templates.check_tree(value)
        return value

    @model_validator(mode="after")
    def _source(self) -> "GrpcOptions":
        if (self.proto is None) == (not self.reflection):
            raise ValueError("give `proto` (a .proto file that describes the method) or "
                             "`reflection: true` (ask the server), one of the two")
        if self.import_paths and self.proto is None:
            raise ValueError("`import_paths` go with `proto`")
        if self.ca_file is not None and not self.tls:
            raise ValueError("`ca_file` goes with `tls: true`")
        return self


class _Channel:
    """A grpc.aio channel, made in the running loop; closed with it (`close_at_loop_end`)."""

    def __init__(self, options: GrpcOptions, credentials: Any):
        settings = [("grpc.max_receive_message_length", options.max_output_bytes),
                    ("grpc.enable_retries", 0)]  # the retries are ix's, counted and logged
        self.channel = (grpc.aio.secure_channel(options.target, credentials, settings)
                        if credentials is not None
                        else grpc.aio.insecure_channel(options.target, settings))

    async def aclose(self) -> None:
        await self.channel.close()


class GrpcRuntime:
    """One unary call per trial; one channel and one rate limiter per runtime."""

    def __init__(self, options: GrpcOptions, context: RuntimeContext):
        self.options = options
        self._method: _protos.Method | None = None
        try:
            _protos.import_grpc()
        except _protos.ProtoError as exc:
            raise ConfigError(str(exc), field="runtime.kind") from None
        base = context.base_dir or Path.cwd()
        self._roots: bytes | None = None
        if options.ca_file is not None:
            try:
                self._roots = (base / options.ca_file).read_bytes()
            except OSError as exc:
                raise ConfigError(f"{str(base / options.ca_file)!r}: {exc.strerror}",
                                  field="runtime.ca_file") from None
        try:
            if options.proto is not None:
                protos = _protos.compile_proto(base / options.proto,
                                               [base / p for p in options.import_paths])
                self._method = self._checked(protos, "runtime")
        except _protos.ProtoError as exc:
            raise ConfigError(str(exc), field=exc.field or "runtime.proto") from None
        self._request = _templates.compile_tree(options.request, "request")
        self._metadata = {k: _templates.Template(v, f"metadata.{k}")
                          for k, v in options.metadata.items()}
        #: whether a case's history reaches the service (`ix.engine.plan` refuses it if not)
        self.reads_history = _templates.reads_history(
            [*self._metadata.values(), *_templates.templates_in(self._request)])
        # metadata named like a secret or reading the environment: redacted from messages
        # and from an answer that echoes it
        self._secret_keys = [k for k, v in options.metadata.items()
                             if _templates.env_names(v) or SECRET_NAME.search(k)]
        self._secret_env = sorted({n for v in options.metadata.values()
                                   for n in _templates.env_names(v)})
        self._paths: dict[str, JsonPath] = {
            k: parse_json_path(v) for k, v in (("content", options.response.content),
                                               ("skills", options.response.skills)) if v}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._channel: _Channel | None = None
        self._closer: AsyncGenerator[None, None] | None = None
        self._reflecting: asyncio.Lock | None = None
        self._limiter = RateLimiter(requests_per_minute=options.requests_per_minute)

    def _checked(self, protos: _protos.Protos, prefix: str) -> _protos.Method:
        """The method, its request template and response paths checked against `protos`;
        `ProtoError` naming the option (`prefix.method`, ...)."""
        opts = self.options
        try:
            method = _protos.find_method(protos, opts.method)
        except _protos.ProtoError as exc:
            raise _protos.ProtoError(str(exc), field=f"{prefix}.method") from None
        if isinstance(opts.request, dict):
            _protos.check_request(opts.request, method.input.DESCRIPTOR, f"{prefix}.request")
        for key in ("content", "skills"):
            path = getattr(opts.response, key)
            if path is not None:
                _protos.check_path(parse_json_path(path), method.output.DESCRIPTOR,
                                   f"{prefix}.response.{key}")
        return method

    async def _session(self) -> tuple[_Channel, RateLimiter]:
        loop = asyncio.get_running_loop()
        if self._channel is None or self._loop is not loop:
            self._loop, self._channel = loop, _Channel(self.options, self._credentials())
            self._limiter = RateLimiter(requests_per_minute=self.options.requests_per_minute)
            self._reflecting = asyncio.Lock()
            self._closer = close_at_loop_end(self._channel)
            await anext(self._closer)
        return self._channel, self._limiter

    async def prepare(self) -> None:
        """Make the channel now (a load test calls this before its first request)."""
        await self._session()

    async def aclose(self) -> None:
        """Close the channel now (it is also closed when the event loop ends)."""
        if self._closer is not None:
            closer, self._closer, self._channel = self._closer, None, None
            await closer.aclose()

    async def _resolved(self) -> _protos.Method:
        """The method: from the `.proto`, or asked of the server's reflection once."""
        if self._method is not None:
            return self._method
        assert self._reflecting is not None
        async with self._reflecting:
            if self._method is None:
                self._method = await asyncio.to_thread(self._reflect)
        return self._method

    def _credentials(self) -> Any:
        """TLS credentials (the system's roots, or `ca_file`'s); None: a plain channel."""
        return grpc.ssl_channel_credentials(self._roots) if self.options.tls else None

    def _reflect(self) -> _protos.Method:
        opts = self.options
        credentials = self._credentials()
        channel = (grpc.secure_channel(opts.target, credentials) if credentials is not None
                   else grpc.insecure_channel(opts.target))
        try:
            protos = _protos.reflected(channel)
            return self._checked(protos, "runtime")
        except grpc.RpcError as exc:
            code = exc.code().name if exc.code() is not None else "UNKNOWN"
            if code == "UNIMPLEMENTED":
                raise TrialError("unknown_method", f"{opts.target} offers no reflection "
                                 "service: give the runtime a `proto:`") from None
            raise _status_error(code, f"reflection at {opts.target}: {exc.details()}") \
                from None
        except _protos.ProtoError as exc:  # the server's messages, not the lab's options
            field = exc.field or "reflection"
            kind = "unknown_method" if field.endswith(".method") else "invalid_request"
            raise TrialError(kind, f"{field}: {exc}") from None
        finally:
            channel.close()

    def _render(self, subject: Subject, stimulus: Any, seed: int,
                attempt: int) -> tuple[Any, list[tuple[str, str | bytes]]]:
        ctx = _templates.context(subject, stimulus, env_hint=_ENV_HINT, seed=seed,
                                 attempt=attempt)
        request = _templates.render_tree(self._request, ctx)
        env_ctx = _templates.with_env(ctx)
        metadata: list[tuple[str, str | bytes]] = []
        for name, template in self._metadata.items():
            value = template.render(env_ctx)
            if name.endswith("-bin"):
                metadata.append((name, value.encode("utf-8")))
            elif all(" " <= c <= "~" for c in value):
                metadata.append((name, value))
            else:  # never show the value: it may hold a secret
                raise TrialError("invalid_header", f"metadata {name!r}: the rendered value "
                                 "holds characters gRPC metadata cannot carry (printable "
                                 "ASCII only; or name the key `…-bin`)")
        return request, metadata

    def _message(self, method: _protos.Method, request: Any) -> Any:
        message = method.input()
        try:
            if isinstance(request, str):
                json_format.Parse(request, message, descriptor_pool=method.pool)
            elif request is not None:
                json_format.ParseDict(request, message, descriptor_pool=method.pool)
        except json_format.ParseError as exc:
            raise TrialError("invalid_request", f"{method.path}: the request does not fit "
                             f"{method.input_name}: {exc}") from None
        return message

    async def invoke(
        self, subject: Subject, stimulus: Any, *, seed: int = 0, attempt: int = 0
    ) -> EvalObservation:
        request, metadata = self._render(subject, stimulus, seed, attempt)
        channel, limiter = await self._session()
        tries = 0

        async def once() -> EvalObservation:
            nonlocal tries
            tries += 1
            method = await self._resolved()
            message = self._message(method, request)
            await limiter.acquire()
            return await self._call(channel, method, message, metadata)

        secrets = [*(v for k, v in metadata if k in self._secret_keys and isinstance(v, str)),
                   *(os.environ.get(n) for n in self._secret_env)]
        # the retries' jitter: a stream of the subject's own (as http's)
        observation = await with_retries(once, self.options,
                                         seed=own_stream(seed, subject.name),
                                         attempt=attempt, secrets=secrets)
        if tries > 1:
            observation = observation.model_copy(
                update={"meta": {**(observation.meta or {}), "retries": tries - 1}})
        # a service that echoes its metadata back: this call's secrets, each whole, out
        return Redactor(secrets).tree(observation)

    async def _call(self, channel: _Channel, method: _protos.Method, message: Any,
                    metadata: list[tuple[str, str | bytes]]) -> EvalObservation:
        stub = channel.channel.unary_unary(method.path,
                                           request_serializer=_serialize,
                                           response_deserializer=method.output.FromString)
        t0 = time.perf_counter()
        call = stub(message, timeout=self.options.timeout_s, metadata=metadata or None)
        try:
            reply = await call
            replied = [*(await call.initial_metadata() or ()),
                       *(await call.trailing_metadata() or ())]
        except grpc.aio.AioRpcError as exc:
            code, details = exc.code().name, exc.details() or ""
            if code == "RESOURCE_EXHAUSTED" and "larger than max" in details:
                raise TrialError("reply_too_large", f"{method.path}: {details} (the runtime's "
                                 "max_output_bytes)") from None
            raise _status_error(code, f"{method.path}: {code}: {details}") from None
        duration_ms = int((time.perf_counter() - t0) * 1000)
        answer = json_format.MessageToDict(reply, preserving_proto_field_name=True,
                                           always_print_fields_with_no_presence=True,
                                           descriptor_pool=method.pool)
        body = json.dumps(answer, ensure_ascii=False)
        headers: dict[str, str] = {}
        for key, value in replied:
            if isinstance(value, str):
                headers[key] = f"{headers[key]}, {value}" if key in headers else value
        content = body
        if "content" in self._paths:
            picked = self._pick(answer, "content", method)
            content = picked if isinstance(picked, str) else json.dumps(picked,
                                                                        ensure_ascii=False)
        tool_calls: tuple[ToolCall, ...] = ()
        if "skills" in self._paths:
            tool_calls = _skill_calls(self._pick(answer, "skills", method), method)
        return EvalObservation(content=content, body=body, headers=headers,
                               tool_calls=tool_calls, duration_ms=duration_ms)

    def _pick(self, answer: Any, key: str, method: _protos.Method) -> Any:
        try:
            return resolve_json_path(answer, self._paths[key])
        except LookupError as exc:
            raise TrialError("bad_response", f"{method.path}: response.{key} "
                             f"({getattr(self.options.response, key)}): {exc}") from None


def _serialize(message: Any) -> bytes:
    data: bytes = message.SerializeToString()
    return data


def _skill_calls(value: Any, method: _protos.Method) -> tuple[ToolCall, ...]:
    """The skills a reply names, as the Skill tool calls the activation sensor reads: a string
    (empty: none), a list of strings, or null."""
    names = [] if value is None else [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise TrialError("bad_response", f"{method.path}: response.skills is "
                         f"{json.dumps(value)[:80]}, not a skill's name or a list of them")
    return tuple(ToolCall(name="Skill", input={"skill": n}) for n in names if n)


def _status_error(code: str, message: str) -> Exception:
    """The exception for a non-OK status: `Transient` if worth retrying, else final."""
    if code in RETRIED:
        return Transient(RETRIED[code], message)
    return TrialError("server_error" if code in SERVER_FAULTS else "bad_request", message)


register(RuntimeKind(
    name="grpc",
    history="template",
    options=GrpcOptions,
    build=GrpcRuntime,
    default_concurrency=16,
    summary="one unary gRPC call per trial (.proto or reflection; request templated)",
))
