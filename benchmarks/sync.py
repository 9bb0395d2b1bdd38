"""`ix sync` of 1,000,000 trial lines to a local S3: seconds to push, to pull, and to do each
again when nothing is new.

    .venv/bin/python benchmarks/sync.py [--cases 1000] [--trials 500] [--subjects 2]

Writes one experiment's trials.jsonl of ~1,010,000 realistic lines (the generator of
benchmarks/query_1m.py: 1% errored, 1% retried), starts moto's S3 server on 127.0.0.1 in this
process, then times whole `ix sync push` and `ix sync pull` commands (each in a fresh process)
into an empty lab; the pull includes rebuilding the query index. Needs ~1.5 GB of disk and
~3 GB of memory (moto keeps the objects in memory).
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from query_1m import write_cases, write_lines

IX = str(Path(sys.executable).parent / "ix")


def timed(args: list[str], env: dict[str, str]) -> tuple[float, dict[str, object]]:
    began = time.perf_counter()
    done = subprocess.run([IX, *args, "--json"], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    if done.returncode:
        sys.exit(f"{' '.join(args)} failed:\n{done.stderr}")
    return seconds, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--subjects", type=int, default=2)
    args = parser.parse_args()

    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request on stderr

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IX_", "AWS_"))}
    env.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
               AWS_ENDPOINT_URL=endpoint, AWS_DEFAULT_REGION="us-east-1",
               AWS_EC2_METADATA_DISABLED="true", NO_COLOR="1")
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                 aws_access_key_id="bench", aws_secret_access_key="bench"
                 ).create_bucket(Bucket="bench")
    url = "s3://bench/lab"
    try:
        with tempfile.TemporaryDirectory(prefix="ix-sync-bench-") as tmp:
            source, target = Path(tmp) / "source", Path(tmp) / "target"
            exp = source / "big"
            write_cases(exp, args.cases)
            (exp / "experiment.yaml").write_text(
                "name: big\nskill: t\nruntime: {kind: mock}\nsubjects:\n"
                + "".join(f"  - name: s{i}\n" for i in range(args.subjects)))
            log = exp / "results" / "trials.jsonl"
            log.parent.mkdir(parents=True)
            lines = write_lines(log, "20261126T100000Z-000aaa",
                                [f"s{i}" for i in range(args.subjects)], args.cases,
                                args.trials, 0, random.Random(7))
            size = log.stat().st_size
            print(f"trial log: {lines:,} lines, {size / 1e6:.0f} MB")
            target.mkdir()
            push_s, pushed = timed(["sync", "push", url, "--lab", str(source)], env)
            print(f"push:       {push_s:6.1f} s  ({pushed['trials']:,} trial lines, "
                  f"{pushed['objects']:,} objects)")
            again_s, _ = timed(["sync", "push", url, "--lab", str(source)], env)
            print(f"push again: {again_s:6.1f} s  (nothing new: reads the segments back)")
            pull_s, pulled = timed(["sync", "pull", url, "--lab", str(target)], env)
            print(f"pull:       {pull_s:6.1f} s  ({pulled['trials']:,} trial lines appended, "
                  "index rebuilt)")
            again_s, _ = timed(["sync", "pull", url, "--lab", str(target)], env)
            print(f"pull again: {again_s:6.1f} s  (nothing new)")
            assert pulled["trials"] == pushed["trials"] == lines
    finally:
        server.stop()


if __name__ == "__main__":
    main()
