"""A local HTTP service whose latency follows a known distribution, for `load:` tests and
benchmarks/load_generator.py.

    python tests/engine/load_server.py --median-ms 100 --sigma 0.4 --seed 1

Each request sleeps a lognormal service time (median `--median-ms`, log-sd `--sigma`), drawn
from one seeded generator in arrival order, and answers 200 with the time it really spent
(from its request line, parsing and sleep included) in `X-Service-Ms` (and the body), so a
test can hold the latencies ix measured against what the service did, request by request.
`--error-every N` answers every Nth request 400 (a result the `http_status` sensor judges,
not a retried failure). The port is printed on stdout's first line; the server runs in a
process of its own, so ix's event loop never competes with it for the GIL. It stops when
its stdin closes.
"""

import argparse
import json
import math
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def lognormal_quantile(q: float, median_ms: float, sigma: float) -> float:
    """The true q-quantile of the service time (Φ⁻¹ by bisection: no scipy needed)."""
    lo, hi = -10.0, 10.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if 0.5 * math.erfc(-mid / math.sqrt(2)) < q:
            lo = mid
        else:
            hi = mid
    return median_ms * math.exp(sigma * (lo + hi) / 2)


def serve(median_ms: float, sigma: float, seed: int, error_every: int) -> ThreadingHTTPServer:
    rng = random.Random(seed)
    lock = threading.Lock()
    count = [0]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # as real servers do: with Nagle's algorithm a reply written in two pieces waits
        # for the client's delayed ACK (40 ms on Linux), which would be timed as latency
        disable_nagle_algorithm = True

        def log_message(self, *args: object) -> None:
            pass

        def parse_request(self) -> bool:
            self.t0 = time.perf_counter()  # the request line is in: the service starts
            return super().parse_request()

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            with lock:
                count[0] += 1
                n = count[0]
                want = median_ms * math.exp(sigma * rng.gauss(0.0, 1.0))
            time.sleep(want / 1000.0)
            slept = (time.perf_counter() - self.t0) * 1000.0
            status = 400 if error_every and n % error_every == 0 else 200
            body = json.dumps({"service_ms": slept, "n": n}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-Service-Ms", f"{slept:.4f}")
            self.send_header("Content-Length", str(len(body)))
            self._headers_buffer.append(b"\r\n" + body)  # headers and body: one write
            self.flush_headers()

        do_GET = do_POST = _handle

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 512  # a burst of new connections must not meet a full backlog

    return Server(("127.0.0.1", 0), Handler)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--median-ms", type=float, default=100.0)
    parser.add_argument("--sigma", type=float, default=0.4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--error-every", type=int, default=0)
    args = parser.parse_args()
    httpd = serve(args.median_ms, args.sigma, args.seed, args.error_every)
    print(httpd.server_address[1], flush=True)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    sys.stdin.read()  # until the parent closes it (or dies)
    httpd.shutdown()


if __name__ == "__main__":
    main()
