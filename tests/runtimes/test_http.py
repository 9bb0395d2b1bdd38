"""The `http` runtime against a real HTTP server on 127.0.0.1 with scripted responses."""

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalCase
from ix.runtimes import RuntimeContext, build_runtime
from ix.runtimes.transport import RateLimiter

SUBJECT = Subject(name="svc", config={"model": "v2"})
FAST = {"backoff_s": 0.001, "backoff_max_s": 0.01}


@dataclass
class Reply:
    status: int = 200
    body: bytes | str = b"ok"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class Server:
    """Replies to each path from its script: one reply after another, the last one repeated."""

    def __init__(self) -> None:
        self.scripts: dict[str, list[Reply]] = {}
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?")[0]
                with server.lock:
                    server.seen.append(Seen(self.command, self.path,
                                            {k.lower(): v for k, v in self.headers.items()},
                                            body))
                    script = server.scripts.get(path) or [Reply(404, b"no such path")]
                    reply = script.pop(0) if len(script) > 1 else script[0]
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                data = reply.body.encode() if isinstance(reply.body, str) else reply.body
                self.send_response(reply.status)
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    def script(self, path: str, *replies: Reply) -> str:
        self.scripts[path] = list(replies)
        return self.url + path

    def hits(self, path: str) -> int:
        return sum(1 for s in self.seen if s.path.split("?")[0] == path)

    def wait_hits(self, path: str, n: int, timeout_s: float = 10.0) -> int:
        """The hits on `path` once there are `n` (or the deadline passed): a client that gave
        up may return before the server's thread has read its request."""
        deadline = time.monotonic() + timeout_s
        while self.hits(path) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.hits(path)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


def case(prompt: str = "hello", case_id: str = "c-1", **extra) -> EvalCase:
    return EvalCase(id=case_id, prompt=prompt, expectation="must_trigger", **extra)


def runtime(**options):
    return build_runtime({"kind": "http", **options}, RuntimeContext())


def invoke(rt, stimulus=None, *, attempt: int = 0):
    return asyncio.run(rt.invoke(SUBJECT, stimulus or case(), seed=7, attempt=attempt))


def test_templated_url_headers_and_json_body_reach_the_server(server, monkeypatch):
    monkeypatch.setenv("IX_TEST_TOKEN", "s3cret-token")
    server.script("/v1/ask/c-1", Reply(201, '{"answer": 42}',
                                       {"Content-Type": "application/json", "X-Thing": "a"}))
    rt = runtime(
        url=server.url + "/v1/ask/{{ case.id }}?lang={{ case.metadata.lang }}",
        headers={"Authorization": "Bearer {{ env.IX_TEST_TOKEN }}", "X-Subject":
                 "{{ subject.name }}"},
        body={"prompt": "{{ prompt }}", "n": 3, "flags": [True, None, "{{ case.tags[0] }}"],
              "meta": {"model": "{{ subject.model }}"}},
    )
    obs = invoke(rt, case('say "hi" & {bye}', metadata={"lang": "fr"}, tags=("t1",)))
    (seen,) = server.seen
    assert seen.method == "POST" and seen.path == "/v1/ask/c-1?lang=fr"
    assert seen.headers["authorization"] == "Bearer s3cret-token"
    assert seen.headers["x-subject"] == "svc"
    assert seen.headers["content-type"] == "application/json"
    assert json.loads(seen.body) == {"prompt": 'say "hi" & {bye}', "n": 3,
                                     "flags": [True, None, "t1"], "meta": {"model": "v2"}}
    assert obs.status == 201 and obs.body == '{"answer": 42}' and obs.content == obs.body
    assert obs.headers["content-type"] == "application/json" and obs.headers["x-thing"] == "a"
    assert all(k == k.lower() for k in obs.headers)
    assert obs.duration_ms >= 0
    assert "s3cret" not in json.dumps(obs.model_dump(mode="json"))


def test_a_string_body_is_sent_as_is_with_the_given_method(server):
    url = server.script("/raw", Reply(200, "fine"))
    rt = runtime(method="put", url=url, headers={"Content-Type": "text/plain"},
                 body="Q: {{ prompt }}\n")
    obs = invoke(rt, case("héllo"))
    (seen,) = server.seen
    assert seen.method == "PUT" and seen.body == "Q: héllo\n".encode()
    assert seen.headers["content-type"] == "text/plain"
    assert obs.status == 200 and obs.body == "fine"


def test_get_without_body(server):
    url = server.script("/g", Reply(200, "x"))
    obs = invoke(runtime(method="GET", url=url))
    assert server.seen[0].method == "GET" and server.seen[0].body == b""
    assert obs.status == 200


def test_429_then_200_is_retried_and_succeeds(server):
    url = server.script("/busy", Reply(429, "slow down", {"Retry-After": "0"}),
                        Reply(200, "done"))
    obs = invoke(runtime(url=url, **FAST))
    assert server.hits("/busy") == 2
    assert obs.status == 200 and obs.body == "done"
    assert obs.meta == {"retries": 1}


def test_other_4xx_are_results_not_errors_and_never_retried(server):
    url = server.script("/bad", Reply(400, '{"error": "bad input"}'))
    obs = invoke(runtime(url=url, **FAST))
    assert obs.status == 400 and obs.body == '{"error": "bad input"}'
    assert server.hits("/bad") == 1
    url = server.script("/gone", Reply(404, "nope"))
    assert invoke(runtime(method="GET", url=url, **FAST)).status == 404


def test_503_forever_is_an_error_after_the_configured_retries(server):
    url = server.script("/down", Reply(503, "maintenance"))
    with pytest.raises(TrialError) as info:
        invoke(runtime(url=url, retries=2, **FAST))
    assert info.value.kind == "server_error"
    assert "503" in info.value.message and "maintenance" in info.value.message
    assert "3 tries" in info.value.message
    assert server.hits("/down") == 3


