"""What the secrets tests share: a loopback service that echoes every request header back,
and every file of a folder as searchable text (a pytest plugin: `echo_server`)."""

import gzip
import io
import json
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest


class EchoEverything(BaseHTTPRequestHandler):
    """Answers 200 with the request's headers as a JSON body, and each again as a response
    header `X-Echo-<name>`: a careless service echoing a key wherever it can."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps(dict(self.headers.items())).encode()
        self.send_response(200)
        for name, value in self.headers.items():
            self.send_header(f"X-Echo-{name}", value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def echo_server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), EchoEverything)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def every_text(root: Path) -> dict[str, str]:
    """Each file under `root` as text: its bytes, gzip and zip members opened, and a Parquet
    file's rows (read with DuckDB)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        data = p.read_bytes()
        texts = [data.decode("utf-8", "replace")]
        if data[:2] == b"\x1f\x8b":
            texts.append(gzip.decompress(data).decode("utf-8", "replace"))
        if zipfile.is_zipfile(io.BytesIO(data)):
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                texts += [z.read(n).decode("utf-8", "replace") for n in z.namelist()]
        if data[:4] == b"PAR1":
            import duckdb

            with duckdb.connect() as db:
                rows = db.execute("SELECT * FROM read_parquet(?)", [str(p)]).fetchall()
            texts.append(repr(rows))
        out[str(p.relative_to(root))] = "\n".join(texts)
    return out
