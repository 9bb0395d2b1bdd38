"""The platforms' own schemas (vendored by check-jsonschema, read offline), a YAML 1.2
reader (GitHub's `on:` is a key, not YAML 1.1's `true`), and a loopback fake of GitHub's and
GitLab's comment APIs (`api`)."""

import io
import json
import re
import threading
from collections.abc import Iterator
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

import jsonschema
import pytest
from ruamel.yaml import YAML

SCHEMAS = {"github": "github-workflows.json", "gitlab": "gitlab-ci.json"}


@cache
def schema(platform: str) -> dict[str, Any]:
    vendor = resources.files("check_jsonschema.builtin_schemas.vendor")
    return json.loads((vendor / SCHEMAS[platform]).read_text(encoding="utf-8"))


def load(text: str) -> Any:
    """The workflow as the platform reads it (YAML 1.2), as plain dicts and lists."""
    return json.loads(json.dumps(YAML(typ="safe", pure=True).load(io.StringIO(text))))


def schema_errors(platform: str, document: Any) -> list[str]:
    validator = jsonschema.Draft7Validator(schema(platform))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(document)]


@pytest.fixture
def schema_check():
    """`schema_check(platform, text)`: the workflow parsed, and every schema error in it."""
    def check(platform: str, text: str) -> tuple[Any, list[str]]:
        document = load(text)
        return document, schema_errors(platform, document)
    return check


class FakeApi:
    """GitHub's issue comments and GitLab's merge-request notes, in memory."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.comments: list[dict[str, Any]] = [
            {"id": 1, "body": "LGTM, a person's comment", "html_url": "x", "web_url": "x"}]
        self.lock = threading.Lock()

    def handle(self, method: str, path: str, headers: dict[str, str],
               body: Any) -> tuple[int, Any]:
        with self.lock:
            self.requests.append({"method": method, "path": path, "headers": headers,
                                  "body": body})
            route = path.split("?")[0]
            listing = re.fullmatch(r"/repos/o/r/issues/7/comments"
                                   r"|/projects/42/merge_requests/3/notes", route)
            one = re.fullmatch(r"/repos/o/r/issues/comments/(\d+)"
                               r"|/projects/42/merge_requests/3/notes/(\d+)", route)
            if listing and method == "GET":
                return 200, self.comments
            if listing and method == "POST":
                item = {"id": 100 + len(self.comments), "body": body["body"],
                        "html_url": f"https://example.invalid/c/{100 + len(self.comments)}"}
                self.comments.append(item)
                return 201, item
            if one and method in ("PATCH", "PUT"):
                wanted = int(one.group(1) or one.group(2))
                for item in self.comments:
                    if item["id"] == wanted:
                        item["body"] = body["body"]
                        return 200, item
            return 404, {"message": "Not Found"}


@pytest.fixture
def api() -> Iterator[tuple[FakeApi, str]]:
    fake = FakeApi()

    class Handler(BaseHTTPRequestHandler):
        disable_nagle_algorithm = True

        def _serve(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(size) if size else b""
            status, answer = fake.handle(self.command, self.path,
                                         {k.lower(): v for k, v in self.headers.items()},
                                         json.loads(raw) if raw else None)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = _serve

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