def test_no_retries_means_one_try(server):
    url = server.script("/down", Reply(500, "boom"))
    with pytest.raises(TrialError):
        invoke(runtime(url=url, retries=0))
    assert server.hits("/down") == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_refused_is_transient_then_an_error():
    url = f"http://127.0.0.1:{_closed_port()}/x"
    t0 = time.perf_counter()
    with pytest.raises(TrialError) as info:
        invoke(runtime(url=url, retries=2, **FAST))
    assert info.value.kind == "connection_error"
    assert "3 tries" in info.value.message
    assert time.perf_counter() - t0 < 5


def test_a_request_timeout_is_transient(server):
    url = server.script("/slow", Reply(200, "late", delay_s=1.0))
    with pytest.raises(TrialError) as info:
        invoke(runtime(url=url, timeout_s=0.2, retries=1, **FAST))
    assert info.value.kind == "http_timeout"
    assert server.wait_hits("/slow", 2) == 2


def test_a_long_body_is_truncated(server):
    url = server.script("/big", Reply(200, "é" * 1000))
    obs = invoke(runtime(url=url, max_output_bytes=11))
    assert obs.body == "é" * 5  # 11 bytes: five characters and half of one, dropped
    assert obs.meta == {"truncated": True, "max_output_bytes": 11}


def test_invalid_utf8_in_a_body_is_replaced(server):
    url = server.script("/bin", Reply(200, b"ok \xff end"))
    assert invoke(runtime(url=url)).body == "ok \ufffd end"


def test_template_errors_and_env_outside_headers(server, monkeypatch):
    monkeypatch.setenv("IX_TEST_TOKEN", "tok")
    with pytest.raises(TrialError) as info:
        invoke(runtime(url=server.url + "/{{ case.metadata.nope }}"))
    assert info.value.kind == "template_error" and "url" in info.value.message
    with pytest.raises(TrialError) as info:
        invoke(runtime(url=server.url + "/?k={{ env.IX_TEST_TOKEN }}"))
    assert info.value.kind == "template_error" and "headers" in info.value.message
    with pytest.raises(TrialError) as info:
        invoke(runtime(url=server.url, headers={"X-Key": "{{ env.IX_SURELY_UNSET_42 }}"}))
    assert info.value.kind == "template_error" and "IX_SURELY_UNSET_42" in info.value.message
    assert server.seen == []


def test_a_header_value_that_breaks_http_is_refused_without_showing_it(server):
    rt = runtime(url=server.url + "/h", headers={"X-Prompt": "{{ prompt }}"})
    with pytest.raises(TrialError) as info:
        invoke(rt, case("line one\r\nX-Evil: injected"))
    assert info.value.kind == "invalid_header"
    assert "injected" not in info.value.message
    assert server.seen == []


def test_a_bad_url_is_an_error_not_retried():
    with pytest.raises(TrialError) as info:
        invoke(runtime(url="ftp://example.invalid/{{ case.id }}", **FAST))
    assert info.value.kind == "bad_url"


def test_one_client_per_event_loop_so_consecutive_runs_work(server):
    url = server.script("/again", Reply(200, "x"))
    rt = runtime(url=url)
    assert invoke(rt).status == 200
    assert invoke(rt).status == 200  # a fresh event loop, as each `ix run` has

    async def both():
        return await asyncio.gather(rt.invoke(SUBJECT, case()), rt.invoke(SUBJECT, case()))

    assert [o.status for o in asyncio.run(both())] == [200, 200]


def test_the_runtime_rate_limit_spaces_requests(server):
    url = server.script("/rl", Reply(200, "x"))
    rt = runtime(url=url, requests_per_minute=2)

    async def main():
        await rt.prepare()  # the pool and the limiter made before the clock starts
        rt._limiter.window_s = 0.4  # the one-minute window, shrunk to keep the test fast
        t0 = time.perf_counter()  # before the first request: the third waits a window after
        for _ in range(3):
            await rt.invoke(SUBJECT, case())
        return time.perf_counter() - t0

    assert asyncio.run(main()) >= 0.4
    assert server.hits("/rl") == 3


def test_rate_limiter_waits_for_the_window():
    limiter = RateLimiter(requests_per_minute=2, window_s=0.3)

    async def main():
        stamps = []
        t0 = time.perf_counter()
        for _ in range(3):
            await limiter.acquire()
            stamps.append(time.perf_counter() - t0)
        return stamps

    stamps = asyncio.run(main())
    assert stamps[1] < 0.1 and stamps[2] >= 0.28


@pytest.mark.parametrize("options,field", [
    ({}, "runtime.url"),
    ({"url": ""}, "runtime.url"),
    ({"url": "{{ x"}, "runtime.url"),
    ({"url": "http://x", "method": "FETCH"}, "runtime.method"),
    ({"url": "http://x", "headers": {"X": "{% for %}"}}, "runtime.headers.X"),
    ({"url": "http://x", "headers": {"Bad Name": "v"}}, "runtime.headers"),
    ({"url": "http://x", "body": 5}, "runtime.body"),
    ({"url": "http://x", "body": {"a": ["{{"]}}, "runtime.body"),
    ({"url": "http://x", "timeout_s": 0}, "runtime.timeout_s"),
    ({"url": "http://x", "retries": -1}, "runtime.retries"),
    ({"url": "http://x", "requests_per_minute": 0}, "runtime.requests_per_minute"),
    ({"url": "http://x", "proxy": "y"}, "runtime.proxy"),
])
def test_bad_options_name_the_field(options, field):
    with pytest.raises(ConfigError) as info:
        runtime(**options)
    assert info.value.field == field
