"""A local S3 (moto's server on 127.0.0.1) for the sync tests, a bucket per test, and a proxy
in front of it that can stall the wire to interrupt a transfer at a known point."""

import http.client
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sync_support import ACCESS_KEY, S3, SECRET_KEY, StallingProxy


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> S3:
    """A fresh bucket; this process's environment points at it too (for in-process use)."""
    import boto3

    bucket = f"ix-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1",
                 aws_access_key_id=ACCESS_KEY,
                 aws_secret_access_key=SECRET_KEY).create_bucket(Bucket=bucket)
    store = S3(moto_endpoint, bucket)
    for key, value in store.env().items():
        monkeypatch.setenv(key, value)
    return store


@pytest.fixture
def stalling_proxy(moto_endpoint: str) -> Iterator[type]:
    """A factory: `stalling_proxy(marker=("PUT", "/trials/"), stall_after=1)`."""
    servers: list[tuple[ThreadingHTTPServer, StallingProxy]] = []

    def make(marker: tuple[str, str], stall_after: int) -> StallingProxy:
        state = StallingProxy(moto_endpoint, marker, stall_after)
        target = moto_endpoint.removeprefix("http://")
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                matches = self.command == state.marker[0] and state.marker[1] in self.path
                if matches:
                    with lock:
                        stall = state.answered >= state.stall_after
                    if stall:
                        state.stalled.set()
                        state.release.wait(60)
                        self.close_connection = True
                        return
                conn = http.client.HTTPConnection(target, timeout=60)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("expect", "connection")}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()
                if matches:
                    with lock:
                        state.answered += 1

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        state.url = f"http://127.0.0.1:{server.server_address[1]}"
        servers.append((server, state))
        return state

    yield make  # type: ignore[misc]
    for server, state in servers:
        state.release.set()
        server.shutdown()
        server.server_close()
